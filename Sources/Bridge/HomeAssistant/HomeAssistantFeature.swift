import BridgeFeatureHost
import BridgeModel
import Codecs
import Config
import Logging
import MQTT

/// Home Assistant MQTT discovery as a feature: publishes the configs `HomeAssistantDiscovery` builds when the broker
/// connects and when Home Assistant announces itself online (then, a moment later, the current states), clears the
/// configs of channels and devices that left the config, keeps device blocks' model/manufacturer current once GATT
/// Device Information was read, and clears retained configs this bridge left behind in an earlier run, read in a
/// sweep of `HomeAssistantDiscovery.sweepWindow` after each connect (kept subscribed, every config the bridge publishes would
/// come back into its own inbox). Publishes nothing when disabled.
package struct HomeAssistantFeature: BridgeFeature {
    package init(version: String, logger: Logger) {
        self.version = version
        self.logger = logger
    }

    let version: String
    let logger: Logger
    /// How long after configs the states follow: Home Assistant creates an entity when its config arrives and only
    /// then subscribes to its state topic, so a non-retained state sent together with the config would be lost.
    package static let stateRepublishDelay: Duration = .seconds(1)

    private enum Timer: Sendable {
        case republishStates, republishConfigs
        /// The sweep with this number is over.
        case sweepEnd(Int)
    }

    package func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        var discovery: HomeAssistantDiscovery?
        var identities: [String: DeviceIdentity] = [:]
        /// Config topics published by this process: one not among them is new to Home Assistant (docs/home-assistant.md).
        var announced: Set<String> = []
        var pendingStates = false
        var birth = HomeAssistantBirth()
        /// The payload last published on each config topic: a config change republishes only what changed (a device
        /// added publishes its own configs, not everyone's).
        var published: [String: String] = [:]
        /// Fleet (docs/fleet.md): the devices this bridge owns, the only ones it publishes or clears configs for.
        var owned: Set<String> = []
        func speaksFor(_ device: DeviceConfig) -> Bool { discovery?.config.fleet == nil || owned.contains(device.name) }
        /// The config filter while a sweep reads it, and the sweep's number.
        var sweepFilter: String?
        var sweepNumber = 0
        var connected = false

        func startSweep() -> [(at: ContinuousClock.Instant, timer: Timer)] {
            if let filter = sweepFilter { context.unsubscribe(filter) }
            sweepFilter = nil
            guard let discovery, discovery.isEnabled else { return [] }
            sweepFilter = discovery.configFilter
            context.subscribe(discovery.configFilter)
            sweepNumber += 1
            return [(.now + HomeAssistantDiscovery.sweepWindow, .sweepEnd(sweepNumber))]
        }

        /// Publishes every config (`changedOnly`: those whose payload differs from the last one published); true
        /// when one of them was never published before by this process.
        func publishAll(changedOnly: Bool = false, among candidates: [DeviceConfig]? = nil) -> Bool {
            guard let discovery, discovery.isEnabled else { return false }
            var fresh = false
            let devices = (candidates ?? discovery.config.devices).filter(speaksFor)
            for message in devices.flatMap({ discovery.messages(for: $0, identity: identities[$0.name]) }) {
                if changedOnly, published[message.topic] == message.payload { continue }
                publish(message)
                fresh = announced.insert(message.topic).inserted || fresh
            }
            return fresh
        }

        func publish(_ message: DiscoveryMessage) {
            context.publish(message.topic, message.payload, qos: 1, retain: true)
            published[message.topic] = message.payload
        }

        func statesSoon() -> [(at: ContinuousClock.Instant, timer: Timer)] {
            guard !pendingStates else { return [] }
            pendingStates = true
            return [(.now + Self.stateRepublishDelay, .republishStates)]
        }

        await runFeatureLoop(events, timer: Timer.self) { input in
            switch input {
            case .event(.configApplied(let old, let config)):
                let previous = discovery
                let next = HomeAssistantDiscovery(config: config, version: version)
                discovery = next
                if let previous {
                    var removed = next.removedTopics(old: previous)
                    if previous.config.fleet != nil {
                        let ours = previous.config.devices.filter { owned.contains($0.name) }
                            .reduce(into: Set<String>()) { $0.formUnion(previous.configTopics(of: $1)) }
                        removed = removed.filter(ours.contains)
                    }
                    for topic in removed {
                        context.publish(topic, "", qos: 1, retain: true)
                        announced.remove(topic)
                        published[topic] = nil
                    }
                    if previous.isEnabled && (previous.discoveryPrefix != next.discoveryPrefix || !next.isEnabled) {
                        context.unsubscribe(previous.statusTopic)
                        if let filter = sweepFilter { context.unsubscribe(filter) }
                        sweepFilter = nil
                    }
                }
                var timers: [(at: ContinuousClock.Instant, timer: Timer)] = []
                if next.isEnabled && (old == nil || previous?.isEnabled != true
                                      || previous?.discoveryPrefix != next.discoveryPrefix) {
                    context.subscribe(next.statusTopic)
                    if connected { timers = startSweep() }
                    published = [:]
                }
                // Only devices whose config changed can have new configs, unless what every config shares changed.
                var candidates: [DeviceConfig]?
                if let old, old.mqtt == config.mqtt, old.homeassistant == config.homeassistant, old.fleet == config.fleet {
                    let before = Dictionary(old.devices.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
                    candidates = config.devices.filter { before[$0.name] != $0 }
                }
                if publishAll(changedOnly: true, among: candidates) { return timers + statesSoon() }
                return timers
            case .event(.brokerConnected):
                connected = true
                let timers = startSweep()
                if publishAll() { return timers + statesSoon() }
                return timers
            case .event(.brokerDisconnected):
                connected = false
            case .timer(.sweepEnd(let number)):
                guard number == sweepNumber, let filter = sweepFilter else { break }
                context.unsubscribe(filter)
                sweepFilter = nil
            case .event(.ownership(let device, let isOwned)):
                if isOwned { owned.insert(device.name) } else { owned.remove(device.name) }
                guard isOwned, let discovery, discovery.isEnabled else { break }
                var fresh = false
                for message in discovery.messages(for: device, identity: identities[device.name]) {
                    publish(message)
                    fresh = announced.insert(message.topic).inserted || fresh
                }
                if fresh { return statesSoon() }
            case .event(.identified(let device, let identity)):
                identities[device.name] = identity
                guard let discovery, discovery.isEnabled else { break }
                // Once per connection of the device: said again even when unchanged (a reconnect after a reload).
                for message in discovery.messages(for: device, identity: identity) { publish(message) }
            case .event(.message(let message)):
                guard let discovery, discovery.isEnabled else { break }
                if message.topic == discovery.statusTopic {
                    guard let due = birth.heard(message) else { break }
                    logger.info("Home Assistant is online; republishing discovery and states")
                    return [(due, .republishConfigs)]
                }
                if Self.isStaleOwnConfig(message, discovery: discovery, announced: announced) {
                    logger.info("clearing stale Home Assistant config \(message.topic)")
                    context.publish(message.topic, "", qos: 1, retain: true)
                }
            case .timer(.republishConfigs):
                birth.republishing()
                _ = publishAll()
                return statesSoon()
            case .timer(.republishStates):
                pendingStates = false
                context.requestRepublish(states: true)
            case .event:
                break
            }
            return []
        }
    }

    /// A retained config left by this bridge in an earlier run (or config) and no longer configured. Only retained
    /// messages count (the broker's stored ones, sent when we subscribe), never live ones, and only configs whose
    /// availability names this bridge's own state topic: another bridge's configs on the same broker are not ours
    /// to clear.
    static func isStaleOwnConfig(_ message: MQTTMessage, discovery: HomeAssistantDiscovery,
                                 announced: Set<String>) -> Bool {
        // Fleet: a leftover may be another bridge's device; it is never this bridge's to clear (docs/fleet.md).
        guard discovery.config.fleet == nil, message.retain, !message.payload.isEmpty, !announced.contains(message.topic),
              !discovery.configTopics().contains(message.topic),
              HomeAssistantDiscovery.isOwnDiscoveryTopic(message.topic, prefix: discovery.discoveryPrefix),
              let json = try? JSONValue.parse(message.payloadString),
              let availability = json["availability"]?.arrayValue else { return false }
        let ownState = BridgeTopics(base: discovery.config.mqtt.baseTopic).bridgeState
        return availability.contains { $0["topic"]?.stringValue == ownState }
    }
}
