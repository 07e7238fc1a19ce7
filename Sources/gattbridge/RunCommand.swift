import ArgumentParser
import Bridge
import Config
import Logging
import Systemd
import UnixSignals

/// `gattbridge run`: the daemon (docs/configuration.md and docs/mqtt.md and docs/operating.md).
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the bridge daemon: keep the configured devices connected and bridge them to MQTT."
    )

    @Option(name: [.short, .long], help: "The config file.")
    var config: String = ConfigCheckCommand.defaultPath

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    func run() async throws {
        // Before anything else: a SIGHUP that arrives before this is trapped would kill the process (exit 129).
        let reloads = await UnixSignalsSequence(trapping: .sighup)
        SystemdLogHandler.bootstrap(logLevel: logLevel)
        let logger = Logger(label: "gattbridge")

        let bridgeConfig: BridgeConfig
        do throws(ConfigErrors) {
            let loaded = try ConfigLoader.loadWithDropIns(path: config)
            bridgeConfig = loaded.config
            // A broken drop-in costs its own device only (docs/bridge-api.md).
            for issue in loaded.skipped { logger.error("\(issue); device skipped") }
        } catch {
            Terminal.err(error.issues.map { "\($0)\n" }.joined())
            throw ExitCode(ExitStatus.configError)
        }
        for warning in bridgeConfig.warnings(file: config) { logger.warning("\(warning)") }

        let daemon = BridgeDaemon(configPath: config, config: bridgeConfig, logger: logger, reloadSignals: reloads,
                                  version: GattBridgeVersion.string)
        do {
            try await daemon.run()
        } catch let error as BridgeDaemon.StartupError {
            throw CLIFailure(ExitStatus.unavailable, error.description)
        }
    }
}
