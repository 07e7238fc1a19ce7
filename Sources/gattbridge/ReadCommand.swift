import ArgumentParser
import BlueZ
import BridgeTools
import Codecs
import Logging

struct ReadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Read one characteristic value and print it, decoded, alone on one line."
    )

    @OptionGroup var bluetooth: BluetoothOptions
    @OptionGroup var device: DeviceOptions

    @Argument(help: "Device address, AA:BB:CC:DD:EE:FF.", transform: AddressArgument.parse)
    var address: AddressArgument

    @Argument(help: ArgumentHelp("Characteristic UUID (2a19, 128-bit), optionally SERVICE/CHAR.", valueName: "char"), transform: CharacteristicArgument.parse)
    var characteristic: CharacteristicArgument

    @Option(help: ArgumentHelp("How to decode the value.", valueName: "codec"))
    var codec: CodecKind = .hex

    func run() async throws {
        bluetooth.bootstrapLogging()
        let codec = try Codec(self.codec)
        let context = "read \(address) \(characteristic)"
        let payload = try await BlueZSession.withCharacteristic(
            bluetooth, device, address: address.address, characteristic: characteristic,
            logger: Logger(label: "gattbridge.read")
        ) { session, _, info async throws(CLIFailure) -> String in
            let bytes: [UInt8]
            do throws(BlueZError) {
                bytes = try await session.client.readValue(characteristic: info.path)
            } catch {
                throw CLIFailure(error, context: context, device: address.address)
            }
            do throws(CodecError) {
                return try codec.decode(bytes)
            } catch {
                throw CLIFailure(ExitStatus.dataError,
                                 "\(context): codec \(codec.kind) cannot decode \(ValuePresentation.hex(bytes)): \(error.message)")
            }
        }.value
        Terminal.out(payload + "\n")
    }
}
