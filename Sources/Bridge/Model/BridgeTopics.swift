import Config

/// Every MQTT topic the bridge uses, built in one place so the topic layout of docs/mqtt.md cannot drift between features.
public struct BridgeTopics: Sendable, Equatable {
    public let base: String
    /// `bridge.id` in a fleet (docs/fleet.md): the bridge's state moves to `B/bridge/<id>/state`.
    public let bridgeID: String?

    public init(base: String, bridgeID: String? = nil) {
        self.base = base
        self.bridgeID = bridgeID
    }

    /// The topics of a client with these settings (fleet-aware).
    public init(settings: MQTTSettings) {
        self.init(base: settings.baseTopic, bridgeID: settings.bridgeID)
    }

    public var bridgeState: String { bridgeOwn("state") }
    /// A topic about this bridge alone (its state, adapters, diagnostics): `B/bridge/<leaf>`, or in a fleet
    /// `B/bridge/<id>/<leaf>`, since one topic written by several bridges would only say which wrote last.
    public func bridgeOwn(_ leaf: String) -> String {
        bridgeID.map { "\(base)/bridge/\($0)/\(leaf)" } ?? "\(base)/bridge/\(leaf)"
    }
    public var bridgeEvent: String { "\(base)/bridge/event" }
    public var bridgeLog: String { "\(base)/bridge/log" }

    public func availability(_ device: DeviceConfig) -> String { "\(base)/\(device.topicLevel)/availability" }
    public func rssi(_ device: DeviceConfig) -> String { "\(base)/\(device.topicLevel)/rssi" }
    public func state(_ device: DeviceConfig, _ channel: ChannelConfig) -> String {
        "\(base)/\(device.topicLevel)/\(channel.topicLevel)"
    }
    public func set(_ device: DeviceConfig, _ channel: ChannelConfig) -> String { state(device, channel) + "/set" }
    public func get(_ device: DeviceConfig, _ channel: ChannelConfig) -> String { state(device, channel) + "/get" }

    // MARK: Fleet (docs/fleet.md)

    public func bridgeState(of id: String) -> String { "\(base)/bridge/\(id)/state" }
    public func owner(_ device: DeviceConfig) -> String { "\(base)/\(device.topicLevel)/owner" }
    public var ownerFilter: String { "\(base)/+/owner" }
    public var bridgeStateFilter: String { "\(base)/bridge/+/state" }

    /// The bridge id of `B/bridge/<id>/state`; nil for any other topic.
    public func parseBridgeState(_ topic: String) -> String? {
        let levels = levels(topic)
        guard levels?.count == 3, levels?[0] == "bridge", levels?[2] == "state" else { return nil }
        return levels?[1]
    }

    /// The device level of `B/D/owner`; nil for any other topic.
    public func parseOwner(_ topic: String) -> String? {
        let levels = levels(topic)
        guard levels?.count == 2, levels?[1] == "owner" else { return nil }
        return levels?[0]
    }

    private func levels(_ topic: String) -> [String]? {
        guard topic.hasPrefix(base + "/") else { return nil }
        return topic.dropFirst(base.count + 1).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    }

    /// Filters the bridge subscribes to for commands.
    public var commandFilters: [String] { ["\(base)/+/+/set", "\(base)/+/+/get"] }

    /// Splits `B/D/C/set|get` into its levels; nil for anything else.
    public func parseCommand(_ topic: String) -> (device: String, channel: String, verb: CommandVerb)? {
        guard topic.hasPrefix(base + "/") else { return nil }
        let rest = topic.dropFirst(base.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard rest.count == 3, let verb = CommandVerb(rawValue: String(rest[2])) else { return nil }
        return (String(rest[0]), String(rest[1]), verb)
    }
}

public enum CommandVerb: String, Sendable {
    case set, get
}
