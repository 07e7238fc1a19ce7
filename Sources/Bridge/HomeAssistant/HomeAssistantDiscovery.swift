import Bluetooth
import BridgeChannels
import BridgeModel
import Codecs
import Config

/// Builds the Home Assistant MQTT discovery configs for a bridge config (docs/mqtt.md). Pure: the bridge publishes what it
/// returns, so the same config always yields byte-identical retained messages.
///
/// Topics: `<prefix>/<component>/gattbridge_<ADDRESS>/<object>/config`, where `<object>` is the channel's topic
/// level made safe for Home Assistant (`DiscoveryObjectID`), `<level>_<event type>` for an event channel's device
/// triggers (component `device_automation`), and `rssi` for the per-device link-quality sensor.
public struct HomeAssistantDiscovery: Sendable, Equatable {
    public let config: BridgeConfig
    public let version: String
    /// Shown by Home Assistant as the origin's support link; must be an http(s) URL when set.
    public let supportURL: String?

    public init(config: BridgeConfig, version: String, supportURL: String? = nil) {
        self.config = config
        self.version = version
        self.supportURL = supportURL
    }

    public var isEnabled: Bool { config.homeassistant.enabled }
    public var discoveryPrefix: String { config.homeassistant.discoveryPrefix }
    /// Home Assistant's birth and will topic: `online` there means it (re)started and needs every config again.
    public var statusTopic: String { "\(discoveryPrefix)/status" }
    /// What to subscribe to at start-up to collect retained configs, ours among them (see `staleTopics`).
    public var configFilter: String { "\(discoveryPrefix)/+/+/+/config" }

    var topics: BridgeTopics { BridgeTopics(base: config.mqtt.baseTopic) }

    /// How long the retained configs are read after a connect, by `HomeAssistantFeature` and by the broadcasters'
    /// `AdvertSweep` (one window, kept here below both: docs/dev/ARCHITECTURE.md#layers): the broker sends them right
    /// after the SUBSCRIBE, so a few seconds is plenty, and subscribing for longer would bring every config this bridge
    /// publishes back into its own inbox (issue 40: with a flood of entities, most of the inbound load).
    package static let sweepWindow: Duration = .seconds(5)

    /// Every config for the whole bridge; empty when Home Assistant support is disabled.
    /// `deviceInfo` is keyed by device name.
    public func messages(deviceInfo: [String: DeviceIdentity] = [:]) -> [DiscoveryMessage] {
        guard isEnabled else { return [] }
        return config.devices.flatMap { messages(for: $0, identity: deviceInfo[$0.name]) }
    }

    /// The configs of one device, e.g. to republish it once Device Information has been read after connecting.
    public func messages(for device: DeviceConfig, identity: DeviceIdentity?) -> [DiscoveryMessage] {
        guard isEnabled else { return [] }
        let shared = sharedFields(device, identity: identity)
        return entities(of: device).map { entity in
            var members: [(String, JSONValue)] = []
            if entity.component != .deviceAutomation {
                members += [("name", .string(entity.name)), ("unique_id", .string(uniqueID(device, entity)))]
            }
            members += entity.fields
            members += shared(entity)
            return DiscoveryMessage(topic: topic(device, entity), payload: JSONValue.object(members).serialized)
        }
    }

    /// Every topic `messages` publishes, for telling leftovers apart from live configs.
    public func configTopics() -> Set<String> {
        guard isEnabled else { return [] }
        return Set(config.devices.flatMap { device in entities(of: device).map { topic(device, $0) } })
    }

    /// The config topics of one device (fleet: a bridge clears only those of devices it owns).
    public func configTopics(of device: DeviceConfig) -> Set<String> {
        guard isEnabled else { return [] }
        return Set(entities(of: device).map { topic(device, $0) })
    }

    /// After a reload: the configs the old config published that the new one does not, to clear with `""`.
    /// Empty when the new config disables Home Assistant support: then the bridge publishes nothing for Home
    /// Assistant at all (docs/home-assistant.md), removals included.
    public func removedTopics(old: HomeAssistantDiscovery) -> [String] {
        guard isEnabled else { return [] }
        return old.configTopics().subtracting(configTopics()).sorted()
    }

