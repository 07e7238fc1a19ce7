import BlueZ
import Bluetooth
import Codecs
import Config
import Testing
@testable import BridgeAdapters

/// The core's placement decisions: who hears of a change, and only of a change.
@Suite struct PlacementTests {
    func adapter(_ name: String, powered: Bool = true) -> AdapterInfo {
        AdapterInfo(path: "/org/bluez/\(name)", properties: ["Powered": .bool(powered)])
    }

    func device(_ n: Int, adapter: String? = nil) -> DeviceConfig {
        DeviceConfig(name: "d\(n)", address: BluetoothAddress("C0:FF:EE:00:00:0\(n)")!,
                     channels: [ChannelConfig(name: "c", characteristic: BluetoothUUID("2a19")!, codec: try! Codec(.hex))],
                     adapter: adapter)
    }

    func placement(_ adapters: [AdapterInfo], maxConnections: Int = 4) -> Placement {
        var set = AdapterSet(settings: BluetoothSettings(adapters: [
            AdapterSetting(name: "hci0", maxConnections: maxConnections)]), window: .seconds(60))
        set.update(adapters)
        return Placement(set: set)
    }

    func told(_ notices: [Placement.Notice]) -> [String: String] {
        var out: [String: String] = [:]
        for case .adapter(let device, let info) in notices { out[device] = info.map { "\($0.name) \($0.powered)" } ?? "none" }
        return out
    }

    @Test func aSessionHearsOfItsAdapterOnlyWhenItChanges() {
        let devices = [device(1, adapter: "hci0")]
        var p = placement([adapter("hci0")])
        p.set.watch(devices)
        let first = p.place(devices, sessions: ["d1"], fleet: false, listeningOnly: [])
        #expect(told(first) == ["d1": "hci0 true"])
        #expect(first.contains { if case .adapters = $0 { true } else { false } })
        #expect(p.place(devices, sessions: ["d1"], fleet: false, listeningOnly: []).isEmpty)    // nothing changed
        p.set.update([adapter("hci0", powered: false)])
        #expect(told(p.place(devices, sessions: ["d1"], fleet: false, listeningOnly: [])) == ["d1": "hci0 false"])
        p.bluezGone()
        #expect(told(p.place(devices, sessions: ["d1"], fleet: false, listeningOnly: [])).isEmpty)   // told "none" already
        p.set.update([adapter("hci0")])
        #expect(told(p.place(devices, sessions: ["d1"], fleet: false, listeningOnly: [])) == ["d1": "hci0 true"])
    }

    @Test func aNewSessionStartsWhereItIsPlacedAndIsNotToldTwice() {
        let devices = [device(1, adapter: "hci0")]
        var p = placement([adapter("hci0")])
        p.set.watch(devices)
        #expect(p.initialAdapter(for: "d1", devices, listeningOnly: [])?.name == "hci0")
        #expect(told(p.place(devices, sessions: ["d1"], fleet: false, listeningOnly: [])).isEmpty)
        p.forget(devices[0])
        #expect(p.toldAdapter["d1"] == nil)
    }

    @Test func theFleetHearsOfRoomOnlyWhenItChanges() {
        let devices = [device(1), device(2)]
        var p = placement([adapter("hci0")], maxConnections: 1)
        p.set.watch(devices)
        func rooms(_ notices: [Placement.Notice]) -> [String: Bool] {
            var out: [String: Bool] = [:]
            for case .room(let device, let room) in notices { out[device] = room }
            return out
        }
        #expect(rooms(p.place(devices, sessions: [], fleet: false, listeningOnly: [])).isEmpty)   // not a fleet
        let owned = rooms(p.place(devices, sessions: [], fleet: true, listeningOnly: ["d2"]))
        #expect(owned.keys.sorted() == ["d1", "d2"])
        #expect(rooms(p.place(devices, sessions: [], fleet: true, listeningOnly: ["d2"])).isEmpty)
    }
}
