import Config
import MQTT

/// Where an MQTT 5 Response Topic may take the bridge's answer. The topic comes from whoever sent the request, and
/// the bridge may publish where that client may not: an answer on another device's `…/set` would be a write to
/// that peripheral, one on `B/bridge/<id>/state` would tell a fleet this bridge died, one under the discovery
/// prefix would be a Home Assistant config. So answers never go under the bridge's base topic or the discovery
/// prefix, and with `reply_prefix` set only under that prefix.
package struct ReplyTopicRule: Sendable, Equatable {
    var base: String
    var discoveryPrefix: String
    var replyPrefix: String?

    init(base: String, discoveryPrefix: String, replyPrefix: String? = nil) {
        self.base = base
        self.discoveryPrefix = discoveryPrefix
        self.replyPrefix = replyPrefix
    }

    package init(config: BridgeConfig) {
        self.init(base: config.mqtt.baseTopic, discoveryPrefix: config.homeassistant.discoveryPrefix,
                  replyPrefix: config.replyPrefix)
    }

    package func allows(_ topic: String) -> Bool {
        guard Self.isPublishable(topic) else { return false }
        // The bridge's own requests (the web page's) are answered in the process, never on the broker.
        if LocalReplyTopic.isLocal(topic) { return true }
        if let replyPrefix { return Self.topic(topic, isUnder: replyPrefix) && topic != replyPrefix }
        return !Self.topic(topic, isUnder: base) && !Self.topic(topic, isUnder: discoveryPrefix)
    }

    /// The request's reply target, or none when its Response Topic is missing or not allowed.
    package func replies(of message: MQTTMessage) -> [ReplyTarget] {
        guard let topic = message.responseTopic, allows(topic) else { return [] }
        return [ReplyTarget(topic: topic, correlationData: message.correlationData)]
    }

    /// A topic one with wildcards, NUL or no text at all would be refused by the broker or the client.
    package static func isPublishable(_ topic: String) -> Bool {
        !topic.isEmpty && topic.utf8.count <= 65535
            && !topic.utf8.contains(where: { $0 == 0 || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") })
    }

    /// `topic` is `prefix` or a topic below it (level-wise: `gb` does not cover `gbx/…`).
    static func topic(_ topic: String, isUnder prefix: String) -> Bool {
        topic == prefix || topic.hasPrefix(prefix + "/")
    }
}
