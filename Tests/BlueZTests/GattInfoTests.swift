import Bluetooth
import DBus
import Testing
@testable import BlueZ

struct GattInfoTests {
    static let device = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"

    static func service(_ n: String, _ uuid: String) -> (String, [String: DBusValue]) {
        ("\(device)/service\(n)", ["UUID": .string(uuid), "Device": .objectPath(device), "Primary": .bool(true)])
    }

    static func characteristic(_ service: String, _ n: String, _ uuid: String, flags: [String],
                               extra: [String: DBusValue] = [:]) -> (String, [String: DBusValue]) {
        var properties: [String: DBusValue] = [
            "UUID": .string(uuid), "Service": .objectPath("\(device)/service\(service)"),
            "Flags": .array("s", flags.map { .string($0) }), "Notifying": .bool(false),
        ]
        properties.merge(extra) { $1 }
        return ("\(device)/service\(service)/char\(n)", properties)
    }

    @Test func characteristicProperties() throws {
        let (path, properties) = Self.characteristic("000a", "000b", "00002a37-0000-1000-8000-00805f9b34fb",
                                                     flags: ["notify"], extra: ["MTU": .uint16(247), "NotifyAcquired": .bool(false)])
        let info = try #require(GattCharacteristicInfo(path: path, properties: properties))
        #expect(info.uuid == BluetoothUUID("2a37"))
        #expect(info.servicePath == "\(Self.device)/service000a")
        #expect(info.devicePath == Self.device)
        #expect(info.flags == ["notify"])
        #expect(info.canNotify && !info.canRead && !info.canWrite && !info.canWriteWithoutResponse)
        #expect(info.mtu == 247)
        #expect(info.notifyAcquired == false)
        #expect(info.writeAcquired == nil)
        #expect(!info.notifying)
    }

    @Test func characteristicWithoutOptionalProperties() throws {
        let info = try #require(GattCharacteristicInfo(path: "\(Self.device)/service0001/char0002",
                                                       properties: ["UUID": .string("ffe1")]))
        #expect(info.servicePath == "\(Self.device)/service0001")
        #expect(info.mtu == nil)
        #expect(info.notifyAcquired == nil)
        #expect(info.flags.isEmpty)
        #expect(GattCharacteristicInfo(path: "/x", properties: [:]) == nil)
    }

    @Test func treeIsOrderedAndSearchable() throws {
        let services = [Self.service("0010", "0000180f-0000-1000-8000-00805f9b34fb"),
                        Self.service("000a", "0000180d-0000-1000-8000-00805f9b34fb")]
            .compactMap { GattServiceInfo(path: $0.0, properties: $0.1) }
        let characteristics = [
            Self.characteristic("0010", "0011", "00002a19-0000-1000-8000-00805f9b34fb", flags: ["read", "notify"]),
            Self.characteristic("000a", "000e", "00002a38-0000-1000-8000-00805f9b34fb", flags: ["read"]),
            Self.characteristic("000a", "000b", "00002a37-0000-1000-8000-00805f9b34fb", flags: ["notify"]),
            // Same UUID in another service, to check the service filter.
            Self.characteristic("0010", "0014", "00002a38-0000-1000-8000-00805f9b34fb", flags: ["read"]),
        ].compactMap { GattCharacteristicInfo(path: $0.0, properties: $0.1) }
        let descriptor = try #require(GattDescriptorInfo(path: "\(Self.device)/service000a/char000b/desc000d",
                                                         properties: ["UUID": .string("00002902-0000-1000-8000-00805f9b34fb")]))
        let tree = GattTree(services: services, characteristics: characteristics, descriptors: [descriptor])

        #expect(tree.services.map(\.info.uuid) == [BluetoothUUID("180d"), BluetoothUUID("180f")])
        #expect(tree.services[0].characteristics.map(\.info.uuid) == [BluetoothUUID("2a37"), BluetoothUUID("2a38")])
        #expect(tree.services[0].characteristics[0].descriptors.map(\.uuid) == [BluetoothUUID("2902")])
        #expect(descriptor.characteristicPath == "\(Self.device)/service000a/char000b")

        #expect(tree.characteristic(BluetoothUUID("2a38")!)?.path == "\(Self.device)/service000a/char000e")
        #expect(tree.characteristic(BluetoothUUID("2a38")!, service: BluetoothUUID("180f"))?.path
                == "\(Self.device)/service0010/char0014")
        #expect(tree.characteristic(BluetoothUUID("2a37")!, service: BluetoothUUID("180f")) == nil)
        #expect(tree.characteristic(BluetoothUUID("2a00")!) == nil)
    }

    @Test func objectPathHelpers() {
        let char = "\(Self.device)/service000a/char000b"
        #expect(ObjectPath.device(of: char) == Self.device)
        #expect(ObjectPath.device(of: Self.device) == Self.device)
        #expect(ObjectPath.device(of: "/org/bluez/hci0") == nil)
        #expect(ObjectPath.adapter(of: char) == "/org/bluez/hci0")
        #expect(ObjectPath.lastComponent(of: "/org/bluez/hci0") == "hci0")
        #expect(ObjectPath.isDescendant(char, of: Self.device))
        #expect(!ObjectPath.isDescendant("/org/bluez/hci0/dev_C0_FF_EE_00_00_011", of: Self.device))
    }

    @Test func discoveryFilterArguments() throws {
        let filter = DiscoveryFilter(uuids: [BluetoothUUID("180d")!], duplicateData: true, pattern: "C0:FF")
        let dict = try #require(filter.dbusValue.stringDict)
        #expect(filter.dbusValue.signature == "a{sv}")
        #expect(dict["Transport"] == .string("le"))
        #expect(dict["DuplicateData"] == .bool(true))
        #expect(dict["Pattern"] == .string("C0:FF"))
        #expect(dict["UUIDs"] == .array("s", [.string("0000180d-0000-1000-8000-00805f9b34fb")]))
        #expect(dict["RSSI"] == nil)
        #expect(DiscoveryFilter().dbusValue.stringDict?.keys.sorted() == ["DuplicateData", "Transport"])
    }
}
