import Testing
@testable import Bridge

@Suite struct HoldingPublisherTests {
    @Test func heldValuesFollowInOrderWhenStillOwnedAndAreDroppedWhenTaken() {
        let recorder = SessionRecorder()
        let holder = HoldingPublisher(recorder)
        holder.publish("b/d/c", "1", qos: 1, retain: false)
        holder.hold()
        holder.publish("b/d/c", "2", qos: 1, retain: false)
        holder.publish("b/d/c", "3", qos: 1, retain: false)
        #expect(recorder.payloads(on: "b/d/c") == ["1"])
        holder.release(deliver: true)
        holder.publish("b/d/c", "4", qos: 1, retain: false)
        #expect(recorder.payloads(on: "b/d/c") == ["1", "2", "3", "4"])

        holder.hold()
        holder.publish("b/d/c", "5", qos: 1, retain: false)
        holder.release(deliver: false)          // another bridge took the device: it publishes these
        holder.publish("b/d/c", "6", qos: 1, retain: false)
        #expect(recorder.payloads(on: "b/d/c") == ["1", "2", "3", "4", "6"])
    }

    @Test func aLongHoldKeepsTheNewestValues() {
        let recorder = SessionRecorder()
        let holder = HoldingPublisher(recorder)
        holder.hold()
        for i in 0..<(HoldingPublisher.limit + 5) { holder.publish("t", String(i), qos: 0, retain: false) }
        holder.release(deliver: true)
        let got = recorder.payloads(on: "t")
        #expect(got.count == HoldingPublisher.limit)
        #expect(got.first == "5" && got.last == String(HoldingPublisher.limit + 4))
    }
}
