import Testing
@testable import DBus

@Suite struct SignalPayloadsTests {
    @Test func propertiesChanged() throws {
        let message = DBusMessage(kind: .signal, path: "/org/bluez/hci0/dev_1/service0001/char0002",
                                  interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                                  body: [.string("org.bluez.GattCharacteristic1"),
                                         .stringDict(["Value": .bytes([1, 2])]),
                                         .array("s", [.string("Notifying")])])
        let payload = try #require(PropertiesChanged(message))
        #expect(payload.path == "/org/bluez/hci0/dev_1/service0001/char0002")
        #expect(payload.interface == "org.bluez.GattCharacteristic1")
        #expect(payload.changed["Value"]?.bytes == [1, 2])
        #expect(payload.invalidated == ["Notifying"])
        #expect(PropertiesChanged(DBusMessage(kind: .signal, interface: "x", member: "PropertiesChanged")) == nil)
    }

    @Test func interfacesAddedAndRemoved() throws {
        let added = DBusMessage(kind: .signal, path: "/", interface: "org.freedesktop.DBus.ObjectManager",
                                member: "InterfacesAdded",
                                body: [.objectPath("/org/bluez/hci0/dev_1"), .dictionary(key: "s", value: "a{sv}", [
                                    DBusDictEntry(key: .string("org.bluez.Device1"),
                                                  value: .stringDict(["Address": .string("AA:BB:CC:DD:EE:FF")])),
                                ])])
        let payload = try #require(InterfacesAdded(added))
        #expect(payload.objectPath == "/org/bluez/hci0/dev_1")
        #expect(payload.interfaces["org.bluez.Device1"]?["Address"] == .string("AA:BB:CC:DD:EE:FF"))

        let removed = DBusMessage(kind: .signal, path: "/", interface: "org.freedesktop.DBus.ObjectManager",
                                  member: "InterfacesRemoved",
                                  body: [.objectPath("/org/bluez/hci0/dev_1"), .array("s", [.string("org.bluez.Device1")])])
        let removedPayload = try #require(InterfacesRemoved(removed))
        #expect(removedPayload.interfaces == ["org.bluez.Device1"])
        #expect(InterfacesRemoved(added) == nil)
    }

    @Test func nameOwnerChanged() throws {
        let message = DBusMessage(kind: .signal, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                  member: "NameOwnerChanged", sender: "org.freedesktop.DBus",
                                  body: [.string("org.bluez"), .string(":1.4"), .string("")])
        let payload = try #require(NameOwnerChanged(message))
        #expect(payload.name == "org.bluez")
        #expect(payload.oldOwner == ":1.4")
        #expect(payload.newOwner == "")
    }
}
