import ArgumentParser
import BlueZ
import BridgeTools
import Codecs
import Glibc
import Logging

struct ListenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Subscribe to a characteristic and print each notification, decoded, one per line.",
        discussion: """
            Runs until SIGINT/SIGTERM (exit 0) or until the device disconnects (exit 75). Values go to stdout, \
            status and errors to stderr. With --codec text, notifications are framed into lines; a partial line \
            is printed after 1 s without data.
            """
    )

    @OptionGroup var bluetooth: BluetoothOptions
    @OptionGroup var device: DeviceOptions

    @Argument(help: "Device address, AA:BB:CC:DD:EE:FF.", transform: AddressArgument.parse)
    var address: AddressArgument

    @Argument(help: ArgumentHelp("Characteristic UUID (2a37, 128-bit), optionally SERVICE/CHAR.", valueName: "char"), transform: CharacteristicArgument.parse)
    var characteristic: CharacteristicArgument

    @Option(help: ArgumentHelp("How to decode the value.", valueName: "codec"))
    var codec: CodecKind = .hex

    @Option(help: "For --codec text: the line delimiter (escapes \\n \\r \\t \\\\ understood; empty: one line per notification).")
    var delimiter: String = "\\n"

    @Flag(help: "Use StartNotify (values as D-Bus signals) even when AcquireNotify (a socket) is available.")
    var noAcquire = false

    func run() async throws {
        bluetooth.bootstrapLogging()
        // A closed stdout (`listen … | head -1`) ends the command through the failed write, not by killing it
        // before it can unsubscribe and disconnect.
        signal(SIGPIPE, SIG_IGN)
        let codec = try Codec(self.codec)
        let framer = codec.kind == .text ? TextFramer(delimiter: Escapes.unescape(delimiter)) : nil
        let context = "listen \(address) \(characteristic)"
        let preferAcquire = !noAcquire
        let result = try await BlueZSession.withCharacteristic(
            bluetooth, device, address: address.address, characteristic: characteristic,
            logger: Logger(label: "gattbridge.listen")
        ) { session, device, info async throws(CLIFailure) -> CLIFailure? in
            guard info.canNotify else {
                throw CLIFailure(ExitStatus.temporaryFailure,
                                 "\(context): the characteristic cannot notify or indicate (flags: \(info.flags.joined(separator: ", ")))")
            }
            let subscription: NotificationSubscription
            do throws(BlueZError) {
                subscription = try await session.client.subscribe(characteristic: info.path, preferAcquire: preferAcquire)
            } catch {
                throw CLIFailure(error, context: context, device: address.address)
            }
            Terminal.err(subscription.delivery == .fd ? "listening via AcquireNotify (fd)\n"
                                                      : "listening via StartNotify (signal)\n")
            let printer = NotificationPrinter(codec: codec, framer: framer, context: context)
            let end = await printer.run(subscription.values)
            await Task { await subscription.stop() }.value
            switch end {
            case .cancelled, .stdoutClosed:
                return nil
            case .streamEnded:
                let disconnected = await session.becomesDisconnected(device.info.path, within: .seconds(2))
                return CLIFailure(ExitStatus.temporaryFailure,
                                  disconnected ? "\(context): device disconnected" : "\(context): notifications ended")
            }
        }
        if let failure = result.value { throw failure }
    }
}

/// Prints notifications as they arrive; for text, frames them into lines and flushes a partial line after a
/// second of silence. Entirely event-driven: with nothing arriving it sleeps in the stream.
struct NotificationPrinter: Sendable {
    enum End { case cancelled, streamEnded, stdoutClosed }

    let codec: Codec
    var framer: TextFramer?
    let context: String
    static let flushAfter = Duration.seconds(1)

    private enum Input: Sendable {
        case value([UInt8])
        case ended
        case flush(UInt64)
    }

    func run(_ values: AsyncStream<[UInt8]>) async -> End {
        let (inputs, input) = AsyncStream<Input>.makeStream()
        let forwarder = Task {
            for await value in values { input.yield(.value(value)) }
            input.yield(.ended)
        }
        var framer = self.framer
        var flushTimer: Task<Void, Never>?
        var generation: UInt64 = 0
        defer {
            forwarder.cancel()
            flushTimer?.cancel()
            input.finish()
        }
        for await item in inputs {
            switch item {
            case .value(let bytes):
                guard var current = framer else {
                    guard emit(decode(bytes)) else { return .stdoutClosed }
                    continue
                }
                let lines = current.append(bytes)
                for line in lines {
                    guard emit(codec.mapLine(line)) else { return .stdoutClosed }
                }
                flushTimer?.cancel()
                flushTimer = nil
                if current.hasPending {
                    generation += 1
                    let armed = generation
                    flushTimer = Task {
                        do {
                            try await Task.sleep(for: Self.flushAfter)
                            input.yield(.flush(armed))
                        } catch {}
                    }
                }
                framer = current
            case .flush(let armed):
                guard armed == generation, var current = framer else { continue }
                if let partial = current.flush() {
                    guard emit(codec.mapLine(partial)) else { return .stdoutClosed }
                }
                framer = current
            case .ended:
                if var current = framer, let partial = current.flush() { _ = emit(codec.mapLine(partial)) }
                return .streamEnded
            }
        }
        if var current = framer, let partial = current.flush() { _ = emit(codec.mapLine(partial)) }
        return .cancelled
    }

    private func decode(_ bytes: [UInt8]) -> String? {
        do {
            return try codec.decode(bytes)
        } catch {
            // One bad notification is that message's problem alone (docs/configuration.md#codecs): report it and keep listening.
            Terminal.error("\(context): codec \(codec.kind) cannot decode \(ValuePresentation.hex(bytes)): \(error.message)")
            return nil
        }
    }

    /// False when stdout is gone.
    private func emit(_ line: String?) -> Bool {
        guard let line else { return true }
        return Terminal.out(line + "\n")
    }
}
