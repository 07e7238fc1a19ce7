import ArgumentParser
import Config
import Logging
import Systemd

/// Options of every command that talks to Bluetooth.
struct BluetoothOptions: ParsableArguments {
    @Option(help: "Adapter to use, e.g. hci0 (default: the first powered adapter, else hci0).")
    var adapter: String?

    @Option(help: "Log level of the messages on stderr.")
    var logLevel: Logger.Level = .warning

    func bootstrapLogging() {
        SystemdLogHandler.bootstrap(logLevel: logLevel)
    }
}

/// Options of the commands that work on one device.
struct DeviceOptions: ParsableArguments {
    @Option(help: "Seconds to wait for each step: finding the device, connecting, resolving its services.")
    var timeout: Double = 10

    func validate() throws {
        _ = try secondsOption("--timeout", timeout)
    }

    /// `validate()` has refused every value `Seconds` does not take, so the fallback is never used.
    var duration: Duration { Seconds.duration(timeout) ?? .seconds(10) }
}

/// A seconds option as a `Duration`, or the usage error (exit 64) naming the option: NaN, infinities, 0, negative
/// and huge values (`1e300` used to overflow the conversion and kill the process) are refused by the same rule as
/// config durations.
func secondsOption(_ name: String, _ value: Double) throws -> Duration {
    guard let duration = Seconds.duration(value) else {
        throw ValidationError("\(name) must be \(Seconds.expectation), got \(value)")
    }
    return duration
}
