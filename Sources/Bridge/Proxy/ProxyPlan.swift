import BridgeAdapters
import Config
import ESPHomeAPI

/// What the proxy's server is made from, out of the config and the adapters: equal plans, the same server. Nil while
/// the proxy is off or no adapter has an address yet (the proxy's identity is its first adapter's).
struct ProxyPlan: Equatable {
    var settings: ESPHomeProxySettings
    var stateDir: String
    var listen: String
    var macAddress: String
    var identity: APISession.Identity

    init?(config: BridgeConfig, adapters: [AdapterStatus], version: String) {
        let settings = config.esphomeProxy
        guard settings.enabled else { return nil }
        let configured = (config.bluetooth.adapters ?? []).map(\.name)
        guard let address = ProxyIdentity.firstAdapterAddress(
            configured: configured, adapters: adapters.map { ($0.name, $0.address) }) else { return nil }
        self.settings = settings
        stateDir = config.stateDir
        listen = "\(settings.listen)"
        macAddress = address.uppercased()
        identity = ProxyIdentity.session(
            settings: settings, friendlyName: config.fleet?.id ?? FleetSettings.defaultID, version: version,
            macAddress: macAddress, webPort: config.web.enabled ? config.web.listen.port : nil,
            encrypted: settings.encryption)
    }

    /// Running while an adapter scans; idle otherwise (BlueZ's discovery is stopped or the adapter is off).
    static func scannerState(_ adapters: [AdapterStatus]) -> APIMessage.BluetoothScannerState {
        adapters.contains { $0.powered && $0.discovering } ? .running : .idle
    }
}
