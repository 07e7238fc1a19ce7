import Testing
@testable import BridgeFleet

@Suite struct HoldingPublisherTests {
    @Test func heldValuesFollowInOrderWhenStillOwnedAndAreDroppedWhenTaken() {
        let recorder = SessionRecorder()
        let holder = HoldingPublisher(recorder)
        holder.publish("b/d/c", "1", qos: 1, retain: false)
        #expect(!holder.release(deliver: true))      // no hold to end
        #expect(holder.hold())
        #expect(!holder.hold())                      // on already
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

    /// Values lent as UTF-8 bytes (a `hex` channel's) pass, wait and follow like text.
    @Test func lentBytesAreHeldLikeText() {
        let recorder = SessionRecorder()
        let holder = HoldingPublisher(recorder)
        func send(_ text: String) { Array(text.utf8).withUnsafeBytes { holder.publish("t", utf8: $0, qos: 1, retain: false) } }
        send("0a")
        _ = holder.hold()
        send("0b")
        holder.publish("t", "0c", qos: 1, retain: false)
        #expect(recorder.payloads(on: "t") == ["0a"])
        holder.release(deliver: true)
        send("0d")
        #expect(recorder.payloads(on: "t") == ["0a", "0b", "0c", "0d"])
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
