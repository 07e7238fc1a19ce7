import BlueZ
import Bluetooth
import Codecs
import Config
import Testing
@testable import BridgeAdapters
@testable import BridgeCoreLayer

@Suite struct AdapterSetTests {
    func adapter(_ name: String, powered: Bool = true) -> AdapterInfo {
        AdapterInfo(path: "/org/bluez/\(name)", properties: ["Powered": .bool(powered)])
    }

    func device(_ n: Int, adapter: String? = nil) throws -> DeviceConfig {
        DeviceConfig(name: "d\(n)", address: BluetoothAddress("C0:FF:EE:00:00:0\(n)")!,
                     channels: [ChannelConfig(name: "c", characteristic: BluetoothUUID("2a19")!, codec: try Codec(.hex))],
                     adapter: adapter)
    }

    @Test func maxConnectionsSendsTheSecondDeviceToTheOtherAdapter() throws {
        var set = AdapterSet(settings: BluetoothSettings(adapters: [AdapterSetting(name: "hci0", maxConnections: 1),
                                                                    AdapterSetting(name: "hci1", maxConnections: 1)]),
                             window: .seconds(60))
        set.update([adapter("hci0"), adapter("hci1"), adapter("hci2")])
        #expect(set.present.keys.sorted() == ["hci0", "hci1"])     // hci2 is not listed
        let devices = [try device(1), try device(2), try device(3)]
        let now = ContinuousClock.now
        set.watch(devices)
        for n in 1...3 { set.saw(devices[n - 1].address, adapter: "hci0", rssi: -40, at: now) }
        #expect(set.place(devices) == ["d1", "d2"])
        #expect(set.placed == ["d1": "hci0", "d2": "hci1"])          // d3: both adapters full
        #expect(set.adapter(of: "d3") == nil)
    }

    /// A passive device (`advert:`, no channels) never connects: it takes no slot, even when a fleet owns it (so it
    /// is not listening-only), and the connected device beside it keeps the adapter's one slot.
    @Test func aPassiveDeviceTakesNoSlot() throws {
        var set = AdapterSet(settings: BluetoothSettings(adapters: [AdapterSetting(name: "hci0", maxConnections: 1)]),
                             window: .seconds(60))
        set.update([adapter("hci0")])
        var balcony = DeviceConfig(name: "balcony", address: BluetoothAddress("A4:C1:38:0B:72:01")!, channels: [])
        balcony.advert = .format(.bthome)
        let strap = try device(1)
        #expect(set.place([balcony, strap]) == ["d1"])
        #expect(set.placed == ["d1": "hci0"])
        #expect(set.hasRoom(for: strap, listeningOnly: []))
    }

    /// Broadcasts and passive devices' sightings count only from the adapters the config uses: on a host with
    /// several bridges, each on its own adapter, the others' reports must not become this bridge's RSSI.
    @Test func usesOnlyThePathsOfTheConfiguredAdapters() {
        var set = AdapterSet(settings: BluetoothSettings(adapters: [AdapterSetting(name: "hci1")]), window: .seconds(60))
        set.update([adapter("hci0"), adapter("hci1"), adapter("hci2")])
        #expect(set.uses(adapterPath: "/org/bluez/hci1"))
        #expect(!set.uses(adapterPath: "/org/bluez/hci0"))
        #expect(!set.uses(adapterPath: "/org/bluez/hci2"))
        #expect(!set.uses(adapterPath: ""))
        set.update([adapter("hci0")])                 // hci1 went away
        #expect(!set.uses(adapterPath: "/org/bluez/hci1"))
    }

    /// Fleet: a device another bridge owns only listens, so it takes no slot, and a full adapter still listens for
    /// it (otherwise no bridge with a full radio would hear it, and the fleet would never claim it).
    @Test func listeningOnlyDevicesTakeNoSlotAndAreStillPlaced() throws {
        var set = AdapterSet(settings: BluetoothSettings(adapters: [AdapterSetting(name: "hci0", maxConnections: 1)]),
                             window: .seconds(60))
        set.update([adapter("hci0")])
        let devices = [try device(1), try device(2), try device(3)]
        set.watch(devices)
        #expect(set.place(devices, listeningOnly: ["d1", "d3"]).sorted() == ["d1", "d2", "d3"])
        #expect(set.placed == ["d1": "hci0", "d2": "hci0", "d3": "hci0"])
        // d3 is claimed while d2 is connected: d2 keeps the one slot, d3 waits for a free one.
        set.setOnline("d2", true)
        _ = set.place(devices, listeningOnly: ["d1"])
        #expect(set.placed == ["d1": "hci0", "d2": "hci0"])
    }

