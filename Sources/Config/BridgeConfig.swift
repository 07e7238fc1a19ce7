/// A validated configuration (docs/configuration.md) with every default resolved.
///
/// Equatable so a reload can tell which devices' configs did not change and leave them running.
public struct BridgeConfig: Sendable, Equatable {
    public var mqtt: MQTTSettings
    public var bluetooth: BluetoothSettings
    public var homeassistant: HomeAssistantSettings
    public var devices: [DeviceConfig]
    /// `state_dir`: where the bridge API saves devices (`devices.d/<name>.yaml`, docs/bridge-api.md).
    public var stateDir: String
    /// `bridge_api`: whether `B/bridge/request/#` is served.
    public var bridgeAPI: Bool
    /// `bridge:`: set when this bridge is one of a fleet sharing the broker (docs/fleet.md); nil for a lone bridge.
    public var fleet: FleetSettings?
    /// `secrets_dir`: the only directory a device added over the bridge API may name a `passkey_file` in.
    public var secretsDir: String = BridgeConfig.defaultSecretsDir
    /// `reply_prefix`: when set, MQTT 5 Response Topics are honoured only under it (otherwise anywhere outside the
    /// bridge's base topic and the discovery prefix).
    public var replyPrefix: String?
    /// `adverts:`: passive broadcasts (docs/adverts.md).
    public var adverts = AdvertSettings()
    /// `web:`: the page served to a browser (docs/web.md).
    public var web = WebSettings()
    /// `esphome_proxy:`: the ESPHome API server for Home Assistant's Bluetooth proxy (docs/configuration.md#esphome_proxy).
    public var esphomeProxy = ESPHomeProxySettings()

    public static let defaultStateDir = "/var/lib/gattbridge"
    public static let defaultSecretsDir = "/etc/gattbridge/secrets"

    public init(mqtt: MQTTSettings = MQTTSettings(), bluetooth: BluetoothSettings = BluetoothSettings(),
                homeassistant: HomeAssistantSettings = HomeAssistantSettings(), devices: [DeviceConfig] = [],
                stateDir: String = BridgeConfig.defaultStateDir, bridgeAPI: Bool = true) {
        self.mqtt = mqtt
        self.bluetooth = bluetooth
        self.homeassistant = homeassistant
        self.devices = devices
        self.stateDir = stateDir
        self.bridgeAPI = bridgeAPI
    }
}

/// The `bluetooth:` section.
public struct BluetoothSettings: Sendable, Equatable {
    /// `adapters:` (or the older `adapter: hciN`, a list of one); nil: every adapter BlueZ has, as they come and go
    /// (docs/adapters.md).
    public var adapters: [AdapterSetting]?
    /// `default_agent`: the pairing agent also asks BlueZ to make it the default agent (docs/pairing.md).
    public var defaultAgent: Bool = false

    public init(adapters: [AdapterSetting]? = nil) {
        self.adapters = adapters
    }

    /// The older single-adapter form: the first listed adapter; nil when every adapter is used.
    public init(adapter: String?) {
        self.adapters = adapter.map { [AdapterSetting(name: $0)] }
    }

    /// The first listed adapter (what one-shot tools such as the API's `scan` use); nil when every adapter is used.
    public var adapter: String? { adapters?.first?.name }

    /// Whether the daemon uses the adapter called `name`.
    public func uses(_ name: String) -> Bool {
        adapters.map { list in list.contains { $0.name == name } } ?? true
    }

    /// The connection limit of the adapter called `name`.
    public func maxConnections(of name: String) -> Int {
        adapters?.first { $0.name == name }?.maxConnections ?? AdapterSetting.defaultMaxConnections
    }
}

/// One entry of `bluetooth.adapters`: `hci1`, or `{name: hci1, max_connections: 2}`.
public struct AdapterSetting: Sendable, Equatable {
    public static let defaultMaxConnections = 5
    public var name: String
    /// Links the bridge keeps through this adapter at most; devices with `adapter: any` go elsewhere beyond it.
    public var maxConnections: Int

    public init(name: String, maxConnections: Int = AdapterSetting.defaultMaxConnections) {
        self.name = name
        self.maxConnections = maxConnections
    }
}

/// The `homeassistant:` section.
public struct HomeAssistantSettings: Sendable, Equatable {
    public var enabled: Bool
    public var discoveryPrefix: String

    public init(enabled: Bool = true, discoveryPrefix: String = "homeassistant") {
        self.enabled = enabled
        self.discoveryPrefix = discoveryPrefix
    }
}
