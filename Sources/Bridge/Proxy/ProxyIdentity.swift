import Config
import ESPHomeAPI

/// What the proxy says of itself to Home Assistant (docs/home-assistant.md, "Bluetooth proxy"), the same to every
/// client and stable across restarts: Home Assistant keys its config entry on `mac_address` and raises a repair when
/// it changes.
package enum ProxyIdentity {
    /// The proxy's features, as ESPHome numbers them: passive scanning (1), active connections (2), remote caching (4:
    /// Home Assistant caches services per address and writes CCCDs itself), pairing (8: through the daemon's agent,
    /// with `esphome_proxy.passkeys`), cache clearing (16), raw advertisements (32), scanner state and mode (64). Not
    /// connection parameters (128): BlueZ's D-Bus API has none.
    package static let featureFlags: UInt32 = 1 | 2 | 4 | 8 | 16 | 32 | 64

    /// `macAddress`: the bridge's first adapter's address (`firstAdapterAddress`).
    package static func session(settings: ESPHomeProxySettings, friendlyName: String, version: String,
                                macAddress: String, webPort: Int?, encrypted: Bool) -> APISession.Identity {
        var info = APIMessage.DeviceInfo()
        info.name = settings.name
        info.friendlyName = friendlyName
        info.macAddress = macAddress
        info.bluetoothMacAddress = macAddress
        // Home Assistant shows it as the firmware; with `project_name` set it raises no "outdated ESPHome" repair.
        info.esphomeVersion = version
        info.projectName = "gattbridge.bridge"
        info.projectVersion = version
        info.manufacturer = "gattbridge"
        info.model = "Bluetooth proxy"
        info.bluetoothProxyFeatureFlags = featureFlags
        info.apiEncryptionSupported = encrypted
        info.webserverPort = UInt32(clamping: max(0, webPort ?? 0))
        return APISession.Identity(name: settings.name, serverInfo: "gattbridge \(version)", deviceInfo: info)
    }

    /// The address the proxy goes by: the first adapter of `bluetooth.adapters` when the config names them, else the
    /// lowest-numbered adapter BlueZ reports (hci0 before hci1, hci2 before hci10). Nil while none has an address.
    package static func firstAdapterAddress(configured: [String], adapters: [(name: String, address: String?)])
        -> String? {
        if let first = configured.first {
            return adapters.first { $0.name == first }?.address
        }
        func number(_ name: String) -> Int { Int(name.drop { !$0.isNumber }) ?? Int.max }
        return adapters.filter { $0.address != nil }
            .min { (number($0.name), $0.name) < (number($1.name), $1.name) }?.address
    }
}