    /// The Bluetooth proxy's links take an adapter's slots as devices do: a device goes where there is room beside
    /// them, and none is left when they fill the adapter.
    @Test func theProxysLinksTakeAnAdaptersSlots() throws {
        var set = AdapterSet(settings: BluetoothSettings(adapters: [AdapterSetting(name: "hci0", maxConnections: 2),
                                                                    AdapterSetting(name: "hci1", maxConnections: 1)]),
                             window: .seconds(60))
        set.update([adapter("hci0"), adapter("hci1")])
        let devices = [try device(1), try device(2)]
        set.watch(devices)
        set.external = ["hci0": 2]
        _ = set.place(devices)
        #expect(set.placed["d1"] == "hci1" || set.placed["d2"] == "hci1")
        #expect(!set.placed.values.contains("hci0"))
        set.external = ["hci0": 2, "hci1": 1]
        #expect(!set.hasRoom(for: try device(3), listeningOnly: []))
        set.external = [:]
        #expect(set.hasRoom(for: try device(3), listeningOnly: []))
    }

    /// Fleet: a bridge claims a device only when it would get a slot for it; the devices it only listens for do not
    /// count, one already holding a slot has room where it is, and a pinned device only counts its own adapter.
    @Test func roomForADeviceCountsOnlyTheDevicesThatConnect() throws {
        var set = AdapterSet(settings: BluetoothSettings(adapters: [AdapterSetting(name: "hci0", maxConnections: 1),
                                                                    AdapterSetting(name: "hci1", maxConnections: 1)]),
                             window: .seconds(60))
        set.update([adapter("hci0"), adapter("hci1", powered: false)])
        let devices = [try device(1), try device(2), try device(3, adapter: "hci1")]
        set.watch(devices)
        _ = set.place(devices, listeningOnly: ["d2", "d3"])         // d1 owned: it takes hci0's one slot
        #expect(set.hasRoom(for: devices[0], listeningOnly: ["d2", "d3"]))
        #expect(!set.hasRoom(for: devices[1], listeningOnly: ["d2", "d3"]))   // hci1 is off, hci0 full
        #expect(!set.hasRoom(for: devices[2], listeningOnly: ["d2", "d3"]))   // pinned to the powered-off hci1
        #expect(set.hasRoom(for: devices[1], listeningOnly: ["d1", "d2", "d3"]))   // d1 given up: the slot is free
        set.update([adapter("hci0"), adapter("hci1")])
        #expect(set.hasRoom(for: devices[1], listeningOnly: ["d2", "d3"]))
        #expect(set.hasRoom(for: devices[2], listeningOnly: ["d2", "d3"]))
    }

    @Test func aPoweredOffAdapterLosesItsOfflineAndOnlineDevices() throws {
        var set = AdapterSet(settings: BluetoothSettings(), window: .seconds(60))
        set.update([adapter("hci0"), adapter("hci1")])
        let devices = [try device(1), try device(2, adapter: "hci0")]
        let now = ContinuousClock.now
        set.watch(devices)
        set.saw(devices[0].address, adapter: "hci0", rssi: -40, at: now)
        set.saw(devices[0].address, adapter: "hci1", rssi: -70, at: now)
        _ = set.place(devices)
        #expect(set.placed == ["d1": "hci0", "d2": "hci0"])
        set.setOnline("d1", true)
        // A stronger sighting elsewhere does not move a device that is online.
        set.saw(devices[0].address, adapter: "hci1", rssi: -20, at: now)
        #expect(set.place(devices) == [])
        set.update([adapter("hci0", powered: false), adapter("hci1")])
        #expect(set.place(devices) == ["d1"])
        #expect(set.placed == ["d1": "hci1", "d2": "hci0"])          // the pinned one waits for hci0
        #expect(set.adapter(of: "d2")?.powered == false)
    }

