import BlueZ
import Bluetooth
import Config
import DBus
import MQTT
import Testing
@testable import BridgeModel
@testable import BridgeCoreLayer

/// The real `BridgeCore` in process, on fakes of its ports (`CoreFakes.swift`): the effects of its decisions
/// (sessions started and stopped, values and commands routed, holds, adapters, bluetoothd's comings and goings)
/// without a bus or a broker.
@Suite struct BridgeCoreTests {
    static func config(_ devices: [DeviceConfig]) -> BridgeConfig { testConfig(devices: devices) }

    @Test func sessionsStartValuesFlowAndCommandsReachTheirDevice() async throws {
        let lamp = try CoreFixtures.device("lamp", 1), strap = try CoreFixtures.device("strap", 2)
        try await CoreRig(Self.config([lamp, strap])).run { rig in
            try await eventually("both subscribed") {
                rig.bluez.isSubscribed(lamp.address) && rig.bluez.isSubscribed(strap.address)
            }
            try await eventually("both online") { rig.probe.online("lamp") == true && rig.probe.online("strap") == true }
            rig.bluez.notify(strap.address, [0x01, 0x02])
            try await eventually("the value published") { rig.published("b/strap/n") == ["0102"] }
            #expect(rig.core.latestValues(of: "strap")?.first { $0.channel == "n" }?.payload == "0102")
            #expect(rig.core.latestValues(of: "lamp")?.contains { $0.channel == "n" } == false)
            #expect(rig.core.latestValues(of: "nobody") == nil)
            #expect(rig.published("b/lamp/n").isEmpty)
            rig.command("b/lamp/led/set", "01")
            try await eventually("the write") { rig.bluez.writes(lamp.address) == [[0x01]] }
            #expect(rig.bluez.writes(strap.address).isEmpty)
            #expect(rig.link.filters.withLock { $0.contains("b/+/+/set") })
        }
    }

    /// The read model: one value with what the bridge knows, kept current as the facts arrive, and followed by
    /// readers without a turn of the core's loop.
    @Test func theReadModelFollowsTheFacts() async throws {
        let lamp = try CoreFixtures.device("lamp", 1), strap = try CoreFixtures.device("strap", 2, source: .api)
        try await CoreRig(Self.config([lamp, strap])).run { rig in
            var changes = rig.core.stateChanges().makeAsyncIterator()
            try await eventually("both online in the state") {
                rig.core.state.devices.map { "\($0.config.name) \($0.online) \($0.adapter ?? "-")" }
                    == ["lamp true hci0", "strap true hci0"] && rig.core.state.adapters.first?.connections == 2
            }
            let state = rig.core.state
            #expect(state.adapters.map(\.name) == ["hci0"])
            #expect(!state.isFleet && state.devices.allSatisfy { $0.owned && !$0.held && $0.lastSeen != nil })
            #expect(!state.brokerConnected && state.bluezAvailable)
            rig.core.brokerConnected()
            try await eventually("the broker in the state") { rig.core.state.brokerConnected }
            #expect(try #require(await changes.next()).version >= state.version)
            #expect(try await rig.core.updateDevices(.remove(name: "strap"))?.get().name == "strap")
            #expect(rig.core.state.devices.map(\.config.name) == ["lamp"])
            #expect(rig.core.state.version > state.version && rig.core.state.generation == 1)
            rig.bluez.vanish()
            rig.core.handle(.bluezVanished)
            try await eventually("bluetoothd gone, the lamp offline") {
                !rig.core.state.bluezAvailable && rig.core.state.device(named: "lamp")?.online == false
            }
        }
    }

