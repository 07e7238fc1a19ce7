import BlueZ
import BridgeAdverts
import BridgeCoreLayer
import BridgeFeatureHost
import BridgeFeatures
import BridgeFleet
import BridgeHomeAssistant
import BridgePairing
import BridgeProxy
import BridgeTools
import BridgeWeb
import Config
import DBus
import Logging
import MQTT
import ServiceLifecycle
import Systemd
import UnixSignals

/// `gattbridge run`: connects what must be there at start (the system bus, the BlueZ client, a valid MQTT client
/// configuration; failures exit 69), then runs the parts as `Service`s in one `ServiceGroup`, started in order and
/// shut down in reverse: the core stops the devices first, then the broker gets `offline`, then BlueZ closes.
public struct BridgeDaemon: Sendable {
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
    let config: BridgeConfig
    let logger: Logger
    let notifier: SystemdNotifier
    let reloadSignals: UnixSignalsSequence
    let version: String

    public init(configPath: String, config: BridgeConfig, logger: Logger, notifier: SystemdNotifier = SystemdNotifier(),
                reloadSignals: UnixSignalsSequence, version: String) {
        self.configPath = configPath
        self.config = config
        self.logger = logger
        self.notifier = notifier
        self.reloadSignals = reloadSignals
        self.version = version
    }

    public func run() async throws {
        let bus: DBusConnection
        let bluez: BlueZClient
        do {
            bus = try await DBusConnection.system()
        } catch {
            throw StartupError.bus(error.description)
        }
        do {
            bluez = try await BlueZClient.connect(bus, logger: logger)
        } catch {
            throw StartupError.bus(error.description)
        }
        let link: MQTTLink
        do {
            link = MQTTLink(try MQTTClient(configuration: MQTTConfiguration(settings: config.mqtt), logger: logger))
        } catch {
            throw StartupError.mqtt(error.description)
        }
        let (statusFeed, statusTrigger) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let statusChanged: @Sendable () -> Void = { statusTrigger.yield() }
        let discovery = DiscoveryCoordinator(bluez: bluez, logger: logger)
        let agentReadiness = AgentReadiness()
        let advertCounts = AdvertCounts()
        let started = ContinuousClock.now
        let features: [any BridgeFeature] = [
            DeviceTopicFeature.availability, DeviceTopicFeature.rssi, EventLogFeature(logger: logger),
            HomeAssistantFeature(version: version, logger: logger),
            BridgeAPIFeature(version: version, started: started, bluetooth: BlueZTools(bluez: bluez, discovery: discovery),
                             broker: link,
                             logger: logger, adverts: advertCounts),
            CommandReplyFeature(),
            PairingAgentFeature(bus: bluez, logger: logger, readiness: agentReadiness),
            FleetFeature(logger: logger),
            AdapterFeature(),
            AdvertFeature(version: version, logger: logger, counts: advertCounts),
            BridgeDeviceFeature(version: version, broker: link, hostname: Hostname.current),
            WebFeature(version: version, started: started, broker: link, adverts: advertCounts,
                       host: EventLoopHost(loop: bus.loop), machineNames: [Hostname.current], logger: logger),
            ProxyFeature(version: version, host: EventLoopHost(loop: bus.loop), bus: bus, logger: logger),
        ]
        let core = BridgeCore(config: config, bluez: bluez, link: link, discovery: discovery, features: features,
                              logger: logger, agentReadiness: agentReadiness, statusChanged: statusChanged)
        let status = StatusReporter(notifier: notifier, core: core, mqtt: link, bluez: bluez)
        let (notifier, logger, configPath, devices, version) = (notifier, logger, configPath, config.devices.count, version)
        let mqtt = MQTTService(link: link, core: core, logger: logger, statusChanged: statusChanged,
                               host: EventLoopMQTTHost(loop: bus.loop), started: {
            notifier.ready()
            logger.notice("gattbridge \(version) running with \(devices) device(s)", metadata: ["config": "\(configPath)"])
        })
        // Started in this order, shut down in reverse: the devices stop (core) while the broker connection and BlueZ
        // are still there, then the broker gets `offline` (MQTT), then BlueZ and discovery close.
        var services: [any Service] = [
            discovery,
            BlueZEventsService(bluez: bluez, core: core, statusChanged: statusChanged),
            mqtt,
            CoreService(core: core),
            StatusService(reporter: status, triggers: statusFeed),
            ReloadService(configPath: configPath, signals: reloadSignals, core: core, mqtt: mqtt, status: status,
                          notifier: notifier, logger: logger),
        ]
        if let interval = notifier.watchdogInterval {
            let loop = WatchdogLoop(interval: interval, health: HealthCheck(bus: bus, mqtt: link, core: core),
                                    notifier: notifier, logger: logger)
            services.append(WatchdogService(loop: loop))
        }
        services.append(StoppingNotice(notifier: notifier, logger: logger))
        let configurations = services.map {
            ServiceGroupConfiguration.ServiceConfiguration(
                service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                failureTerminationBehavior: .gracefullyShutdownGroup)
        }
        var configuration = ServiceGroupConfiguration(
            services: configurations,
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        // systemd allows 10 s (TimeoutStopSec) before it kills; docs/operating.md wants us gone within 5.
        configuration.maximumGracefulShutdownDuration = .seconds(5)
        try await ServiceGroup(configuration: configuration).run()
        bus.close()
    }
}
