import BlueZ
import BridgeSession
import MQTT

/// The core's ports: what `BridgeCore` needs of the world, each as narrow as its use. The daemon plugs in
/// `BlueZClient`, `DiscoveryCoordinator` and `MQTTLink`; the unit tests plug in fakes and drive the real core in
/// process (Tests/BridgeTests/Core), which the concrete types made impossible.

/// BlueZ as the core sees it: the sessions' GATT work, the adapters and devices bluetoothd knows, whether it is
/// there at all, and powering an adapter off and on (a recovery step, docs/adapters.md).
public protocol BluetoothPort: GATTClient {
    func adapters() async -> [AdapterInfo]
    /// Every device BlueZ knows (nil: on any adapter); the core reads their RSSI at start.
    func devices(adapter: String?) async -> [DeviceInfo]
    var isAvailable: Bool { get async }
    func setPowered(_ powered: Bool, adapter path: String, timeout: Duration) async throws(BlueZError)
}

extension BlueZClient: BluetoothPort {}

/// Discovery as the core drives it: the sessions' wants (`DiscoveryControl`), plus what adapter health and passive
/// broadcasts need: every report or the first of each device, a restart after bluetoothd or an adapter came back,
/// a restart as a recovery probe, and every StartDiscovery's result.
public protocol DiscoveryPort: DiscoveryControl {
    /// Every StartDiscovery's result (adapter path, error or nil); one consumer (the core).
    var outcomes: AsyncStream<(adapter: String, error: String?)> { get }
    func reportRepeats(_ on: Bool)
    /// Discovery that ran is gone (bluetoothd restarted, an adapter came back): start again for whoever waits.
    func reset()
    /// Stops and starts discovery on the adapter; the error, or nil when it started.
    func restart(adapter: String) async -> String?
}

extension DiscoveryCoordinator: DiscoveryPort {}
