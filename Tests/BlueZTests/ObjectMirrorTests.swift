import Bluetooth
import DBus
import Testing
@testable import BlueZ

struct ObjectMirrorTests {
    static let adapter = "/org/bluez/hci0"
    static let device = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"
    static let service = device + "/service000a"
    static let characteristic = service + "/char000b"

    static func snapshot() -> [String: ObjectMirror.Interfaces] {
        [
            adapter: ["org.bluez.Adapter1": ["Address": .string("00:00:00:00:00:01"), "Powered": .bool(true)],
                      "org.freedesktop.DBus.Introspectable": [:]],
            device: ["org.bluez.Device1": ["Address": .string("C0:FF:EE:00:00:01"), "Connected": .bool(false)]],
        ]
    }

    static let gatt: [String: ObjectMirror.Interfaces] = [
        service: ["org.bluez.GattService1": ["UUID": .string("0000180d-0000-1000-8000-00805f9b34fb")]],
        characteristic: ["org.bluez.GattCharacteristic1": ["UUID": .string("00002a37-0000-1000-8000-00805f9b34fb"),
                                                           "Flags": .array("s", [.string("notify")])]],
    ]

    @Test func snapshotReportsAdditions() {
        var mirror = ObjectMirror()
        let events = mirror.replace(with: Self.snapshot())
        #expect(events.count == 2)
        guard case .adapterAdded(let adapter) = events[0], case .deviceAdded(let device) = events[1] else {
            Issue.record("unexpected events \(events)")
            return
        }
        #expect(adapter.name == "hci0" && adapter.powered)
        #expect(device.address == BluetoothAddress("C0:FF:EE:00:00:01"))
        #expect(mirror.adapters.count == 1)
        #expect(mirror.devices.count == 1)
    }

