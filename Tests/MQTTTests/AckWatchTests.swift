import Testing
@testable import MQTT

/// `AckWatch` on its own: events in (what waits, the acknowledgement total, the time), a verdict out.
@Suite struct AckWatchTests {
    private let second: Int64 = 1_000_000_000

    @Test func aBrokerThatAcknowledgesNothingForTheLimitIsReportedOnce() {
        var watch = AckWatch(limitNanoseconds: 20 * second)
        check(&watch, waiting: 3, acknowledgements: 10, now: 0, stalled: false)
        check(&watch, waiting: 3, acknowledgements: 10, now: 19 * second, stalled: false)
        check(&watch, waiting: 3, acknowledgements: 10, now: 20 * second, stalled: true)
        // Once per stall: the link is being cut; later turns before the reconnect say nothing more.
        check(&watch, waiting: 3, acknowledgements: 10, now: 25 * second, stalled: false)
    }

    @Test func anyAcknowledgementRestartsTheWait() {
        var watch = AckWatch(limitNanoseconds: 20 * second)
        _ = watch.observe(waiting: 50, acknowledgements: 0, now: 0)
        // A slow broker behind a flood: one PUBACK every 15 s is progress, never a stall.
        for step in 1...6 {
            check(&watch, waiting: 50 - step, acknowledgements: UInt64(step), now: Int64(step) * 15 * second, stalled: false)
        }
        check(&watch, waiting: 44, acknowledgements: 6, now: 110 * second, stalled: true)
    }

    @Test func nothingWaitingIsNeverAStall() {
        var watch = AckWatch(limitNanoseconds: 20 * second)
        check(&watch, waiting: 0, acknowledgements: 5, now: 0, stalled: false)
        check(&watch, waiting: 0, acknowledgements: 5, now: 100 * second, stalled: false)
        // The wait starts when something waits, not when the watch last looked.
        check(&watch, waiting: 1, acknowledgements: 5, now: 200 * second, stalled: false)
        check(&watch, waiting: 1, acknowledgements: 5, now: 219 * second, stalled: false)
        check(&watch, waiting: 1, acknowledgements: 5, now: 220 * second, stalled: true)
    }

    @Test func aNewConnectionStartsANewWait() {
        var watch = AckWatch(limitNanoseconds: 20 * second)
        _ = watch.observe(waiting: 2, acknowledgements: 0, now: 0)
        check(&watch, waiting: 2, acknowledgements: 0, now: 30 * second, stalled: true)
        watch.reset()
        // The same two messages, resent on the new connection: the limit counts from now.
        check(&watch, waiting: 2, acknowledgements: 0, now: 31 * second, stalled: false)
        check(&watch, waiting: 2, acknowledgements: 0, now: 50 * second, stalled: false)
        check(&watch, waiting: 2, acknowledgements: 0, now: 51 * second, stalled: true)
    }

    @Test func theLedgerCountsAcknowledgementsOfQoS1Only() {
        var ledger = InFlightLedger()
        ledger.handedOver(mid: 1, qos: .atLeastOnce, bytes: 10)
        ledger.handedOver(mid: 2, qos: .atMostOnce, bytes: 10)
        ledger.acknowledged(mid: 2)        // a QoS 0 write, not an acknowledgement
        #expect(ledger.acknowledgements == 0)
        ledger.acknowledged(mid: 1)
        #expect(ledger.acknowledgements == 1)
        #expect(ledger.count == 0)
    }

    @Test func theTimeoutIsTwiceTheKeepaliveAndAtLeast20Seconds() {
        #expect(MQTTClient.ackTimeout(keepalive: .seconds(5)) == .seconds(20))
        #expect(MQTTClient.ackTimeout(keepalive: .seconds(30)) == .seconds(60))
    }
}


/// `observe`, and what it should say: the `#expect` macro cannot call a mutating method itself.
private func check(_ watch: inout AckWatch, waiting: Int, acknowledgements: UInt64, now: Int64, stalled: Bool,
                   sourceLocation: SourceLocation = #_sourceLocation) {
    let said = watch.observe(waiting: waiting, acknowledgements: acknowledgements, now: now)
    #expect(said == stalled, sourceLocation: sourceLocation)
}
