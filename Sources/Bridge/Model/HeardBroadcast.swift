import Adverts
import BlueZ
import Bluetooth

/// One advertisement as one adapter heard it (BlueZ's `Device1` after a scan report): what the passive half of the
/// bridge decodes (docs/adverts.md). The same broadcast heard by two adapters arrives twice, once per adapter.
public struct HeardBroadcast: Sendable, Equatable {
    public var address: BluetoothAddress
    /// The adapter's object path (`/org/bluez/hci0`).
    public var adapter: String
    public var rssi: Int?
    /// The advertised local name, if any (some formats tell models apart by it).
    public var name: String?
    public var broadcast: Broadcast

    public init(address: BluetoothAddress, adapter: String, rssi: Int?, name: String?, broadcast: Broadcast) {
        self.address = address
        self.adapter = adapter
        self.rssi = rssi
        self.name = name
        self.broadcast = broadcast
    }

    /// Nil when the device object carries neither service nor manufacturer data (nothing to decode).
    public init?(_ device: DeviceInfo) {
        guard !device.serviceData.isEmpty || !device.manufacturerData.isEmpty else { return nil }
        let serviceData = device.serviceData.sorted { $0.key.uuidString < $1.key.uuidString }
            .map { Broadcast.ServiceData(uuid: $0.key, bytes: $0.value) }
        let manufacturerData = device.manufacturerData.sorted { $0.key < $1.key }
            .map { Broadcast.ManufacturerData(company: $0.key, bytes: $0.value) }
        self.init(address: device.address, adapter: device.adapterPath, rssi: device.rssi,
                  name: device.name,
                  broadcast: Broadcast(address: device.address, name: device.name, serviceData: serviceData,
                                       manufacturerData: manufacturerData))
    }
}
