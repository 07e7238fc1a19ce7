import Config
import MQTT
import Testing
@testable import BridgeFeatureHost
@testable import BridgeFleet

/// `FleetFeature`'s decisions, driven directly (docs/fleet.md).
@Suite struct FleetMachineTests {
    let now = ContinuousClock.now

    func fleetConfig(_ devices: [DeviceConfig], id: String = "a") -> BridgeConfig {
        var config = DiscoveryFixtures.config(devices, base: "b")
        config.fleet = FleetSettings(id: id, handoverAfter: .seconds(30))
        config.mqtt.bridgeID = id
        return config
    }

    func lamp() throws -> DeviceConfig {
        DiscoveryFixtures.device("lamp", "C0:FF:EE:00:00:03", [try DiscoveryFixtures.channel("led", .hex)])
    }

    func step(_ machine: inout FleetMachine, _ event: CoreEvent) -> [FleetMachine.Effect] {
        machine.handle(.event(event), now: now, unixNow: 1_700_000_000).filter {
            if case .trace = $0 { false } else { true }
        }
    }

    static func message(_ topic: String, _ text: String) -> MQTTMessage {
        MQTTMessage(topic: topic, string: text, qos: .atLeastOnce, retain: true)
    }

    @Test func aLoneBridgeSubscribesToNothing() throws {
        var machine = FleetMachine()
        #expect(step(&machine, .configApplied(old: nil, new: DiscoveryFixtures.config([try lamp()], base: "b"))).isEmpty)
        #expect(machine.machines.isEmpty)
    }

    @Test func theFleetsFiltersAreSubscribedOnceAndDroppedWhenLeaving() throws {
        var machine = FleetMachine()
        let config = fleetConfig([try lamp()])
        #expect(step(&machine, .configApplied(old: nil, new: config)) == [
            .subscribe("b/+/owner", retained: true), .subscribe("b/bridge/+/state", retained: true),
            .subscribe("b/+/owner/request", retained: false)])
        #expect(step(&machine, .configApplied(old: config, new: config)).isEmpty)
        #expect(step(&machine, .configApplied(old: config, new: DiscoveryFixtures.config([try lamp()], base: "b"))) == [
            .unsubscribe("b/+/owner"), .unsubscribe("b/bridge/+/state"), .unsubscribe("b/+/owner/request")])
    }

    @Test func aForgedOfflineOnItsOwnStateIsAnsweredAtOnceAndAvailabilityFollowsOnce() throws {
        var machine = FleetMachine()
        _ = step(&machine, .configApplied(old: nil, new: fleetConfig([try lamp()])))
        _ = step(&machine, .brokerConnected)
        let forged = step(&machine, .message(Self.message("b/bridge/a/state", "offline")))
        #expect(forged.contains(.publish(topic: "b/bridge/a/state", payload: "online", retain: true)))
        #expect(forged.contains(.schedule(at: now + FleetMachine.reassertDelay, .reassertAvailability)))
        let again = step(&machine, .message(Self.message("b/bridge/a/state", "offline")))
        #expect(!again.contains { if case .schedule = $0 { true } else { false } })
        #expect(machine.handle(.timer(.reassertAvailability), now: now, unixNow: 0) == [.republishAvailability])
        // Its own `online` is no news; another bridge's state goes to every device's machine.
        #expect(step(&machine, .message(Self.message("b/bridge/a/state", "online"))).isEmpty)
    }

    @Test func aDeviceRemovedWhileOwnedTakesItsRecordAlong() throws {
        var machine = FleetMachine()
        let config = fleetConfig([try lamp()])
        _ = step(&machine, .configApplied(old: nil, new: config))
        var timers = Self.timers(step(&machine, .brokerConnected))
        timers += Self.timers(step(&machine, .sighting(try lamp(), -60)))
        timers += Self.timers(step(&machine, .room(try lamp(), true)))
        // Nobody else claims it: listen, claim, hear its own record back, settle.
        var later = now
        for kind in [OwnershipTimer.listen, .claim, .settle] {
            later += .seconds(60)
            let timer = try #require(timers.last { if case .device(_, kind, _) = $0 { true } else { false } })
            let effects = machine.handle(.timer(timer), now: later, unixNow: 1_700_000_000)
            timers += Self.timers(effects)
            for case .publish(let topic, let payload, true) in effects where topic == "b/lamp/owner" {
                timers += Self.timers(step(&machine, .message(Self.message(topic, payload))))
            }
        }
        try #require(machine.machines["lamp"]?.owns == true)
        #expect(step(&machine, .configApplied(old: config, new: fleetConfig([]))).contains(
            .publish(topic: "b/lamp/owner", payload: "", retain: true)))
    }

    static func timers(_ effects: [FleetMachine.Effect]) -> [FleetMachine.Timer] {
        effects.compactMap { if case .schedule(_, let timer) = $0 { timer } else { nil } }
    }
}
