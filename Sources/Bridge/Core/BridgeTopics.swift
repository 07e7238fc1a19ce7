import Config

/// Every MQTT topic the bridge uses, built in one place so the topic layout of SPEC §4 cannot drift between features.
public struct BridgeTopics: Sendable, Equatable {
    public let base: String

    public init(base: String) {
        self.base = base
    }

    public var bridgeState: String { "\(base)/bridge/state" }
    public var bridgeEvent: String { "\(base)/bridge/event" }
    public var bridgeLog: String { "\(base)/bridge/log" }

    public func availability(_ device: DeviceConfig) -> String { "\(base)/\(device.topicLevel)/availability" }
    public func rssi(_ device: DeviceConfig) -> String { "\(base)/\(device.topicLevel)/rssi" }
    public func state(_ device: DeviceConfig, _ channel: ChannelConfig) -> String {
        "\(base)/\(device.topicLevel)/\(channel.topicLevel)"
    }
    public func set(_ device: DeviceConfig, _ channel: ChannelConfig) -> String { state(device, channel) + "/set" }
    public func get(_ device: DeviceConfig, _ channel: ChannelConfig) -> String { state(device, channel) + "/get" }

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
