import Adverts
import Bluetooth

/// One entry of `devices:`.
public struct DeviceConfig: Sendable, Equatable {
    public var name: String
    public var address: BluetoothAddress
    public var channels: [ChannelConfig]
    /// Where the device is defined, so `device/remove` can refuse devices of the main config file.
    public var source: DeviceSource
    /// `pairing` and its passkey (docs/pairing.md).
    public var pairing: PairingConfig
    /// `adapter: hciN` pins the device to one adapter; nil (`any`, the default) lets the bridge choose (docs/adapters.md).
    public var adapter: String?
    /// Passive (docs/adverts.md): the format its broadcasts are decoded in; nil for a device that only connects.
    public var advert: AdvertSelection?
    /// The key of an encrypted BTHome or Xiaomi broadcaster (`bindkey_file:`, or `bindkey:` inline); never printed.
    public var bindkey: Bindkey?
    /// Where the bindkey was read from (nil: none, or written inline, which `config check` warns about).
    public var bindkeyFile: SecretFile?
    /// `allow_plaintext: true`: a keyed Xiaomi device's plaintext frames are read too (firmwares that send some
    /// objects unencrypted). Off, they are refused: anyone can send a plaintext frame with the device's address.
    public var allowPlaintext: Bool

    public init(name: String, address: BluetoothAddress, channels: [ChannelConfig],
                source: DeviceSource = DeviceSource(kind: .config, file: "", line: 0), pairing: PairingConfig = .none,
                adapter: String? = nil, advert: AdvertSelection? = nil, bindkey: Bindkey? = nil,
                bindkeyFile: SecretFile? = nil, allowPlaintext: Bool = false) {
        self.name = name
        self.address = address
        self.channels = channels
        self.source = source
        self.pairing = pairing
        self.adapter = adapter
        self.advert = advert
        self.bindkey = bindkey
        self.bindkeyFile = bindkeyFile
        self.allowPlaintext = allowPlaintext
    }

    /// Only broadcasts: no channels, so no connection is ever made.
    public var isPassive: Bool { advert != nil && channels.isEmpty }

    /// Ignores `source`: a device whose entry moved (a comment added above it) has not changed, and a reload must
    /// not interrupt it. The bindkey's file counts, as the passkey's does in `pairing`.
    public static func == (lhs: DeviceConfig, rhs: DeviceConfig) -> Bool {
        lhs.name == rhs.name && lhs.address == rhs.address && lhs.channels == rhs.channels && lhs.pairing == rhs.pairing
            && lhs.adapter == rhs.adapter && lhs.advert == rhs.advert && lhs.bindkey == rhs.bindkey
            && lhs.bindkeyFile == rhs.bindkeyFile && lhs.allowPlaintext == rhs.allowPlaintext
    }

    /// The device's MQTT topic level (`D` in docs/mqtt.md).
    public var topicLevel: String { sanitizeTopicLevel(name) }
}

/// Where a device is defined: the main config file (`config`) or a drop-in of the bridge API (`api`).
public struct DeviceSource: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case config, api
        /// Heard in an `adverts.auto` format and never saved: tracked while it broadcasts, adoptable with `device/add`.
        case advert
    }

    public var kind: Kind
    public var file: String
    /// Where the device's entry starts (1-based); 0 when unknown.
    public var line: Int

    public init(kind: Kind, file: String, line: Int) {
        self.kind = kind
        self.file = file
        self.line = line
    }
}