    @Test func propertyChangesUpdateAndNameWhatChanged() throws {
        var mirror = ObjectMirror()
        _ = mirror.replace(with: Self.snapshot())
        let events = mirror.propertiesChanged(path: Self.device, interface: "org.bluez.Device1",
                                              changed: ["Connected": .bool(true), "RSSI": .int16(-40)], invalidated: ["Name"])
        #expect(events.count == 1)
        guard case .deviceChanged(let device, let changed) = try #require(events.first) else {
            Issue.record("unexpected \(events)")
            return
        }
        #expect(changed == ["Connected", "RSSI", "Name"])
        #expect(device.connected && device.rssi == -40)
        #expect(mirror.device(Self.device)?.connected == true)
        // Unknown objects and interfaces are ignored rather than invented.
        #expect(mirror.propertiesChanged(path: "/nope", interface: "org.bluez.Device1", changed: ["Connected": .bool(true)],
                                         invalidated: []).isEmpty)
        #expect(mirror.device("/nope") == nil)
    }

    /// Only what the typed views read is kept: a broadcaster's Modalias, Class or Appearance would otherwise
    /// cost memory per device and an event per change that nothing reads.
    @Test func propertiesNoViewReadsAreNotStoredOrReported() throws {
        var mirror = ObjectMirror()
        _ = mirror.replace(with: Self.snapshot())
        _ = mirror.interfacesAdded(path: Self.device, interfaces: [
            "org.bluez.Device1": ["Address": .string("C0:FF:EE:00:00:01"), "Modalias": .string("usb:v1D6Bp0246d0537"),
                                  "Class": .uint32(0x240404), "RSSI": .int16(-50)],
            "org.bluez.Battery1": ["Percentage": .byte(80)],
        ])
        #expect(mirror.properties(Self.device, "org.bluez.Device1")?.keys.sorted() == ["Address", "RSSI"])
        // An interface no view reads is kept as present (so its removal is still seen), without its properties.
        #expect(mirror.properties(Self.device, "org.bluez.Battery1")?.isEmpty == true)
        #expect(mirror.properties(Self.adapter, "org.freedesktop.DBus.Introspectable")?.isEmpty == true)
        #expect(mirror.propertiesChanged(path: Self.device, interface: "org.bluez.Device1",
                                         changed: ["Appearance": .uint16(0x0300), "Modalias": .string("x")],
                                         invalidated: ["Icon"]).isEmpty)
        let events = mirror.propertiesChanged(path: Self.device, interface: "org.bluez.Device1",
                                              changed: ["RSSI": .int16(-60), "Icon": .string("thermometer")],
                                              invalidated: [])
        guard case .deviceChanged(let device, let changed) = try #require(events.first) else {
            Issue.record("unexpected \(events)")
            return
        }
        #expect(changed == ["RSSI"] && device.rssi == -60)
        #expect(mirror.properties(Self.device, "org.bluez.Device1")?["Icon"] == nil)
    }

    @Test func characteristicValueIsNotStoredOrReported() throws {
        var mirror = ObjectMirror()
        _ = mirror.replace(with: Self.snapshot())
        let added = mirror.interfacesAdded(path: Self.characteristic, interfaces: [
            "org.bluez.GattCharacteristic1": ["UUID": .string("2a37"), "Value": .bytes([1])],
        ])
        #expect(added == [.gattAdded(path: Self.characteristic, devicePath: Self.device)])
        #expect(mirror.properties(Self.characteristic, "org.bluez.GattCharacteristic1")?["Value"] == nil)
        #expect(mirror.propertiesChanged(path: Self.characteristic, interface: "org.bluez.GattCharacteristic1",
                                         changed: ["Value": .bytes([2])], invalidated: []).isEmpty)
        let notifying = mirror.propertiesChanged(path: Self.characteristic, interface: "org.bluez.GattCharacteristic1",
                                                 changed: ["Notifying": .bool(true)], invalidated: [])
        #expect(notifying.isEmpty)
        #expect(mirror.characteristic(Self.characteristic)?.notifying == true)
    }

    @Test func gattTreeFromMirror() {
        var mirror = ObjectMirror()
        var snapshot = Self.snapshot()
        snapshot.merge(Self.gatt) { $1 }
        let events = mirror.replace(with: snapshot)
        #expect(events.filter { if case .gattAdded = $0 { true } else { false } }.count == 2)
        let tree = mirror.gattTree(device: Self.device)
        #expect(tree.services.count == 1)
        #expect(tree.services[0].characteristics.map(\.info.path) == [Self.characteristic])
        #expect(mirror.gattTree(device: "/org/bluez/hci0/dev_C0_FF_EE_00_00_02").isEmpty)
    }

    @Test func removingADeviceTakesItsChildren() {
        var mirror = ObjectMirror()
        var snapshot = Self.snapshot()
        snapshot.merge(Self.gatt) { $1 }
        _ = mirror.replace(with: snapshot)
        let events = mirror.interfacesRemoved(path: Self.device, interfaces: ["org.bluez.Device1"])
        #expect(events == [
            .deviceRemoved(path: Self.device, address: BluetoothAddress("C0:FF:EE:00:00:01")!),
            .gattRemoved(path: Self.characteristic, devicePath: Self.device),
            .gattRemoved(path: Self.service, devicePath: Self.device),
        ])
        #expect(mirror.devices.isEmpty)
        #expect(mirror.objects.keys.sorted() == [Self.adapter])
    }

    @Test func removingOneInterfaceKeepsTheObject() {
        var mirror = ObjectMirror()
        _ = mirror.replace(with: Self.snapshot())
        #expect(mirror.interfacesRemoved(path: Self.adapter, interfaces: ["org.freedesktop.DBus.Introspectable"]).isEmpty)
        #expect(mirror.adapters.count == 1)
        #expect(mirror.interfacesRemoved(path: "/unknown", interfaces: ["org.bluez.Device1"]).isEmpty)
    }

    @Test func clearReportsEverythingDeepestFirst() {
        var mirror = ObjectMirror()
        var snapshot = Self.snapshot()
        snapshot.merge(Self.gatt) { $1 }
        _ = mirror.replace(with: snapshot)
        let events = mirror.clear()
        #expect(events == [
            .gattRemoved(path: Self.characteristic, devicePath: Self.device),
            .gattRemoved(path: Self.service, devicePath: Self.device),
            .deviceRemoved(path: Self.device, address: BluetoothAddress("C0:FF:EE:00:00:01")!),
            .adapterRemoved(path: Self.adapter),
        ])
        #expect(mirror.objects.isEmpty)
    }

    @Test func replaceDropsObjectsMissingFromTheNewSnapshot() {
        var mirror = ObjectMirror()
        var first = Self.snapshot()
        first.merge(Self.gatt) { $1 }
        _ = mirror.replace(with: first)
        let events = mirror.replace(with: [Self.adapter: Self.snapshot()[Self.adapter]!])
        #expect(events.last == .adapterAdded(AdapterInfo(path: Self.adapter, properties: ["Address": .string("00:00:00:00:00:01"),
                                                                                        "Powered": .bool(true)])))
        #expect(events.contains(.deviceRemoved(path: Self.device, address: BluetoothAddress("C0:FF:EE:00:00:01")!)))
        #expect(mirror.devices.isEmpty)
        #expect(mirror.objects.count == 1)
    }
}

struct ObjectMirrorReplayTests {
    /// After a resync, signals queued before the snapshot are applied again; they must not double-report objects.
    @Test func replayedAdditionBecomesAChangeOrNothing() {
        var mirror = ObjectMirror()
        var snapshot = ObjectMirrorTests.snapshot()
        snapshot.merge(ObjectMirrorTests.gatt) { $1 }
        _ = mirror.replace(with: snapshot)
        let same = mirror.interfacesAdded(path: ObjectMirrorTests.device, interfaces: snapshot[ObjectMirrorTests.device]!)
        #expect(same.isEmpty)
        #expect(mirror.interfacesAdded(path: ObjectMirrorTests.characteristic,
                                       interfaces: snapshot[ObjectMirrorTests.characteristic]!).isEmpty)
        let changed = mirror.interfacesAdded(path: ObjectMirrorTests.device, interfaces: [
            "org.bluez.Device1": ["Address": .string("C0:FF:EE:00:00:01"), "Connected": .bool(true)],
        ])
        guard case .deviceChanged(let device, let names)? = changed.first else {
            Issue.record("expected deviceChanged, got \(changed)")
            return
        }
        #expect(names == ["Connected"])
        #expect(device.connected)
    }
}
