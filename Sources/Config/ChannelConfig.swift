import Bluetooth
import Codecs

/// One entry of a device's `channels:`, every default resolved.
public struct ChannelConfig: Sendable, Equatable {
    public var name: String
    /// nil: the characteristic is looked up in any service.
    public var service: BluetoothUUID?
    public var characteristic: BluetoothUUID
    /// The codec with the channel's `values` map applied.
    public var codec: Codec
    /// nil: notify if the characteristic can notify or indicate, else read (decided once connected).
    public var mode: ChannelMode?
    /// Poll period in read mode.
    public var interval: Duration
    public var retain: Bool
    public var qos: Int
    /// Overrides `name` as the topic level.
    public var topic: String?
    public var writable: Bool
    /// nil: with response if the characteristic allows it, else without.
    public var writeWithResponse: Bool?
    public var homeassistant: HomeAssistantComponent
    /// How long a `set` waits for a disconnected device (docs/mqtt.md).
    public var commandTTL: Duration
    /// `text` framing of incoming data; empty means each notification is one message.
    public var delimiter: String
    /// Appended to outgoing `text`; may be empty.
    public var writeDelimiter: String
    public var maxLine: Int
    public var flushAfter: Duration

    public init(name: String, service: BluetoothUUID? = nil, characteristic: BluetoothUUID, codec: Codec,
                mode: ChannelMode? = nil, interval: Duration = .seconds(60), retain: Bool = false, qos: Int = 1,
                topic: String? = nil, writable: Bool = false, writeWithResponse: Bool? = nil,
                homeassistant: HomeAssistantComponent = .sensor, commandTTL: Duration = .seconds(30),
                delimiter: String = "\n", writeDelimiter: String? = nil, maxLine: Int = 1024,
                flushAfter: Duration = .seconds(1)) {
        self.name = name
        self.service = service
        self.characteristic = characteristic
        self.codec = codec
        self.mode = mode
        self.interval = interval
        self.retain = retain
        self.qos = qos
        self.topic = topic
        self.writable = writable
        self.writeWithResponse = writeWithResponse
        self.homeassistant = homeassistant
        self.commandTTL = commandTTL
        self.delimiter = delimiter
        self.writeDelimiter = writeDelimiter ?? delimiter
        self.maxLine = maxLine
        self.flushAfter = flushAfter
    }

    public var codecKind: CodecKind { codec.kind }
    public var values: [(key: String, value: String)] { codec.values }

    /// The channel's MQTT topic level (`C` in docs/mqtt.md): the sanitised `topic` override, else the sanitised name.
    public var topicLevel: String { sanitizeTopicLevel(topic ?? name) }
}

public enum ChannelMode: String, Sendable, CaseIterable {
    case notify, read
}

/// How the channel is announced to Home Assistant; raw values are the config spellings.
public enum HomeAssistantComponent: String, Sendable, CaseIterable {
    case sensor
    case binarySensor = "binary_sensor"
    case `switch`
    case light
    /// Each value is an action (a button press), not a state: announced as an `event` entity and as device triggers.
    case event
    /// The same as `event` (docs/home-assistant.md): the name users of Home Assistant's automation editor look for.
    case deviceTrigger = "device_trigger"

    /// Switches and lights are commanded, so they need a writable channel.
    public var needsCommandTopic: Bool { self == .switch || self == .light }

    /// `event` and `device_trigger` are two spellings of one option.
    public var isEvent: Bool { self == .event || self == .deviceTrigger }
}
