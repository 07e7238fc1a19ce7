import Bluetooth
import DBus
import Testing
@testable import BlueZ

struct DeviceInfoTests {
    static let path = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"

    static func properties() -> [String: DBusValue] {
        [
            "Address": .string("C0:FF:EE:00:00:01"),
            "AddressType": .string("random"),
            "Name": .string("HRM"),
            "Alias": .string("HRM"),
            "Adapter": .objectPath("/org/bluez/hci0"),
            "RSSI": .int16(-61),
            "TxPower": .int16(4),
            "UUIDs": .array("s", [.string("0000180d-0000-1000-8000-00805f9b34fb"), .string("0000180f-0000-1000-8000-00805f9b34fb")]),
            "ServiceData": .stringDict(["0000180f-0000-1000-8000-00805f9b34fb": .bytes([0x64])]),
            "ManufacturerData": .dictionary(key: "q", value: "v", [
                DBusDictEntry(key: .uint16(0x0059), value: .variant(.bytes([1, 2, 3]))),
            ]),
            "Connected": .bool(true),
            "ServicesResolved": .bool(false),
            "Paired": .bool(true),
            "Trusted": .bool(false),
        ]
    }

    @Test func parsesAllProperties() throws {
        let device = try #require(DeviceInfo(path: Self.path, properties: Self.properties()))
        #expect(device.address == BluetoothAddress("C0:FF:EE:00:00:01"))
        #expect(device.adapterPath == "/org/bluez/hci0")
        #expect(device.addressType == "random")
        #expect(device.name == "HRM")
        #expect(device.rssi == -61)
        #expect(device.txPower == 4)
        #expect(device.uuids == [BluetoothUUID(UInt16(0x180D)), BluetoothUUID(UInt16(0x180F))])
        #expect(device.serviceData == [BluetoothUUID(UInt16(0x180F)): [0x64]])
        #expect(device.manufacturerData == [0x0059: [1, 2, 3]])
        #expect(device.connected)
        #expect(!device.servicesResolved)
        #expect(device.paired)
        #expect(!device.trusted)
    }

    @Test func propertiesStillWrappedInVariantsParse() throws {
        var properties = Self.properties().mapValues { DBusValue.variant($0) }
        properties["ManufacturerData"] = .variant(Self.properties()["ManufacturerData"]!)
        let device = try #require(DeviceInfo(path: Self.path, properties: properties))
        #expect(device.rssi == -61)
        #expect(device.manufacturerData == [0x0059: [1, 2, 3]])
    }

    @Test func minimalDeviceUsesDefaults() throws {
        let device = try #require(DeviceInfo(path: Self.path, properties: ["Address": .string("c0:ff:ee:00:00:01")]))
        #expect(device.adapterPath == "/org/bluez/hci0")
        #expect(device.name == nil)
        #expect(device.rssi == nil)
        #expect(device.uuids.isEmpty)
        #expect(device.serviceData.isEmpty)
        #expect(device.manufacturerData.isEmpty)
        #expect(!device.connected)
    }

    @Test func withoutAddressThereIsNoDevice() {
        #expect(DeviceInfo(path: Self.path, properties: ["Name": .string("x")]) == nil)
        #expect(DeviceInfo(path: Self.path, properties: ["Address": .string("nonsense")]) == nil)
    }

    @Test func bluezooStringKeyedManufacturerData() {
        let value = DBusValue.stringDict(["89": .bytes([9])])
        #expect(DeviceInfo.parseManufacturerData(value) == [89: [9]])
    }

    /// BlueZ's `AdvertisingFlags` (`ay`) and `AdvertisingData` (`a{yv}`); BlueZoo's empty `ay` and string-keyed,
    /// empty `a{sv}` are no flags and no data; a key that is no byte is skipped.
    @Test func advertisingFlagsAndData() throws {
        var properties = Self.properties()
        properties["AdvertisingFlags"] = .variant(.bytes([0x06]))
        properties["AdvertisingData"] = .dictionary(key: "y", value: "v", [
            DBusDictEntry(key: .byte(0x26), value: .variant(.bytes([0x01, 0x01]))),
            DBusDictEntry(key: .byte(0x2A), value: .variant(.string("no bytes"))),
        ])
        let device = try #require(DeviceInfo(path: Self.path, properties: properties))
        #expect(device.advertisingFlags == [0x06])
        #expect(device.advertisingData == [0x26: [0x01, 0x01]])
        properties["AdvertisingFlags"] = .bytes([])
        properties["AdvertisingData"] = .stringDict([:])
        let bluezoo = try #require(DeviceInfo(path: Self.path, properties: properties))
        #expect(bluezoo.advertisingFlags == nil && bluezoo.advertisingData.isEmpty)
        #expect(DeviceInfo.parseAdvertisingData(.stringDict(["38": .bytes([1]), "300": .bytes([2])])) == [38: [1]])
        #expect(try #require(DeviceInfo(path: Self.path, properties: Self.properties())).advertisingFlags == nil)
    }

    @Test func adapterInfo() {
        let adapter = AdapterInfo(path: "/org/bluez/hci1", properties: [
            "Address": .string("00:00:00:00:00:02"), "Powered": .bool(true), "Discovering": .bool(false), "Alias": .string("bench"),
        ])
        #expect(adapter.name == "hci1")
        #expect(adapter.address == BluetoothAddress("00:00:00:00:00:02"))
        #expect(adapter.powered)
        #expect(!adapter.discovering)
        #expect(adapter.alias == "bench")
    }
}
