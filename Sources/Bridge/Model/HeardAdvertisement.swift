import BlueZ
import Bluetooth

/// One advertisement as one adapter heard it, as raw AD structures: what the Home Assistant Bluetooth proxy
/// forwards (docs/dev/esphome-proxy.md). Unlike `HeardBroadcast` it is made for every device with an RSSI, not only
/// those with service or manufacturer data: Home Assistant matches integrations on names and UUIDs too.
public struct HeardAdvertisement: Sendable, Equatable {
    public var address: BluetoothAddress
    /// BlueZ's `AddressType` "random" (ESPHome's `address_type` 1); public otherwise.
    public var isRandom: Bool
    /// The adapter's object path (`/org/bluez/hci0`).
    public var adapter: String
    public var rssi: Int
    /// The AD structures `AdvertisementBytes` rebuilt from BlueZ's fields, at most `AdvertisementBytes.maxLength`.
    public var data: [UInt8]

    public init(address: BluetoothAddress, isRandom: Bool, adapter: String, rssi: Int, data: [UInt8]) {
        self.address = address
        self.isRandom = isRandom
        self.adapter = adapter
        self.rssi = rssi
        self.data = data
    }

    /// Nil without an RSSI: a raw advertisement needs one, and a device object without it (one BlueZ remembers
    /// from before, not heard in this scan) was not heard now.
    public init?(_ device: DeviceInfo) {
        guard let rssi = device.rssi else { return nil }
        self.init(address: device.address, isRandom: device.addressType == "random", adapter: device.adapterPath,
                  rssi: rssi,
                  data: AdvertisementBytes.build(flags: device.advertisingFlags, name: device.name, uuids: device.uuids,
                                                 serviceData: device.serviceData,
                                                 manufacturerData: device.manufacturerData, txPower: device.txPower,
                                                 other: device.advertisingData))
    }
}