    @Test func aWedgedAdapterIsAvoidedAndReportedAsRecovering() throws {
        var set = AdapterSet(settings: BluetoothSettings(), window: .seconds(60))
        set.update([adapter("hci0"), adapter("hci1")])
        let devices = [try device(1)]
        let t0 = ContinuousClock.now
        set.watch(devices)
        set.saw(devices[0].address, adapter: "hci0", rssi: -40, at: t0)
        _ = set.place(devices)
        #expect(set.missing(on: "hci0"))
        _ = set.feed("hci0", .operationFailed("Connect: Failed"), now: t0)
        #expect(set.feed("hci0", .tick, now: t0 + .seconds(60)).contains(.run(.restartDiscovery)))
        #expect(set.place(devices) == ["d1"])
        #expect(set.placed["d1"] == "hci1")
        let status = set.statuses.first { $0.name == "hci0" }
        #expect(status?.state == .recovering)
        #expect(status?.recoveries == 1)
        #expect(status?.lastError == "Connect: Failed")
        #expect(AdapterStatus.json(set.statuses).serialized.contains(#""state":"recovering""#))
    }

    /// The soak's race: the device of a wedged adapter is heard by the other one after the head start and fails over
    /// before the window ends. The wedged adapter must still be healed, and be usable again after its power cycle.
    @Test func anAdapterWhoseMissingDeviceFailedOverIsStillHealed() throws {
        var set = AdapterSet(settings: BluetoothSettings(), window: .seconds(10))
        set.update([adapter("hci0"), adapter("hci1")])
        let devices = [try device(1)]
        let t0 = ContinuousClock.now
        set.watch(devices)
        set.saw(devices[0].address, adapter: "hci0", rssi: -40, at: t0)
        _ = set.place(devices)
        _ = set.feed("hci0", .operationFailed("StartDiscovery: Failed"), now: t0)
        // hci0 hears nothing more; hci1 hears the device and it goes there, and comes online.
        set.lostSight(devices[0].address, adapter: "hci0")
        set.saw(devices[0].address, adapter: "hci1", rssi: -50, at: t0 + .seconds(9))
        #expect(set.place(devices, now: t0 + .seconds(9)) == ["d1"])
        set.setOnline("d1", true)
        #expect(set.missing(on: "hci0"))
        #expect(set.feed("hci0", .tick, now: t0 + .seconds(10)).contains(.run(.restartDiscovery)))
        _ = set.feed("hci0", .stepFinished(.restartDiscovery, ok: false, error: "Failed"), now: t0 + .seconds(10))
        let actions = set.feed("hci0", .stepFinished(.powerCycle, ok: true, error: nil), now: t0 + .seconds(11))
        #expect(actions == [.announce(.powerCycle, ok: true), .changed])
        #expect(set.statuses.first { $0.name == "hci0" }?.state == .ok)
        #expect(!set.missing(on: "hci0"))
    }

    /// The soak's stalled wedge recovery: around a power cycle the adapter powers off (its device moves to the other
    /// one), is back a few milliseconds later with the freshest sighting, and the other radio's discovery reports the
    /// device again. Placed anew on each fact, the device bounced between the radios, every bounce a Disconnect and a
    /// Connect racing in bluetoothd. It stays where it was just placed while that adapter is usable.
    @Test func aDeviceJustMovedOffAPowerCycledAdapterIsNotBouncedBack() throws {
        var set = AdapterSet(settings: BluetoothSettings(), window: .seconds(10))
        set.update([adapter("hci0"), adapter("hci1")])
        let devices = [try device(1)]
        let t0 = ContinuousClock.now
        set.watch(devices)
        set.saw(devices[0].address, adapter: "hci1", rssi: -50, at: t0)            // hci1 heard it long ago
        set.saw(devices[0].address, adapter: "hci0", rssi: -50, at: t0 + .seconds(60))
        _ = set.place(devices, now: t0 + .seconds(60))
        #expect(set.placed["d1"] == "hci0")
        set.update([adapter("hci0", powered: false), adapter("hci1")])
        #expect(set.place(devices, now: t0 + .seconds(61)) == ["d1"])               // off: it goes at once
        #expect(set.placed["d1"] == "hci1")
        set.update([adapter("hci0"), adapter("hci1")])
        set.saw(devices[0].address, adapter: "hci0", rssi: -50, at: t0 + .milliseconds(61_005))
        #expect(set.place(devices, now: t0 + .milliseconds(61_010)) == [])          // back: no bounce
        #expect(set.placed["d1"] == "hci1")
        // A clearly stronger radio still takes it at once.
        set.saw(devices[0].address, adapter: "hci0", rssi: -30, at: t0 + .milliseconds(61_020))
        #expect(set.place(devices, now: t0 + .milliseconds(61_020)) == ["d1"])
        #expect(set.placed["d1"] == "hci0")
    }

