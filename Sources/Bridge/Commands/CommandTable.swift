import BridgeModel
import BridgeSession
import Config
import MQTT

/// Where `B/D/C/set|get` goes, and every check a command passes before it reaches its device, in one place: an
/// immutable table the core builds from its config and sessions after each change (`CommandRouter` publishes it),
/// so a command is checked and routed on the thread that received it, without a turn of the core.
package struct CommandTable: Sendable {
    /// What `resolve` made of a message.
    enum Resolution {
        /// Not `B/+/+/set|get`: for the features.
        case notACommand
        /// A retained command (it would run again at every restart, reconnect and reload; docs/security.md).
        case retained
        /// Refused, with the reason for the report; `payload` when the payload matters to it.
        case rejected(String, payload: Bool)
        /// Another bridge owns the device (docs/fleet.md): it runs the command, this one stays silent.
        case notOwned
        case route(device: String, CommandRequest)
    }

    /// A characteristic value is at most 512 bytes; a text command is written in MTU-sized chunks, one GATT
    /// operation each. Far larger payloads would hold the device's command queue (and memory) for many seconds.
    static let maxCommandBytes = 16 * 1024

    let topics: BridgeTopics
    let replyRule: ReplyTopicRule
    /// Devices with a running session, by topic level.
    private let devices: [String: DeviceConfig]

    package init(config: BridgeConfig, running: Set<String>) {
        topics = BridgeTopics(settings: config.mqtt)
        replyRule = ReplyTopicRule(config: config)
        var devices: [String: DeviceConfig] = [:]
        for device in config.devices where running.contains(device.name) && devices[device.topicLevel] == nil {
            devices[device.topicLevel] = device
        }
        self.devices = devices
    }

    /// `owns` is the fleet's answer for a device (by name); a lone bridge owns every device.
    func resolve(_ message: MQTTMessage, owns: (String) -> Bool) -> Resolution {
        guard let (deviceLevel, channelLevel, verb) = topics.parseCommand(message.topic) else { return .notACommand }
        if message.retain { return .retained }
        guard let device = devices[deviceLevel] else { return .rejected("unknown device \(deviceLevel)", payload: false) }
        guard owns(device.name) else { return .notOwned }
        guard let channel = device.channels.first(where: { $0.topicLevel == channelLevel }) else {
            return .rejected("unknown channel \(channelLevel) on device \(device.name)", payload: false)
        }
        if verb == .set {
            guard channel.writable else {
                return .rejected("channel \(device.name)/\(channel.name) is not writable", payload: true)
            }
            guard !message.payload.isEmpty else {
                return .rejected("empty payload for \(device.name)/\(channel.name); nothing written", payload: false)
            }
            guard message.payload.count <= Self.maxCommandBytes else {
                return .rejected("payload of \(message.payload.count) bytes is over the \(Self.maxCommandBytes)-byte "
                                 + "limit for a command", payload: false)
            }
        }
        return .route(device: device.name, CommandRequest(channel: channel, verb: verb, payload: message.payload,
                                                          topic: message.topic, replies: replyRule.replies(of: message)))
    }

    func rejection(_ message: MQTTMessage, _ reason: String, payload: Bool) -> CommandRejection {
        CommandRejection(topic: message.topic, reason: reason, payload: payload ? message.payload : nil,
                         replies: replyRule.replies(of: message))
    }
}