    /// The 50 rounds of the reload/API race (docs/dev/ARCHITECTURE.md, "Config changes"), in process: each round a
    /// reload read before an API add and remove, all posted at once. Every change is answered, the API's changes are
    /// never undone by the older reload, and the sessions running are exactly the config's.
    @Test func fiftyInterleavedReloadsAndAPIChangesEndConsistent() async throws {
        let fixed = try CoreFixtures.device("fixed", 1), sometimes = try CoreFixtures.device("sometimes", 2)
        try await CoreRig(Self.config([fixed])).run { rig in
            for round in 0..<50 {
                let added = try CoreFixtures.device("api\(round)", 10 + round % 40, source: .api)
                let files = Self.config(round % 2 == 0 ? [fixed, sometimes] : [fixed])
                let basedOn = rig.core.running.generation
                async let reload: Void = rig.core.apply(files, basedOn: basedOn)
                async let add = rig.core.updateDevices(.add(added))
                let addResult = await add
                let removeResult = await rig.core.updateDevices(.remove(name: added.name))
                await reload
                #expect(try addResult?.get().name == added.name, "round \(round)")
                #expect(try removeResult?.get().name == added.name, "round \(round)")
                let names = Set(rig.core.running.config.devices.map(\.name))
                #expect(names == Set(round % 2 == 0 ? ["fixed", "sometimes"] : ["fixed"]), "round \(round)")
                #expect(Set(await rig.core.sessions.byName.keys) == names, "round \(round)")
            }
            // The device that came and went for good still runs: its session was never disturbed.
            rig.bluez.notify(fixed.address, [0x2A])
            try await eventually("fixed still publishes") { rig.published("b/fixed/n").last == "2a" }
        }
    }

    /// bluetoothd leaves: sessions go offline and wait; it comes back: discovery restarts and they reconnect.
    @Test func bluetoothdLeavingAndComingBack() async throws {
        let lamp = try CoreFixtures.device("lamp", 1)
        try await CoreRig(Self.config([lamp])).run { rig in
            try await eventually("online") { rig.probe.online("lamp") == true }
            let connectsBefore = rig.bluez.state.withLock { $0.connects.count }
            rig.bluez.vanish()
            rig.core.handle(.bluezVanished)
            try await eventually("offline") { rig.probe.online("lamp") == false }
            rig.bluez.appear()
            rig.core.handle(.adapterAdded(FakeGATT.adapter()))
            rig.core.handle(.bluezAppeared)
            try await eventually("online again") { rig.probe.online("lamp") == true }
            #expect(rig.bluez.state.withLock { $0.connects.count } > connectsBefore)
            #expect(rig.discovery.state.withLock { $0.resets } >= 1)
            rig.command("b/lamp/led/set", "01")
            try await eventually("a command after the return") { rig.bluez.writes(lamp.address) == [[0x01]] }
        }
    }

    /// What an adapter of the config hears reaches the features; another adapter's reports do not count.
    @Test func passiveSightingsReachTheFeaturesFromTheConfiguredAdapters() async throws {
        var config = Self.config([])
        config.adverts = AdvertSettings(enabled: true, auto: [.bthome], autoLimit: 10)
        config.bluetooth = BluetoothSettings(adapter: "hci0")
        let bluez = FakeBlueZ()
        bluez.state.withLock { $0.adapters.append(FakeGATT.adapter(path: "/org/bluez/hci1")) }
        try await CoreRig(config, bluez: bluez).run { rig in
            try await eventually("discovery kept on for broadcasts") {
                rig.discovery.state.withLock { $0.repeats && !($0.wanted[FakeGATT.adapterPath] ?? []).isEmpty }
            }
            let heard = Self.broadcaster("A4:C1:38:8D:18:B2", adapter: "/org/bluez/hci0")
            let elsewhere = Self.broadcaster("A4:C1:38:8D:18:B3", adapter: "/org/bluez/hci1")
            rig.core.handle(.deviceChanged(elsewhere, changed: ["ServiceData"]))
            rig.core.handle(.deviceChanged(heard, changed: ["ServiceData"]))
            try await eventually("the broadcast") {
                rig.probe.saw { if case .broadcast(let b) = $0 { b.address == heard.address } else { false } }
            }
            #expect(!rig.probe.saw { if case .broadcast(let b) = $0 { b.address == elsewhere.address } else { false } })
        }
    }

