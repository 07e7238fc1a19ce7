import ArgumentParser
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
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be a positive number of seconds") }
    }

    var duration: Duration { .milliseconds(Int64(timeout * 1000)) }
}
