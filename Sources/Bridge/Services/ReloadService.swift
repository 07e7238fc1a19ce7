import BridgeCoreLayer
import Config
import Logging
import MQTT
import ServiceLifecycle
import Systemd
import UnixSignals

/// SIGHUP: re-read the config and apply the difference; a bad one is reported (log and STATUS) and the running one
/// stays in force. systemd holds the unit in "reloading" from RELOADING=1 until the READY=1 that ends either path.
struct ReloadService: Service {
    let configPath: String
    let signals: UnixSignalsSequence
    let core: BridgeCore
    let mqtt: MQTTService
    let status: StatusReporter
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async {
        for await _ in signals.cancelOnGracefulShutdown() { await reload() }
    }

    private func reload() async {
        notifier.reloading()
        logger.notice("reloading \(configPath)")
        // Read before the files: bridge API changes the core installs after this are replayed onto what is read.
        let (old, generation) = core.running
        let new: BridgeConfig
        do {
            let loaded = try ConfigLoader.loadWithDropIns(path: configPath)
            // A broken drop-in costs its own device only (docs/bridge-api.md).
            for issue in loaded.skipped { logger.error("\(issue); device skipped") }
            new = loaded.config
        } catch {
            for issue in error.issues { logger.error("\(issue)") }
            logger.error("reload failed; keeping the running config")
            let more = error.issues.count > 1 ? " (+\(error.issues.count - 1) more)" : ""
            await status.reloadFailed((error.issues.first.map { "\($0)" } ?? "bad config") + more)
            notifier.ready()
            return
        }
        for warning in new.warnings(file: configPath) { logger.warning("\(warning)") }
        var replacement: MQTTClient?
        if new.mqtt != old.mqtt {
            do {
                replacement = try MQTTClient(configuration: MQTTConfiguration(settings: new.mqtt), logger: logger)
            } catch {
                logger.error("new MQTT settings rejected (\(error)); keeping the running client")
            }
        }
        if let replacement {
            logger.notice("MQTT settings changed; reconnecting")
            // Applied before the new client starts, so its first connect already sees the new topics.
            await mqtt.replace(with: replacement, old: old.mqtt) {
                await core.apply(new, basedOn: generation, mqttReplaced: true)
                await core.clientReplaced(replacement)
            }
        } else {
            await core.apply(new, basedOn: generation)
        }
        await status.reloadSucceeded()
        logger.notice("reloaded: \(new.devices.count) device(s)")
        notifier.ready()
    }
}