    /// At start-up: of the retained config topics seen on `configFilter`, those that gattbridge published earlier
    /// and the current config no longer has. Skip topics whose retained payload is already empty before calling.
    /// Empty when Home Assistant support is disabled.
    public func staleTopics<S: Sequence<String>>(retained: S) -> [String] {
        guard isEnabled else { return [] }
        let live = configTopics()
        return Set(retained.filter { Self.isOwnDiscoveryTopic($0, prefix: discoveryPrefix) && !live.contains($0) }).sorted()
    }

    /// True for `<prefix>/<component>/gattbridge_<12 hex digits>/<object>/config`: a config gattbridge published,
    /// possibly under an earlier config, and so one it may clear.
    public static func isOwnDiscoveryTopic(_ topic: String, prefix: String) -> Bool {
        guard topic.hasPrefix(prefix + "/") else { return false }
        let levels = topic.dropFirst(prefix.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 4, levels[3] == "config" else { return false }
        let component = levels[0], node = levels[1], object = levels[2]
        guard !component.isEmpty, component.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || $0 == "_" }) else {
            return false
        }
        let nodePrefix = "gattbridge_"
        guard node.hasPrefix(nodePrefix) else { return false }
        let address = node.dropFirst(nodePrefix.count)
        guard address.count == 12, address.unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit }) else { return false }
        return DiscoveryObjectID.isValid(object)
    }

    /// The payload an event channel publishes for one action, the `event_type` this discovery's device triggers read.
    /// The channel builds it on the hot path, which sits below Home Assistant (docs/dev/ARCHITECTURE.md#layers).
    public static func eventPayload(for channel: ChannelConfig, decoded: String) -> String {
        ChannelPublisher.eventPayload(for: channel, decoded: decoded)
    }

    // MARK: - Building blocks

    private func entities(of device: DeviceConfig) -> [DiscoveryEntity] {
        device.channels.flatMap { ChannelEntities.entities(for: $0, device: device, topics: topics) }
            + [ChannelEntities.rssi(device: device, topics: topics)]
    }

    func nodeID(_ device: DeviceConfig) -> String { "gattbridge_\(device.address.withoutColons)" }

    private func topic(_ device: DeviceConfig, _ entity: DiscoveryEntity) -> String {
        "\(discoveryPrefix)/\(entity.component.rawValue)/\(nodeID(device))/\(entity.objectID)/config"
    }

    /// Unique across the bridge: the text entity of a channel shares its sensor's object id, so it carries a suffix.
    private func uniqueID(_ device: DeviceConfig, _ entity: DiscoveryEntity) -> String {
        let base = "\(nodeID(device))_\(entity.objectID)"
        return entity.component == .text ? base + "_text" : base
    }

    /// The keys every entity of `device` carries, after its own: qos, availability, device and origin. Device
    /// triggers have no availability in Home Assistant.
    func sharedFields(_ device: DeviceConfig, identity: DeviceIdentity?) -> (DiscoveryEntity) -> [(String, JSONValue)] {
        var deviceBlock: [(String, JSONValue)] = [
            ("identifiers", [.string(nodeID(device))]),
            ("name", .string(device.name)),
            ("connections", [["bluetooth", .string(device.address.description)]]),
        ]
        if let model = identity?.model, !model.isEmpty { deviceBlock.append(("model", .string(model))) }
        if let manufacturer = identity?.manufacturer, !manufacturer.isEmpty {
            deviceBlock.append(("manufacturer", .string(manufacturer)))
        }
        if let url = config.web.publicURL, config.web.enabled {
            deviceBlock.append(("configuration_url", .string(WebLinks.device(device.name, at: url))))
        }
        var origin: [(String, JSONValue)] = [("name", "gattbridge"), ("sw_version", .string(version))]
        if let supportURL { origin.append(("support_url", .string(supportURL))) }
        // In a fleet the device's availability alone: the owner, whichever it is, keeps it true (docs/fleet.md), and a
        // config naming one bridge's state would differ between bridges.
        let sources = config.fleet == nil ? [topics.bridgeState, topics.availability(device)] : [topics.availability(device)]
        let availability: JSONValue = .array(sources.map { topic in
            .object([("topic", .string(topic)), ("payload_available", "online"), ("payload_not_available", "offline")])
        })
        let tail: [(String, JSONValue)] = [("device", .object(deviceBlock)), ("origin", .object(origin))]
        return { entity in
            let qos: [(String, JSONValue)] = [("qos", .int(entity.qos))]
            if entity.component == .deviceAutomation { return qos + tail }
            return qos + [("availability", availability), ("availability_mode", "all")] + tail
        }
    }
}
