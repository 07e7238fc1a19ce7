import Config
import Logging
import MQTT

/// Home Assistant MQTT discovery as a bridge feature: publishes the configs `HomeAssistantDiscovery` builds when the
/// broker connects, again (with current states) when Home Assistant announces itself online, clears configs for
/// channels and devices that left the config (on reload, and retained leftovers found at start-up), and keeps the
/// device blocks' model/manufacturer current once GATT Device Information was read. Publishes nothing when disabled.
public actor HomeAssistantFeature: BridgeFeature {
    private let version: String
    private let logger: Logger
    private var discovery: HomeAssistantDiscovery?
    private var current: Set<String> = []
    private var identities: [String: DeviceIdentity] = [:]
    private var pendingStates: Task<Void, Never>?
    /// How long after Home Assistant's birth message the current states follow the configs.
    static let stateRepublishDelay: Duration = .seconds(1)

    public init(version: String, logger: Logger) {
        self.version = version
        self.logger = logger
    }

    public func started(core: BridgeCore) async {
        let discovery = HomeAssistantDiscovery(config: await core.config, version: version)
        adopt(discovery)
        guard discovery.isEnabled else { return }
        subscribe(discovery, on: core.mqtt.client)
    }

    public func brokerConnected(core: BridgeCore) async {
        // The first connect can beat `started` (the client starts before the core does): build the configs here too.
        if discovery == nil { adopt(HomeAssistantDiscovery(config: await core.config, version: version)) }
        publishAll(core)
    }

    public func handle(_ message: MQTTMessage, core: BridgeCore) async -> Bool {
        guard let discovery, discovery.isEnabled else { return false }
        if message.topic == discovery.statusTopic {
            if message.payloadString == "online" {
                logger.info("Home Assistant is online; republishing discovery and states")
                publishAll(core)
                republishStatesSoon(core)
            }
            return true
        }
        guard MQTTTopic.matches(filter: discovery.configFilter, topic: message.topic) else { return false }
        // Ours but no longer configured (left over from an earlier run or config): clear it.
        if !message.payload.isEmpty,
           HomeAssistantDiscovery.isOwnDiscoveryTopic(message.topic, prefix: discovery.discoveryPrefix),
           !current.contains(message.topic) {
            logger.info("clearing stale Home Assistant config \(message.topic)")
            core.mqtt.publish(message.topic, "", qos: 1, retain: true)
        }
        return true
    }

    public func reloaded(from old: BridgeConfig, core: BridgeCore) async {
        let previous = discovery
        let next = HomeAssistantDiscovery(config: await core.config, version: version)
        adopt(next)
        if let previous {
            for topic in next.removedTopics(old: previous) { core.mqtt.publish(topic, "", qos: 1, retain: true) }
            if previous.isEnabled && (previous.discoveryPrefix != next.discoveryPrefix || !next.isEnabled) {
                core.mqtt.client.unsubscribe(previous.statusTopic)
                core.mqtt.client.unsubscribe(previous.configFilter)
            }
        }
        // A changed `mqtt` section means the service swapped in a new client, which starts without subscriptions.
        let clientReplaced = old.mqtt != (await core.config).mqtt
        if next.isEnabled && (clientReplaced || previous?.isEnabled != true
                              || previous?.discoveryPrefix != next.discoveryPrefix) {
            subscribe(next, on: core.mqtt.client)
        }
        publishAll(core)
    }

    /// Device Information was read: that device's configs get model and manufacturer.
    public func deviceIdentified(_ device: String, identity: DeviceIdentity, core: BridgeCore) async {
        identities[device] = identity
        guard let discovery, discovery.isEnabled,
              let config = await core.config.devices.first(where: { $0.name == device }) else { return }
        for message in discovery.messages(for: config, identity: identity) {
            core.mqtt.publish(message.topic, message.payload, qos: 1, retain: true)
        }
    }

    private func adopt(_ discovery: HomeAssistantDiscovery) {
        self.discovery = discovery
        current = discovery.configTopics()
    }

    private func subscribe(_ discovery: HomeAssistantDiscovery, on client: MQTTClient) {
        client.subscribe(discovery.statusTopic, qos: .atLeastOnce)
        client.subscribe(discovery.configFilter, qos: .atLeastOnce)
    }

    /// Home Assistant creates an entity when its config arrives and only then subscribes to its state topic (it
    /// batches those subscriptions), so states sent together with the configs could land before anyone listens: the
    /// non-retained ones would be lost. Sent a moment later, in a task of its own so the message pump never waits.
    private func republishStatesSoon(_ core: BridgeCore) {
        pendingStates?.cancel()
        pendingStates = Task {
            try? await Task.sleep(for: Self.stateRepublishDelay)
            guard !Task.isCancelled else { return }
            await core.republishStates()
        }
    }

    private func publishAll(_ core: BridgeCore) {
        guard let discovery, discovery.isEnabled else { return }
        for message in discovery.messages(deviceInfo: identities) {
            core.mqtt.publish(message.topic, message.payload, qos: 1, retain: true)
        }
    }
}
