import BlueZ
import Bluetooth

/// Why a command stops early: the exit code and the one line printed to stderr (after "gattbridge: ").
struct CLIFailure: Error, Sendable, CustomStringConvertible {
    var code: Int32
    var message: String

    init(_ code: Int32, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A BlueZ failure while doing `context` ("read C0:FF:EE:00:00:01 2a19").
    init(_ error: BlueZError, context: String) {
        self.init(ExitStatus.code(for: error), "\(context): \(ExitStatus.describe(error))")
    }

    /// The same for an operation on one device, with the hint to pair it when BlueZ says the link is not secure enough.
    init(_ error: BlueZError, context: String, device: BluetoothAddress) {
        self.init(error, context: context)
        if let advice = error.pairingAdvice(address: device) { message += "; \(advice)" }
    }

    static func usage(_ message: String) -> CLIFailure { CLIFailure(ExitStatus.usage, message) }

    var description: String { message }
}
