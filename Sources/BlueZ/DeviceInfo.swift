import Bluetooth
import DBus

/// A snapshot of one `org.bluez.Device1` object.
public struct DeviceInfo: Sendable, Equatable {
    public var path: String
    public var adapterPath: String
    public var address: BluetoothAddress
    /// "public" or "random".
    public var addressType: String?
    public var name: String?
    /// BlueZ falls back to the address (with dashes) when the device has no name.
    public var alias: String?
    public var rssi: Int?
    public var txPower: Int?
    public var uuids: [BluetoothUUID]
    public var serviceData: [BluetoothUUID: [UInt8]]
    public var manufacturerData: [UInt16: [UInt8]]
    /// The advertisement's Flags AD byte(s) (`AdvertisingFlags`, `ay`); nil when BlueZ has none (older BlueZ,
    /// BlueZoo reports it empty).
    public var advertisingFlags: [UInt8]?
    /// AD type → data for the types bluetoothd does not parse itself (`AdvertisingData`, `a{yv}`); BlueZoo
    /// declares it `a{sv}` and leaves it empty. With the parsed fields, what `AdvertisementBytes` rebuilds the
    /// advertisement from.
    public var advertisingData: [UInt8: [UInt8]]
    public var connected: Bool
    public var servicesResolved: Bool
    public var paired: Bool
    /// Paired with keys stored (BlueZ ≥ 5.62 reports `Bonded`); false on older BlueZ that lacks the property.
    public var bonded: Bool
    public var trusted: Bool

    /// Nil when the object has no parsable Address (BlueZ always sets one; a broken peer might not).
    public init?(path: String, properties: [String: DBusValue]) {
        guard let address = properties["Address"]?.string.flatMap(BluetoothAddress.init) else { return nil }
        self.path = path
        self.address = address
        adapterPath = properties["Adapter"]?.string ?? ObjectPath.adapter(of: path) ?? ""
        addressType = properties["AddressType"]?.string
        name = properties["Name"]?.string
        alias = properties["Alias"]?.string
        // 127 is HCI's "RSSI not available" (btvirt reports it); it is no reading.
        rssi = properties["RSSI"]?.int.flatMap { $0 == 127 ? nil : $0 }
        txPower = properties["TxPower"]?.int
        uuids = (properties["UUIDs"]?.array ?? []).compactMap { $0.string.flatMap(BluetoothUUID.init) }
        serviceData = Self.parseServiceData(properties["ServiceData"])
        manufacturerData = Self.parseManufacturerData(properties["ManufacturerData"])
        advertisingFlags = properties["AdvertisingFlags"]?.bytes.flatMap { $0.isEmpty ? nil : $0 }
        advertisingData = Self.parseAdvertisingData(properties["AdvertisingData"])
        connected = properties["Connected"]?.bool ?? false
        servicesResolved = properties["ServicesResolved"]?.bool ?? false
        paired = properties["Paired"]?.bool ?? false
        bonded = properties["Bonded"]?.bool ?? false
        trusted = properties["Trusted"]?.bool ?? false
    }

    /// `a{sv}` of UUID string → variant(ay).
    static func parseServiceData(_ value: DBusValue?) -> [BluetoothUUID: [UInt8]] {
        var result: [BluetoothUUID: [UInt8]] = [:]
        for (key, data) in value?.stringDict ?? [:] {
            guard let uuid = BluetoothUUID(key), let bytes = data.bytes else { continue }
            result[uuid] = bytes
        }
        return result
    }

    /// `a{yv}` of AD type → variant(ay); string keys holding a number are accepted as for manufacturer data.
    static func parseAdvertisingData(_ value: DBusValue?) -> [UInt8: [UInt8]] {
        guard case .dictionary(_, _, let entries)? = value?.unwrapped, !entries.isEmpty else { return [:] }
        var result: [UInt8: [UInt8]] = [:]
        for entry in entries {
            let key = entry.key.int ?? entry.key.string.flatMap { UInt8($0) }.map(Int.init)
            guard let key, let type = UInt8(exactly: key), let bytes = entry.value.bytes else { continue }
            result[type] = bytes
        }
        return result
    }

    /// `a{qv}` of company id → variant(ay). BlueZoo declares it `a{sv}`, so string keys holding a number are accepted too.
    static func parseManufacturerData(_ value: DBusValue?) -> [UInt16: [UInt8]] {
        guard case .dictionary(_, _, let entries)? = value?.unwrapped else { return [:] }
        var result: [UInt16: [UInt8]] = [:]
        for entry in entries {
            let id = entry.key.int ?? entry.key.string.flatMap { UInt16($0) }.map(Int.init)
            guard let id, let company = UInt16(exactly: id), let bytes = entry.value.bytes else { continue }
            result[company] = bytes
        }
        return result
    }
}
