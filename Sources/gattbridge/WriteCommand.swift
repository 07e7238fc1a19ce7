import ArgumentParser
import BlueZ
import BridgeTools
import Codecs
import Logging

struct WriteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write",
        abstract: "Write one value to a characteristic.",
        discussion: """
            VALUE is encoded by the codec first; a value it rejects ends the command with exit code 65 before \
            anything connects. With --codec text the delimiter is appended and the bytes are split to fit the MTU \
            (MTU − 3 bytes a piece), each piece written in order.
            """
    )

    @OptionGroup var bluetooth: BluetoothOptions
    @OptionGroup var device: DeviceOptions

    @Argument(help: "Device address, AA:BB:CC:DD:EE:FF.", transform: AddressArgument.parse)
    var address: AddressArgument

    @Argument(help: ArgumentHelp("Characteristic UUID (2a19, 128-bit), optionally SERVICE/CHAR.", valueName: "char"), transform: CharacteristicArgument.parse)
    var characteristic: CharacteristicArgument

    @Argument(help: "The value, in the codec's payload format (hex: 0a1b, spaces or colons allowed).")
    var value: String

    @Option(help: ArgumentHelp("How to encode VALUE (not battery_level or heart_rate_measurement).", valueName: "codec"))
    var codec: CodecKind = .hex

    @Option(help: "For --codec text: appended to VALUE (escapes \\n \\r \\t \\\\ understood; empty for none).")
    var delimiter: String = "\\n"

    @Flag(help: "Write without response (a write command) instead of a write request.")
    var withoutResponse = false

    func validate() throws {
        guard codec.canEncode else { throw ValidationError("codec \(codec) cannot encode values") }
    }

    func run() async throws {
        bluetooth.bootstrapLogging()
        let context = "write \(address) \(characteristic)"
        let codec = try Codec(self.codec)
        let bytes: [UInt8]
        do {
            bytes = try codec.encode(value)
        } catch {
            throw CLIFailure(ExitStatus.dataError, "\(context): codec \(codec.kind) rejects \(ValuePresentation.quoted(value)): \(error.message)")
        }
        let isText = codec.kind == .text
        let delimiter = Escapes.unescape(self.delimiter)
        let text = value
        let type: GattWriteType = withoutResponse ? .command : .request
        _ = try await BlueZSession.withCharacteristic(
            bluetooth, device, address: address.address, characteristic: characteristic,
            logger: Logger(label: "gattbridge.write")
        ) { session, _, info async throws(CLIFailure) in
            let chunks = isText ? textChunks(text, delimiter: delimiter, mtu: info.mtu) : [bytes]
            do throws(BlueZError) {
                for chunk in chunks {
                    try await session.client.writeValue(characteristic: info.path, chunk, type: type)
                }
            } catch {
                throw CLIFailure(error, context: context, device: address.address)
            }
        }
    }
}

/// Backslash escapes in option values, so a delimiter like CR LF can be typed as "\r\n".
enum Escapes {
    static func unescape(_ text: String) -> String {
        var out = ""
        var escaping = false
        for character in text {
            if escaping {
                switch character {
                case "n": out.append("\n")
                case "r": out.append("\r")
                case "t": out.append("\t")
                case "0": out.append("\0")
                default: out.append(character)
                }
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                out.append(character)
            }
        }
        if escaping { out.append("\\") }
        return out
    }
}
