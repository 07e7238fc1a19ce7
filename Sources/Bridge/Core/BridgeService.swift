import BlueZ
import Config
import DBus
import Logging
import MQTT
import ServiceLifecycle
import Synchronization
import Systemd
import UnixSignals

/// `gattbridge run`: wires the D-Bus connection, the BlueZ client, the broker link and the core together, tells
/// systemd how it is doing, reloads on SIGHUP and shuts down cleanly on SIGTERM (through the ServiceGroup).
public struct BridgeService: Service {
    public enum StartupError: Error, CustomStringConvertible {
        case bus(String), mqtt(String)
        public var description: String {
            switch self {
            case .bus(let message): "cannot connect to the D-Bus system bus: \(message)"
            case .mqtt(let message): "cannot set up the MQTT client: \(message)"
            }
        }
    }

    let configPath: String
    let initialConfig: BridgeConfig
    let logger: Logger
    let notifier: SystemdNotifier
    let reloadSignals: UnixSignalsSequence
    let version: String

    public init(configPath: String, config: BridgeConfig, logger: Logger, notifier: SystemdNotifier = SystemdNotifier(),
                reloadSignals: UnixSignalsSequence, version: String) {
        self.configPath = configPath
        self.initialConfig = config
        self.logger = logger
        self.notifier = notifier
        self.reloadSignals = reloadSignals
        self.version = version
    }

    public func run() async throws {
        let bus: DBusConnection
        do {
            bus = try await DBusConnection.system()
        } catch {
            throw StartupError.bus(error.description)
        }
        let bluez: BlueZClient
        do {
            bluez = try await BlueZClient.connect(bus, logger: logger)
        } catch {
            throw StartupError.bus(error.description)
        }
        let bluezEvents = bluez.events()
        let link: MQTTLink
        do {
            link = MQTTLink(try MQTTClient(configuration: MQTTConfiguration(settings: initialConfig.mqtt), logger: logger))
        } catch {
            throw StartupError.mqtt(error.description)
        }
        let (statusFeed, statusTrigger) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let core = BridgeCore(config: initialConfig, bluez: bluez, mqtt: link, logger: logger,
                              statusChanged: { statusTrigger.yield() })
        let status = StatusReporter(notifier: notifier, core: core, mqtt: link, bluez: bluez)
        let pumps = MQTTPumps(core: core, statusTrigger: statusTrigger)
        // Before the client starts: the first broker connect must already reach the feature.
        await core.add(HomeAssistantFeature(version: version, logger: logger))
        pumps.attach(link.client)
        link.client.start()
        await core.start()
        await status.refresh()
        notifier.ready()
        logger.notice("gattbridge \(version) running with \(initialConfig.devices.count) device(s)",
                      metadata: ["config": "\(configPath)"])

        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in bluezEvents {
                    await core.handle(event)
                    if case .bluezVanished = event { statusTrigger.yield() }
                    if case .bluezAppeared = event { statusTrigger.yield() }
                }
            }
            group.addTask {
                for await _ in statusFeed { await status.refresh() }
            }
            if let interval = notifier.watchdogInterval {
                let watchdog = WatchdogLoop(interval: interval, health: HealthCheck(bus: bus, mqtt: link, core: core),
                                            notifier: notifier, logger: logger)
                group.addTask { await watchdog.run() }
            }
            group.addTask {
                for await _ in reloadSignals {
                    await reload(core: core, link: link, pumps: pumps, status: status)
                }
            }

            try? await gracefulShutdown()
            notifier.stopping()
            notifier.status("stopping")
            logger.notice("stopping")
            if await !finish(within: .seconds(3), { await core.stop() }) {
                logger.warning("devices did not disconnect in time")
            }
            let baseTopic = await core.config.mqtt.baseTopic
            await link.client.shutdown(finalMessages: [offline(baseTopic)], timeout: .milliseconds(1500))
            pumps.detach()
            statusTrigger.finish()
            await bluez.shutdown()
            group.cancelAll()
        }
        bus.close()
    }

    private func offline(_ baseTopic: String) -> MQTTMessage {
        MQTTMessage(topic: BridgeTopics(base: baseTopic).bridgeState, string: "offline", qos: .atLeastOnce, retain: true)
    }

    /// SIGHUP: re-read the config and apply the difference; a bad one is reported (log and STATUS) and the running one
    /// stays in force. systemd holds the unit in "reloading" from RELOADING=1 until the READY=1 that ends either path.
    private func reload(core: BridgeCore, link: MQTTLink, pumps: MQTTPumps, status: StatusReporter) async {
        notifier.reloading()
        logger.notice("reloading \(configPath)")
        let new: BridgeConfig
        do {
            new = try ConfigLoader.load(path: configPath)
        } catch {
            for issue in error.issues { logger.error("\(issue)") }
            logger.error("reload failed; keeping the running config")
            let more = error.issues.count > 1 ? " (+\(error.issues.count - 1) more)" : ""
            await status.reloadFailed((error.issues.first.map { "\($0)" } ?? "bad config") + more)
            notifier.ready()
            return
        }
        for warning in new.warnings(file: configPath) { logger.warning("\(warning)") }
        let old = await core.config
        var replacement: MQTTClient?
        if new.mqtt != old.mqtt {
            do {
                replacement = try MQTTClient(configuration: MQTTConfiguration(settings: new.mqtt), logger: logger)
            } catch {
                logger.error("new MQTT settings rejected (\(error)); keeping the running client")
            }
        }
        if let replacement {
            // The old client says goodbye (a clean disconnect sends no will) before the new one connects, so on a
            // shared broker and base topic the retained state ends `online`, never a late `offline`. Meanwhile the
            // sessions publish into the new client's offline buffer.
            logger.notice("MQTT settings changed; reconnecting")
            pumps.attach(replacement)
            let previous = link.swap(replacement)
            await previous.shutdown(finalMessages: [offline(old.mqtt.baseTopic)], timeout: .seconds(1))
        }
        // Applied before the new client starts, so its first connect already sees the new topics.
        await core.apply(new, mqttReplaced: replacement != nil)
        replacement?.start()
        await status.reloadSucceeded()
        logger.notice("reloaded: \(new.devices.count) device(s)")
        notifier.ready()
    }
}

/// Feeds one MQTT client's incoming messages and connection changes to the core; re-attached when a reload swaps the
/// client.
final class MQTTPumps: Sendable {
    private let core: BridgeCore
    private let statusTrigger: AsyncStream<Void>.Continuation
    private let tasks = Mutex<[Task<Void, Never>]>([])

    init(core: BridgeCore, statusTrigger: AsyncStream<Void>.Continuation) {
        self.core = core
        self.statusTrigger = statusTrigger
    }

    func attach(_ client: MQTTClient) {
        let core = self.core
        let trigger = statusTrigger
        let messages = Task {
            for await message in client.messages { await core.handle(message) }
        }
        let states = Task {
            for await state in client.connectionStates() {
                if state == .connected { await core.brokerConnected() }
                trigger.yield()
            }
        }
        let old = tasks.withLock { list in
            defer { list = [messages, states] }
            return list
        }
        for task in old { task.cancel() }
    }

    func detach() {
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }
}
