import BridgeAdapters
import Bluetooth
import BridgeModel
import BridgeSession
import Config
import MQTT

/// What the core tells its features. Features react to these and publish through their `FeatureContext`; none of
/// them reaches into the core, the sessions or the MQTT client.
///
/// Values (notifications, reads) are deliberately not events: they go straight from the D-Bus loop thread to the
/// broker, and fanning each one out to every feature would put an allocation and a thread hop on the hot path.
///
/// `indirect`: the payloads are boxed once and shared by every feature's stream. Inline, the largest case (two
/// configs) made each queued event 785 bytes, copied into every feature's buffer, and a stream's buffer keeps the
/// capacity of its longest queue: a flood of broker messages left megabytes of buffer behind in each feature.
public indirect enum CoreEvent: Sendable {
    /// The core started (`old` nil) or a reload applied a new config; sessions of changed devices are already
    /// stopped and new ones started.
    case configApplied(old: BridgeConfig?, new: BridgeConfig)
    /// The broker (re)connected: retained state it may have lost is due again.
    case brokerConnected
    case brokerDisconnected
    /// The MQTT client lost messages for good (buffer full, shut down while unsent, oversize received).
    case messagesDropped(MQTTDropReport)
    case availability(DeviceConfig, online: Bool)
    case rssi(DeviceConfig, Int)
    case deviceEvent(DeviceConfig, BridgeEvent)
    /// A device left the config (removed or changed): its retained topics under `topics` should be cleared.
    case deviceRemoved(DeviceConfig, topics: BridgeTopics)
    case identified(DeviceConfig, DeviceIdentity)
    /// A command was not carried out.
    case rejected(CommandRejection)
    /// A command with reply targets completed.
    case completed(DeviceCommand)
    /// A message on a topic filter this feature subscribed to.
    case message(MQTTMessage)
    /// Fleet (docs/fleet.md): this bridge's own sighting of a device, owned or not (`rssi` is only for owned devices);
    /// nil when BlueZ dropped the device (not heard for a while).
    case sighting(DeviceConfig, Int?)
    /// Fleet: this bridge took (`owned`) or gave up a device.
    case ownership(DeviceConfig, owned: Bool)
    /// Fleet: an owned device is held (`OwnershipAction.hold`): its availability is not said until the hold ends
    /// (`false`) or, if the hold ends in a release, until this bridge owns it again.
    case held(DeviceConfig, Bool)
    /// Fleet: a device given up is disconnected and its offline said; the release can be published.
    case released(DeviceConfig)
    /// Fleet: whether this bridge has a connection slot for the device, should it own it (`AdapterSet.hasRoom`).
    case room(DeviceConfig, Bool)
    /// Passive (docs/adverts.md): an advertisement one adapter heard, when `adverts.enabled`; for any broadcaster,
    /// saved or not (the adverts feature decides what it is).
    case broadcast(HeardBroadcast)
    /// The Bluetooth proxy (docs/dev/esphome-proxy.md): every device an adapter of the config heard with an RSSI, as
    /// raw AD structures; only while a feature wants them (`BridgeFeature.wantsRawAdvertisements`), and only to those.
    case advertisement(HeardAdvertisement)
    /// The Bluetooth proxy: a device's `Connected` turned (BlueZ's word on any link, the proxy's own included), or
    /// the device object went (`connected` false); to the same features as `advertisement`.
    case link(address: BluetoothAddress, adapter: String, connected: Bool)
    /// The Bluetooth proxy: BlueZ dropped the device's object (not heard for a while, or removed); to the same features.
    case unheard(BluetoothAddress)
    /// Passive (docs/adverts.md, "Re-arming"): the bridge API's `device/rearm`: the device's encryption counters are
    /// to be believed from their next value on.
    case rearm(DeviceConfig)
    /// The bridge is shutting down; the broker connection is still up.
    case stopping
    /// The adapters' states (docs/adapters.md `B/bridge/adapters`) or where devices are placed (device name → adapter) changed.
    case adapters([AdapterStatus], placement: [String: String])
    /// A recovery step on a wedged adapter finished (`adapter_recovery` on `B/bridge/event`).
    case adapterRecovery(adapter: String, step: String, ok: Bool)
}
