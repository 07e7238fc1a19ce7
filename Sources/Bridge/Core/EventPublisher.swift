import Codecs
import Logging

/// Publishes bridge events (`B/bridge/event`) and rejected-command reports (`B/bridge/log`) as JSON, and logs them,
/// so MQTT consumers and the journal tell the same story.
public struct EventPublisher: Sendable {
    let mqtt: MQTTLink
    let topics: BridgeTopics
    let logger: Logger

    public init(mqtt: MQTTLink, topics: BridgeTopics, logger: Logger) {
        self.mqtt = mqtt
        self.topics = topics
        self.logger = logger
    }

    public func emit(_ event: BridgeEvent, device: String) {
        var fields: [(String, JSONValue)]
        switch event {
        case .connected:
            fields = [("type", .string("connected"))]
            logger.info("connected", metadata: ["device": "\(device)"])
        case .disconnected(let reason):
            fields = [("type", .string("disconnected")), ("reason", .string(reason))]
            logger.notice("disconnected", metadata: ["device": "\(device)", "reason": "\(reason)"])
        case .error(let message):
            fields = [("type", .string("error")), ("message", .string(message))]
            logger.warning("\(message)", metadata: ["device": "\(device)"])
        case .reconnectAttempt(let attempt, let delay):
            let ms = Int(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)
            fields = [("type", .string("reconnect_attempt")), ("attempt", .int(attempt)), ("delay_ms", .int(ms))]
            logger.info("reconnect attempt \(attempt) in \(ms) ms", metadata: ["device": "\(device)"])
        }
        fields.append(("device", .string(device)))
        mqtt.publish(topics.bridgeEvent, JSONValue.object(fields).serialized, qos: 1)
    }

    /// Reports a command that was not carried out. `topic` is the command's topic, so a client can match its request.
    public func reject(topic: String, message: String) {
        logger.warning("command rejected: \(message)", metadata: ["topic": "\(topic)"])
        let json = JSONValue.object([("level", .string("error")), ("message", .string(message)), ("topic", .string(topic))])
        mqtt.publish(topics.bridgeLog, json.serialized, qos: 1)
    }
}