    /// The Bluetooth proxy (docs/home-assistant.md): enabled, with a feature that wants raw advertisements, discovery
    /// runs with adverts off, and a device heard with only a name and a UUID (no data: no broadcast) is an
    /// advertisement, its AD structures rebuilt, for every report that changes its RSSI or what it advertises, not for
    /// other changes.
    @Test func aDeviceHeardIsARawAdvertisementWhenAFeatureWantsThem() async throws {
        var config = Self.config([])
        config.esphomeProxy.enabled = true
        #expect(!config.adverts.enabled)
        try await CoreRig(config, rawAdvertisements: true).run { rig in
            try await eventually("discovery kept on for the proxy") {
                rig.discovery.state.withLock { $0.repeats && $0.wanted[FakeGATT.adapterPath] == [AdapterMachine.broadcastScanner] }
            }
            rig.core.handle(.deviceAdded(Self.thermometer(rssi: -71)))
            rig.core.handle(.deviceChanged(Self.thermometer(rssi: -72), changed: ["Connected"]))
            rig.core.handle(.deviceChanged(Self.thermometer(rssi: -73), changed: ["RSSI"]))
            try await eventually("the second advertisement") { Self.advertisements(rig).last?.rssi == -73 }
            let heard = Self.advertisements(rig)
            #expect(heard.map(\.rssi) == [-71, -73])
            #expect(heard.allSatisfy { $0.isRandom && $0.adapter == FakeGATT.adapterPath })
            #expect(heard.first?.address == BluetoothAddress("A4:C1:38:00:00:07"))
            // 16-bit UUID list 0x181A, complete local name (AdvertisementBytesTests checks these bytes against
            // Home Assistant's parser).
            #expect(heard.first?.data == [0x03, 0x03, 0x1A, 0x18, 0x0B, 0x09] + Array("LYWSD03MMC".utf8))
            #expect(!rig.probe.saw { if case .broadcast = $0 { true } else { false } })
        }
    }

    /// Without a feature that wants them, or with the proxy off, nothing is made, even with adverts on (one scan for
    /// both: the same discovery interest); a broadcast heard after the thermometer shows the events got through.
    @Test(arguments: [(false, true), (true, false)])
    func noRawAdvertisementsWithoutAFeatureThatWantsThemOrTheProxyOn(_ consumer: Bool, _ enabled: Bool) async throws {
        var config = Self.config([])
        config.adverts = AdvertSettings(enabled: true, auto: [], autoLimit: 10)
        config.esphomeProxy.enabled = enabled
        try await CoreRig(config, rawAdvertisements: consumer).run { rig in
            try await eventually("discovery kept on for broadcasts") {
                rig.discovery.state.withLock { $0.repeats && $0.wanted[FakeGATT.adapterPath] == [AdapterMachine.broadcastScanner] }
            }
            rig.core.handle(.deviceAdded(Self.thermometer(rssi: -71)))
            let sensor = Self.broadcaster("A4:C1:38:8D:18:B2", adapter: FakeGATT.adapterPath)
            rig.core.handle(.deviceChanged(sensor, changed: ["ServiceData"]))
            try await eventually("the broadcast") {
                rig.probe.saw { if case .broadcast(let b) = $0 { b.address == sensor.address } else { false } }
            }
            #expect(Self.advertisements(rig).isEmpty)
        }
    }

    static func thermometer(rssi: Int16) -> DeviceInfo {
        DeviceInfo(path: FakeGATT.adapterPath + "/dev_A4_C1_38_00_00_07", properties: [
            "Address": .string("A4:C1:38:00:00:07"), "AddressType": .string("random"),
            "Adapter": .objectPath(FakeGATT.adapterPath), "RSSI": .int16(rssi), "Name": .string("LYWSD03MMC"),
            "UUIDs": .array("s", [.string(BluetoothUUID(UInt16(0x181A)).uuidString)]),
        ])!
    }

    static func advertisements(_ rig: CoreRig) -> [HeardAdvertisement] {
        rig.probe.events.withLock { events in
            events.compactMap { if case .advertisement(let heard) = $0 { heard } else { nil } }
        }
    }

