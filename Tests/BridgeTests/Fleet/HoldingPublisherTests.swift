import Testing
@testable import Bridge

@Suite struct HoldingPublisherTests {
    @Test func heldValuesFollowInOrderWhenStillOwnedAndAreDroppedWhenTaken() {
        let recorder = SessionRecorder()
        let holder = HoldingPublisher(recorder)
        holder.publish("b/d/c", "1", qos: 1, retain: false)
        #expect(!holder.release(deliver: true))      // no hold to end
        #expect(holder.hold())
        #expect(!holder.hold())                      // on already
        #expect(holder.isHolding)
        holder.publish("b/d/c", "2", qos: 1, retain: false)
        holder.publish("b/d/c", "3", qos: 1, retain: false)
        #expect(recorder.payloads(on: "b/d/c") == ["1"])
        holder.release(deliver: true)
        holder.publish("b/d/c", "4", qos: 1, retain: false)
        #expect(recorder.payloads(on: "b/d/c") == ["1", "2", "3", "4"])

        _ = holder.hold()
        holder.publish("b/d/c", "5", qos: 1, retain: false)
        holder.release(deliver: false)          // another bridge took the device: it publishes these
        holder.publish("b/d/c", "6", qos: 1, retain: false)
        #expect(recorder.payloads(on: "b/d/c") == ["1", "2", "3", "4", "6"])
    }

    @Test func aLongHoldKeepsTheNewestValues() {
        let recorder = SessionRecorder()
        let holder = HoldingPublisher(recorder)
        _ = holder.hold()
        let sent = HoldingPublisher.limit + 5
        for i in 0..<sent { holder.publish("t", String(i), qos: 0, retain: false) }
        holder.release(deliver: true)
        // Full at `limit`: the oldest quarter went, the rest follow in order, the newest included.
        #expect(recorder.payloads(on: "t") == (HoldingPublisher.limit / 4..<sent).map(String.init))
    }
}
