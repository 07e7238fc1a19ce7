import BlueZ
import Bluetooth
import BridgeSession

/// What the bridge API needs from BlueZ (docs/bridge-api.md `scan`, `inspect`, `health`, the listing's adapters): a
/// narrow interface, so the feature holds no `BlueZClient`. `BlueZTools` is the real one, over the same
/// `Tools/DeviceTools` as the CLI.
package protocol BluetoothTools: Sendable {
    func adapters() async -> [AdapterInfo]
    var isAvailable: Bool { get async }
    /// The adapter called `name` (nil: the default one), if it is there and powered.
    func poweredAdapter(_ name: String?) async -> AdapterInfo?
    func scan(adapter: AdapterInfo, services: [BluetoothUUID], duration: Duration, requester: String) async -> ScanResults
    func inspect(adapter: AdapterInfo, address: BluetoothAddress, timeout: Duration,
                 requester: String) async throws(DeviceTools.InspectFailure) -> GattReport
}

package struct BlueZTools: BluetoothTools {
    package init(bluez: BlueZClient, discovery: any DiscoveryControl) {
        self.bluez = bluez
        self.discovery = discovery
    }

    let bluez: BlueZClient
    /// Discovery is shared with the sessions (`DiscoveryCoordinator`): a scan joins theirs instead of fighting it.
    let discovery: any DiscoveryControl

    package func adapters() async -> [AdapterInfo] { await bluez.adapters() }

    package var isAvailable: Bool { get async { await bluez.isAvailable } }

    package func poweredAdapter(_ name: String?) async -> AdapterInfo? {
        guard let adapter = try? await bluez.adapter(name), adapter.powered else { return nil }
        return adapter
    }

    package func scan(adapter: AdapterInfo, services: [BluetoothUUID], duration: Duration,
                      requester: String) async -> ScanResults {
        await DeviceTools.scan(bluez: bluez, adapter: adapter, services: services, duration: duration,
                               discovery: discovery, requester: requester)
    }

    package func inspect(adapter: AdapterInfo, address: BluetoothAddress, timeout: Duration,
                 requester: String) async throws(DeviceTools.InspectFailure) -> GattReport {
        try await DeviceTools.inspect(bluez: bluez, adapter: adapter, address: address, timeout: timeout,
                                      discovery: discovery, requester: requester)
    }
}
