import ArgumentParser
import Glibc

/// The root command; `Entry` is the process entry point.
struct GattBridge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gattbridge",
        abstract: "Bridge Bluetooth LE peripherals to MQTT, and try them out from the shell.",
        version: GattBridgeVersion.string,
        subcommands: [
            RunCommand.self,
            ScanCommand.self,
            InspectCommand.self,
            ReadCommand.self,
            WriteCommand.self,
            ListenCommand.self,
            ConfigCommand.self,
            ESPHomeKeyCommand.self,
            DevicesCommand.self,
            PairCommand.self,
            UnpairCommand.self,
            AdvertsCommand.self,
        ]
    )

    /// ArgumentParser's own `main` prints usage errors over several lines; here every error is one line on stderr
    /// ("gattbridge: …") with the docs/cli.md exit code, while help and version still go to stdout.
    static func execute() async -> Never {
        let code: Int32
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            code = ExitStatus.success
        } catch let failure as CLIFailure {
            Terminal.error(failure.message)
            code = failure.code
        } catch {
            let exit = exitCode(for: error)
            if exit == .success {
                Terminal.out(fullMessage(for: error) + "\n")
            } else {
                let lines = message(for: error).split(whereSeparator: \.isNewline).map {
                    $0.trimmingPrefix("Error: ").trimmingPrefix(while: \.isWhitespace)
                }
                // ArgumentParser lists allowed values one per line ("  - hex"): one comma-separated list instead.
                let list = lines.filter { $0.hasPrefix("- ") }.map { $0.dropFirst(2) }
                var text = lines.filter { !$0.hasPrefix("- ") }.joined(separator: " ")
                if !list.isEmpty { text += " " + list.joined(separator: ", ") }
                if !text.isEmpty { Terminal.error(text + " (see --help)") }
            }
            code = exit.rawValue
        }
        Glibc.exit(code)
    }
}
