import BlueZ
import Bluetooth
import Config
import Testing
@testable import BridgeCoreLayer

/// The adapters' and BlueZ's half of the machine (docs/adapters.md, docs/adverts.md): BlueZ facts as values in,
/// reads, placement, discovery and sightings out, without a bench.
@Suite struct CoreMachineAdaptersTests {
    static let hci0 = AdapterInfo(path: "/org/bluez/hci0", properties: ["Powered": .bool(true)])

    static func begun(_ config: BridgeConfig, adapters: [AdapterInfo] = [hci0]) -> CoreMachine {
        var machine = CoreMachine(config: config)
        _ = machine.handle(.began(adapters: adapters, sighted: [], bluezAvailable: true))
        return machine
    }

    @Test func adapterFactsAreReadOneReadAtATimeAndTheLastReadFollowsTheLastFact() {
        var machine = Self.begun(CoreMachineTests.config([CoreMachineTests.device("a", 1)]), adapters: [])
        let reads = { (actions: [CoreMachine.Action]) in actions.count { $0 == .readAdapters } }
        #expect(reads(machine.handle(.bluez(.adapterAdded(Self.hci0)))) == 1)
        #expect(reads(machine.handle(.bluez(.adapterChanged(Self.hci0, changed: ["Powered"])))) == 0)
        #expect(reads(machine.handle(.bluez(.adapterChanged(Self.hci0, changed: ["Powered"])))) == 0)
        // The first read answers: facts came meanwhile, so once more; the session hears its adapter.
        let first = machine.handle(.adaptersRead([Self.hci0]))
        #expect(reads(first) == 1)
        #expect(first.contains(.sessionAdapter(device: "a", Self.hci0)))
        #expect(first.contains(.discovery(.reset)))          // an adapter powered on: discovery starts again
        #expect(reads(machine.handle(.adaptersRead([Self.hci0]))) == 0)
        #expect(machine.adapters.adapterRead == .idle)
    }

    @Test func bluetoothdLeavingAndReturningIsToldAndReadAgain() {
        var machine = Self.begun(CoreMachineTests.config([CoreMachineTests.device("a", 1)]))
        let gone = machine.handle(.bluez(.bluezVanished))
        #expect(gone.contains(.bluezAvailable(false)) && machine.adapters.adapterSet.present.isEmpty)
        let back = machine.handle(.bluez(.bluezAppeared))
        #expect(back.contains(.bluezAvailable(true)) && back.contains(.readAdapters))
        #expect(!back.contains(.discovery(.reset)))          // not before the adapters are known again
        let read = machine.handle(.adaptersRead([Self.hci0]))
        #expect(read.contains(.sessionAdapter(device: "a", Self.hci0)) && read.contains(.discovery(.reset)))
    }

    @Test func aPassiveDeviceHeardIsABroadcastAReadingOfItsSignalAndInAFleetASighting() throws {
        var passive = CoreMachineTests.device("p", 2)
        passive.channels = []
        passive.advert = .format(.bthome)
        var config = CoreMachineFleetTests.fleetConfig([passive])
        config.adverts.enabled = true
        var machine = Self.begun(config)
        let info = BridgeCoreTests.broadcaster(passive.address.description, adapter: "/org/bluez/hci0")
        let heard = machine.handle(.bluez(.deviceChanged(info, changed: ["RSSI", "ServiceData"])))
        #expect(heard.contains { if case .broadcast = $0 { true } else { false } })
        #expect(heard.contains(.passiveHeard(device: "p", rssi: -60)))
        #expect(heard.contains(.sighting(passive, -60)))
        // Told once: the same RSSI again is no news for the fleet.
        #expect(!machine.handle(.bluez(.deviceChanged(info, changed: ["RSSI"]))).contains(.sighting(passive, -60)))
        let dropped = machine.handle(.bluez(.deviceRemoved(path: info.path, address: passive.address)))
        #expect(dropped.contains(.sighting(passive, nil)))
    }

    /// The proxy's raw advertisements and the adverts feature share one scan: the same discovery interest, asked
    /// once per adapter whichever wants it, with every report asked for; a device heard is an advertisement only
    /// with a consumer.
    @Test(arguments: [(false, true), (true, true), (true, false)])
    func oneScanServesAdvertsAndTheProxy(_ adverts: Bool, _ consumer: Bool) {
        var config = CoreMachineTests.config([])
        config.adverts.enabled = adverts
        config.esphomeProxy.enabled = true
        var machine = CoreMachine(config: config, rawAdvertisementConsumer: consumer)
        let begun = machine.handle(.began(adapters: [Self.hci0], sighted: [], bluezAvailable: true))
        #expect(begun.count { $0 == .discovery(.want(adapterPath: Self.hci0.path)) } == 1)
        #expect(begun.contains(.discovery(.reportRepeats(true))))
        let info = BridgeCoreTests.thermometer(rssi: -70)
        let heard = machine.handle(.bluez(.deviceAdded(info)))
        #expect(heard.contains { if case .advertisement(let a) = $0 { a.rssi == -70 } else { false } } == consumer)
        var silent = info
        silent.rssi = nil
        #expect(!machine.handle(.bluez(.deviceChanged(silent, changed: ["Name"]))).contains {
            if case .advertisement = $0 { true } else { false }
        })
    }

    /// What BlueZ already holds when the core begins is an advertisement too: a still device is not reported again.
    @Test func theDevicesBlueZHoldsAtTheStartAreAdvertisements() {
        var config = CoreMachineTests.config([])
        config.esphomeProxy.enabled = true
        var machine = CoreMachine(config: config, rawAdvertisementConsumer: true)
        let begun = machine.handle(.began(adapters: [Self.hci0], sighted: [BridgeCoreTests.thermometer(rssi: -66)],
                                          bluezAvailable: true))
        #expect(begun.contains { if case .advertisement(let a) = $0 { a.rssi == -66 } else { false } })
    }

    /// A consumer with the proxy off in the config (its default) makes no scan and no advertisement.
    @Test func theProxyOffMakesNoScanForAConsumer() {
        let config = CoreMachineTests.config([])
        var machine = CoreMachine(config: config, rawAdvertisementConsumer: true)
        let begun = machine.handle(.began(adapters: [Self.hci0], sighted: [], bluezAvailable: true))
        #expect(!begun.contains(.discovery(.want(adapterPath: Self.hci0.path))))
        let heard = machine.handle(.bluez(.deviceAdded(BridgeCoreTests.thermometer(rssi: -70))))
        #expect(!heard.contains { if case .advertisement = $0 { true } else { false } })
    }

    @Test func aFailingAdapterWithADeviceMissingIsWokenOnceThenRecovered() {
        var machine = Self.begun(CoreMachineTests.config([CoreMachineTests.device("a", 1)]))
        let now = ContinuousClock.now
        var arms: [ContinuousClock.Instant] = []
        for offset in 0..<3 {
            let actions = machine.handle(.adapter(.operation(adapterPath: Self.hci0.path, error: "le-connection-abort-by-local")),
                                         now: now + .milliseconds(offset))
            for case .arm(_, let at) in actions { arms.append(at) }
        }
        #expect(arms == [now + .seconds(60)])             // the wedge window's end, armed once
        let due = machine.handle(.adapter(.tick(adapter: "hci0")), now: now + .seconds(61))
        #expect(due.contains(.runStep(.restartDiscovery, adapter: "hci0", path: Self.hci0.path)))
        #expect(machine.adapters.armedWakes.isEmpty)
    }
}
