import Config
import MQTT
import Testing
@testable import BridgeAdverts

/// The start-up sweep (docs/adverts.md) without a broker: what it reads, for how long, and what it clears.
@Suite struct AdvertSweepTests {
    static func retained(_ topic: String, _ payload: String = "online") -> MQTTMessage {
        MQTTMessage(topic: topic, string: payload, qos: .atLeastOnce, retain: true)
    }

    @Test func aSweepReadsForOneWindowAndAnEarlierSweepsEndLeavesALaterOneAlone() {
        var sweep = AdvertSweep()
        let first = sweep.start(discovery: nil, base: "b", fleet: false)
        #expect(first == [.subscribe("b/+/availability"), .endAfter(AdvertSweep.window, number: 1)])
        let second = sweep.start(discovery: nil, base: "b", fleet: false)
        #expect(second.first == .unsubscribe("b/+/availability") && second.last == .endAfter(AdvertSweep.window, number: 2))
        #expect(sweep.end(1).isEmpty && sweep.isRunning)
        #expect(sweep.end(2) == [.unsubscribe("b/+/availability")] && !sweep.isRunning)
        // A fleet's leftovers may be another bridge's; without Home Assistant there is then nothing to read.
        #expect(sweep.start(discovery: nil, base: "b", fleet: true).isEmpty && !sweep.isRunning)
    }

    @Test func anEarlierRunsAutoDeviceIsReadAndClearedOnceButATrackedOneIsNot() {
        var sweep = AdvertSweep()
        _ = sweep.start(discovery: nil, base: "b", fleet: false)
        let heard = { (sweep: inout AdvertSweep, message: MQTTMessage, tracked: Bool) in
            sweep.heard(message, base: "b", devices: [], tracks: { _ in tracked }, discovery: nil, published: { _ in false })
        }
        let stale = heard(&sweep, Self.retained("b/bthome-a4c1388d18b2/availability"), false)
        #expect(stale == [.subscribe("b/bthome-a4c1388d18b2/+"),
                          .clear("b/bthome-a4c1388d18b2/availability",
                                 note: "clearing b/bthome-a4c1388d18b2/availability, left by an auto device of an earlier run")])
        #expect(heard(&sweep, Self.retained("b/bthome-a4c1388d18b2/temperature", "21.5"), false).count == 1)
        #expect(heard(&sweep, Self.retained("b/bthome-a4c1388d18b2/temperature", "21.5"), false).isEmpty)   // once
        #expect(heard(&sweep, Self.retained("b/bthome-a4c1388d18b3/availability"), true).isEmpty)          // tracked
        #expect(heard(&sweep, Self.retained("b/lamp/availability"), false).isEmpty)                        // not auto
        _ = sweep.end(1)
        #expect(heard(&sweep, Self.retained("b/bthome-a4c1388d18b4/availability"), false).isEmpty)         // over
    }
}