    /// Fleet (docs/fleet.md): commands that arrive while the device is held wait, and run in order once this bridge
    /// still owns it; had another bridge taken it, they would be dropped (it received them too).
    @Test func heldCommandsAreReplayedWhenTheHoldEndsInOwnership() async throws {
        var config = Self.config([try CoreFixtures.device("lamp", 1)])
        config.fleet = FleetSettings(id: "one")
        let address = CoreFixtures.address(1)
        try await CoreRig(config).run { rig in
            try await eventually("the probe's context") { rig.probe.context.withLock { $0 != nil } }
            let context = try #require(rig.probe.context.withLock { $0 })
            context.setOwnership("lamp", owned: true)
            try await eventually("owned and online") { rig.probe.online("lamp") == true }
            context.setHeld("lamp", held: true)
            try await eventually("held") { rig.probe.saw { if case .held(_, true) = $0 { true } else { false } } }
            #expect(rig.core.state.isFleet && rig.core.state.device(named: "lamp").map { $0.owned && $0.held } == true)
            rig.command("b/lamp/led/set", "01")
            rig.command("b/lamp/led/set", "02")
            _ = await rig.core.ping()
            // The router handed both to the core, which keeps them for the hold's end.
            #expect(await rig.core.machine.heldCommands["lamp"]?.map(\.payloadString) == ["01", "02"])
            #expect(rig.bluez.writes(address).isEmpty)
            context.setOwnership("lamp", owned: true)
            try await eventually("replayed in order") { rig.bluez.writes(address) == [[0x01], [0x02]] }

            context.setHeld("lamp", held: true)
            try await eventually("held again") {
                rig.probe.events.withLock { $0.filter { if case .held(_, true) = $0 { true } else { false } }.count } == 2
            }
            rig.command("b/lamp/led/set", "03")
            _ = await rig.core.ping()
            #expect(await rig.core.machine.heldCommands["lamp"]?.count == 1)
            context.setOwnership("lamp", owned: false)
            try await eventually("given up") { rig.probe.saw { if case .ownership(_, false) = $0 { true } else { false } } }
            _ = await rig.core.ping()
            #expect(await rig.core.machine.heldCommands["lamp"] == nil)
            #expect(rig.bluez.writes(address) == [[0x01], [0x02]])
        }
    }

    /// An adapter through which every connect fails for the wedge window is wedged: its recovery ladder starts, and
    /// a device that may use any adapter moves to the healthy one and comes online there.
    @Test func aWedgedAdapterFailsOverToTheHealthyOne() async throws {
        let lamp = try CoreFixtures.device("lamp", 1)
        let bluez = FakeBlueZ()
        let other = "/org/bluez/hci1"
        bluez.state.withLock { s in
            s.adapters.append(FakeGATT.adapter(path: other))
            s.failingAdapters = [FakeGATT.adapterPath]
        }
        try await CoreRig(Self.config([lamp]), bluez: bluez, wedgeWindow: .milliseconds(300)).run { rig in
            // Discovery hears the lamp through both radios, hci0 louder.
            for (adapter, rssi) in [(FakeGATT.adapterPath, Int16(-50)), (other, -70)] {
                rig.core.handle(.deviceAdded(DeviceInfo(path: FakeBlueZ.devicePath(lamp.address, adapter: adapter), properties: [
                    "Address": .string(lamp.address.description), "Adapter": .objectPath(adapter), "RSSI": .int16(rssi)])!))
            }
            try await eventually("online through hci1") {
                rig.probe.online("lamp") == true && rig.bluez.isSubscribed(lamp.address, adapter: other)
            }
            #expect(rig.bluez.state.withLock { $0.connects.contains { $0.hasPrefix(FakeGATT.adapterPath + "/") } })
            try await eventually("hci0's recovery step announced") {
                rig.probe.saw { if case .adapterRecovery("hci0", "restart_discovery", _) = $0 { true } else { false } }
            }
            #expect(rig.discovery.state.withLock { $0.restarts }.contains(FakeGATT.adapterPath))
        }
    }

    static func broadcaster(_ address: String, adapter: String) -> DeviceInfo {
        DeviceInfo(path: adapter + "/dev_" + address.split(separator: ":").joined(separator: "_"), properties: [
            "Address": .string(address), "Adapter": .objectPath(adapter), "RSSI": .int16(-60),
            "ServiceData": .stringDict([BluetoothUUID(UInt16(0xFCD2)).uuidString: .bytes([0x40, 0x02, 0xCA, 0x09])]),
        ])!
    }
}