    @Test func aSettledDeviceThatIsNotConnectedGoesWhereItIsHeard() throws {
        var set = AdapterSet(settings: BluetoothSettings(), window: .seconds(10))
        set.update([adapter("hci0"), adapter("hci1")])
        let devices = [try device(1)]
        let t0 = ContinuousClock.now
        set.watch(devices)
        _ = set.place(devices, now: t0)
        #expect(set.placed["d1"] == "hci0")
        set.saw(devices[0].address, adapter: "hci1", rssi: -50, at: t0 + .seconds(1))
        #expect(set.place(devices, now: t0 + .seconds(1)) == [])
        #expect(set.place(devices, now: t0 + AdapterSet.settle) == ["d1"])
        #expect(set.placed["d1"] == "hci1")
    }

    /// A device that leaves an adapter whose operations work (a stronger radio heard it) is no evidence of a wedge.
    @Test func aDeviceLeavingAWorkingAdapterLeavesNoWedgeBehind() throws {
        var set = AdapterSet(settings: BluetoothSettings(), window: .seconds(10))
        set.update([adapter("hci0"), adapter("hci1")])
        let devices = [try device(1)]
        let t0 = ContinuousClock.now
        set.watch(devices)
        set.saw(devices[0].address, adapter: "hci0", rssi: -60, at: t0)
        _ = set.place(devices)
        set.saw(devices[0].address, adapter: "hci1", rssi: -30, at: t0 + .seconds(1))
        #expect(set.place(devices) == ["d1"])
        set.setOnline("d1", true)
        #expect(!set.missing(on: "hci0"))
        _ = set.feed("hci0", .operationFailed("StartDiscovery: InProgress"), now: t0 + .seconds(2))
        #expect(set.feed("hci0", .tick, now: t0 + .seconds(30)) == [])
    }
}

@Suite struct WedgeWindowTests {
    @Test func sixtySecondsUnlessTheBenchShortensIt() {
        #expect(BridgeCore.wedgeWindow(nil) == .seconds(60))
        #expect(BridgeCore.wedgeWindow("2.5") == .milliseconds(2500))
        #expect(BridgeCore.wedgeWindow("0") == .seconds(60))
        #expect(BridgeCore.wedgeWindow("soon") == .seconds(60))
        #expect(BridgeCore.wedgeWindow("100000") == .seconds(60))
    }
}

@Suite struct AdapterSightingTests {
    @Test func onlySavedDevicesAreRemembered() throws {
        var set = AdapterSet(settings: BluetoothSettings(), window: .seconds(60))
        set.update([AdapterInfo(path: "/org/bluez/hci0", properties: ["Powered": .bool(true)]),
                    AdapterInfo(path: "/org/bluez/hci1", properties: ["Powered": .bool(true)])])
        let saved = DeviceConfig(name: "d", address: BluetoothAddress("C0:FF:EE:00:00:01")!,
                                 channels: [ChannelConfig(name: "c", characteristic: BluetoothUUID("2a19")!,
                                                          codec: try Codec(.hex))])
        set.watch([saved])
        let now = ContinuousClock.now
        // A stranger seen strongly by hci1 changes nothing; the saved device seen by hci1 goes there.
        set.saw(BluetoothAddress("11:22:33:44:55:66")!, adapter: "hci1", rssi: -20, at: now)
        #expect(set.place([saved], now: now) == ["d"])
        #expect(set.placed["d"] == "hci0")
        set.saw(saved.address, adapter: "hci1", rssi: -50, at: now)
        #expect(set.place([saved], now: now + AdapterSet.settle) == ["d"])
        #expect(set.placed["d"] == "hci1")
    }
}
