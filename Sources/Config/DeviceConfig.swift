import Bluetooth

/// One entry of `devices:`.
public struct DeviceConfig: Sendable, Equatable {
    public var name: String
    public var address: BluetoothAddress
    public var channels: [ChannelConfig]

    public init(name: String, address: BluetoothAddress, channels: [ChannelConfig]) {
        self.name = name
        self.address = address
        self.channels = channels
    }

    /// The device's MQTT topic level (`D` in SPEC §4).
    public var topicLevel: String { sanitizeTopicLevel(name) }
}
