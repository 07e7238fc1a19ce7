/// A validated configuration (SPEC §3) with every default resolved.
///
/// Equatable so a reload can tell which devices' configs did not change and leave them running.
public struct BridgeConfig: Sendable, Equatable {
    public var mqtt: MQTTSettings
    public var bluetooth: BluetoothSettings
    public var homeassistant: HomeAssistantSettings
    public var devices: [DeviceConfig]
    /// `state_dir`: where the bridge API saves devices (`devices.d/<name>.yaml`, SPEC §7).
    public var stateDir: String
    /// `bridge_api`: whether `B/bridge/request/#` is served.
    public var bridgeAPI: Bool
    /// `bridge:`: set when this bridge is one of a fleet sharing the broker (SPEC §10); nil for a lone bridge.
    public var fleet: FleetSettings?

    public static let defaultStateDir = "/var/lib/gattbridge"

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
    /// nil: the first powered adapter, else hci0 (SPEC §1).
    public var adapter: String?
    /// `default_agent`: the pairing agent also asks BlueZ to make it the default agent (SPEC §9).
    public var defaultAgent: Bool = false

    public init(adapter: String? = nil) {
        self.adapter = adapter
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
