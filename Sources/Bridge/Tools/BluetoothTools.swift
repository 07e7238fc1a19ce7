import BlueZ
import Bluetooth

/// What the bridge API needs from BlueZ (docs/bridge-api.md `scan`, `inspect`, `health`, the listing's adapters): a
/// narrow interface, so the feature holds no `BlueZClient`. `BlueZTools` is the real one, over the same
/// `Tools/DeviceTools` as the CLI.
protocol BluetoothTools: Sendable {
    func adapters() async -> [AdapterInfo]
    var isAvailable: Bool { get async }
    /// The adapter called `name` (nil: the default one), if it is there and powered.
    func poweredAdapter(_ name: String?) async -> AdapterInfo?
    func scan(adapter: AdapterInfo, services: [BluetoothUUID], duration: Duration, requester: String) async -> ScanResults
    func inspect(adapter: AdapterInfo, address: BluetoothAddress, timeout: Duration,
                 requester: String) async throws(DeviceTools.InspectFailure) -> GattReport
}

struct BlueZTools: BluetoothTools {
    let bluez: BlueZClient
    /// Discovery is shared with the sessions (`DiscoveryCoordinator`): a scan joins theirs instead of fighting it.
    let discovery: any DiscoveryControl

    func adapters() async -> [AdapterInfo] { await bluez.adapters() }

    var isAvailable: Bool { get async { await bluez.isAvailable } }

    func poweredAdapter(_ name: String?) async -> AdapterInfo? {
        guard let adapter = try? await bluez.adapter(name), adapter.powered else { return nil }
        return adapter
    }

    func scan(adapter: AdapterInfo, services: [BluetoothUUID], duration: Duration, requester: String) async -> ScanResults {
        await DeviceTools.scan(bluez: bluez, adapter: adapter, services: services, duration: duration,
                               discovery: discovery, requester: requester)
    }

    func inspect(adapter: AdapterInfo, address: BluetoothAddress, timeout: Duration,
                 requester: String) async throws(DeviceTools.InspectFailure) -> GattReport {
        try await DeviceTools.inspect(bluez: bluez, adapter: adapter, address: address, timeout: timeout,
                                      discovery: discovery, requester: requester)
    }
}
