/// One Home Assistant discovery config to publish. Discovery configs are always retained so that Home Assistant
/// finds them after its own restart without waiting for the bridge to republish.
public struct DiscoveryMessage: Sendable, Equatable, CustomStringConvertible {
    public var topic: String
    /// The JSON config, or "" to remove the entity.
    public var payload: String

    public init(topic: String, payload: String) {
        self.topic = topic
        self.payload = payload
    }

    public var retain: Bool { true }

    /// An empty retained payload: Home Assistant removes the entity and the broker forgets the retained config.
    public static func removal(_ topic: String) -> DiscoveryMessage {
        DiscoveryMessage(topic: topic, payload: "")
    }

    public var description: String { "\(topic) \(payload.isEmpty ? "<removal>" : payload)" }
}
