import Bluetooth

/// What changed in BlueZ's object tree, in the order BlueZ reported it.
///
/// When bluetoothd goes away every known object is reported removed before `.bluezVanished`;
/// when it (re)appears the new objects are reported added before `.bluezAppeared`, so a consumer
/// that only follows per-object events still ends up with the right picture.
public enum BlueZEvent: Sendable, Equatable {
    case bluezAppeared
    case bluezVanished
    case adapterAdded(AdapterInfo)
    case adapterRemoved(path: String)
    case adapterChanged(AdapterInfo, changed: Set<String>)
    case deviceAdded(DeviceInfo)
    case deviceRemoved(path: String, address: BluetoothAddress)
    /// `changed` holds the names of changed and invalidated properties.
    case deviceChanged(DeviceInfo, changed: Set<String>)
    /// BlueZ's `Device1.Disconnected(reason, message)` signal (BlueZ ≥ 5.82); `Connected` turning false is the portable signal.
    case deviceDisconnected(path: String, reason: String, message: String)
    /// A GATT service, characteristic or descriptor object appeared under a device.
    case gattAdded(path: String, devicePath: String)
    case gattRemoved(path: String, devicePath: String)
}
