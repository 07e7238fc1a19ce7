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
        let pumps = MQTTPumps(core: core, statusTrigger: statusTrigger)
        pumps.attach(link.client)
        link.client.start()
        await core.start()
        notifier.ready()
        logger.notice("gattbridge \(version) running with \(initialConfig.devices.count) device(s)",
                      metadata: ["config": "\(configPath)"])

        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in bluezEvents { await core.handle(event) }
            }
            group.addTask {
                var last = ""
                for await _ in statusFeed {
                    let line = await StatusLine.describe(core: core, mqtt: link, bluez: bluez)
                    if line != last {
                        notifier.status(line)
                        last = line
                    }
                }
            }
            if let interval = notifier.watchdogInterval {
                group.addTask {
                    let health = HealthCheck(bus: bus, mqtt: link, core: core)
                    while !Task.isCancelled {
                        switch await health.probe(deadline: interval) {
                        case .live: notifier.watchdog()
                        case .stuck(let why): logger.error("not petting the watchdog: \(why)")
                        }
                        try? await Task.sleep(for: interval)
                    }
                }
            }
            group.addTask {
                for await _ in reloadSignals {
                    await reload(core: core, link: link, pumps: pumps)
                    statusTrigger.yield()
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
            await link.client.shutdown(
                finalMessages: [MQTTMessage(topic: BridgeTopics(base: baseTopic).bridgeState, string: "offline",
                                            qos: .atLeastOnce, retain: true)],
                timeout: .milliseconds(1500))
            pumps.detach()
            statusTrigger.finish()
            await bluez.shutdown()
            group.cancelAll()
        }
        bus.close()
    }

    /// SIGHUP: re-read the config; a bad one is reported and the running one stays in force.
    private func reload(core: BridgeCore, link: MQTTLink, pumps: MQTTPumps) async {
        notifier.reloading()
        logger.notice("reloading \(configPath)")
        let new: BridgeConfig
        do {
            new = try ConfigLoader.load(path: configPath)
        } catch {
            for issue in error.issues { logger.error("\(issue)") }
            logger.error("reload failed; keeping the running config")
            notifier.status("reload failed: \(error.issues.first.map { "\($0)" } ?? "bad config"); old config kept")
            notifier.ready()
            return
        }
        let old = await core.config
        var replaced = false
        if new.mqtt != old.mqtt {
            do {
                let client = try MQTTClient(configuration: MQTTConfiguration(settings: new.mqtt), logger: logger)
                pumps.attach(client)
                let previous = link.swap(client)
                client.start()
                replaced = true
                logger.notice("MQTT settings changed; reconnecting")
                Task { await previous.shutdown(finalMessages: [], timeout: .seconds(1)) }
            } catch {
                logger.error("new MQTT settings rejected (\(error)); keeping the running client")
            }
        }
        await core.apply(new, mqttReplaced: replaced)
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
