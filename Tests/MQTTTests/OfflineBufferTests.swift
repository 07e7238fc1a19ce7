import Testing
@testable import MQTT

@Suite struct OfflineBufferTests {
    private func message(_ n: Int) -> OutgoingMessage {
        OutgoingMessage(message: MQTTMessage(topic: "t", string: "\(n)"))
    }

    @Test func evictsOldestFirstAndCounts() {
        var buffer = OfflineBuffer(limit: 3)
        var evicted: [String] = []
        for n in 1...5 {
            evicted += buffer.append(message(n)).map(\.message.payloadString)
        }
        #expect(evicted == ["1", "2"])
        #expect(buffer.evicted == 2)
        #expect(buffer.takeAll().map(\.message.payloadString) == ["3", "4", "5"])
        #expect(buffer.isEmpty)
    }

    @Test func zeroLimitKeepsNothing() {
        var buffer = OfflineBuffer(limit: 0)
        #expect(buffer.append(message(1)).map(\.message.payloadString) == ["1"])
        #expect(buffer.count == 0 && buffer.evicted == 1)
    }

    @Test func messagesHeldByLibmosquittoCountAgainstTheBound() {
        var buffer = OfflineBuffer(limit: 4)
        #expect(buffer.append(message(1), inFlight: 2).isEmpty)
        #expect(buffer.append(message(2), inFlight: 2).isEmpty)
        #expect(buffer.append(message(3), inFlight: 2).map(\.message.payloadString) == ["1"])
        #expect(buffer.append(message(4), inFlight: 4).map(\.message.payloadString) == ["2", "3", "4"])
        #expect(buffer.isEmpty && buffer.evicted == 4)
    }

    @Test func adoptedMessagesGoInFrontAndTheOldestAreEvicted() {
        var buffer = OfflineBuffer(limit: 4)
        _ = buffer.append(message(10))
        _ = buffer.append(message(11))
        let evicted = buffer.prepend([1, 2, 3].map(message))
        #expect(evicted.map(\.message.payloadString) == ["1"])
        #expect(buffer.takeAll().map(\.message.payloadString) == ["2", "3", "10", "11"])
    }
}

@Suite struct OfflineBufferByteTests {
    func sized(_ name: String, _ bytes: Int) -> OutgoingMessage {
        OutgoingMessage(message: MQTTMessage(topic: name, payload: [UInt8](repeating: 0, count: bytes), qos: .atLeastOnce,
                                             retain: false))
    }

    @Test func theBoundIsInBytesToo() {
        // Room for two of these 1 KB messages, not for the 10,000 the count would allow.
        var buffer = OfflineBuffer(limit: 10_000, byteLimit: 2 * (1000 + 1 + 128))
        #expect(buffer.append(sized("a", 1000)).isEmpty)
        #expect(buffer.append(sized("b", 1000)).isEmpty)
        #expect(buffer.append(sized("c", 1000)).map(\.message.topic) == ["a"])
        #expect(buffer.bytes == 2 * (1000 + 1 + 128))
        // What libmosquitto holds counts against the same bound.
        #expect(buffer.append(sized("d", 10), held: Held(count: 1, bytes: 1129)).map(\.message.topic) == ["b", "c"])
        #expect(buffer.takeAll().map(\.message.topic) == ["d"])
        #expect(buffer.bytes == 0)
    }

    @Test func theLedgerCountsUnwrittenQoS0BytesUntilWritten() {
        var ledger = InFlightLedger()
        ledger.handedOver(mid: 1, qos: .atMostOnce, bytes: 500)
        ledger.handedOver(mid: 2, qos: .atLeastOnce, bytes: 300)
        #expect(ledger.held == Held(count: 1, bytes: 800))
        ledger.acknowledged(mid: 1)                              // written
        #expect(ledger.held == Held(count: 1, bytes: 300))
        ledger.linkLost()
        #expect(ledger.held == Held(count: 1, bytes: 300))      // QoS 1 stays queued in libmosquitto
        ledger.acknowledged(mid: 2)
        #expect(ledger.held == Held(count: 0, bytes: 0))
    }
}

@Suite struct InFlightLedgerTests {
    @Test func countsUntilAcknowledgedEvenWhenTheAckComesFirst() {
        var ledger = InFlightLedger()
        ledger.handedOver(mid: 1, qos: .atLeastOnce)
        let ack2x = ledger.acknowledged(mid: 2)
        #expect(ack2x == false)     // PUBACK read before publish returned mid 2
        ledger.handedOver(mid: 2, qos: .exactlyOnce)
        #expect(ledger.count == 1)
        let ack1x = ledger.acknowledged(mid: 1)
        #expect(ack1x)
        #expect(ledger.count == 0)
    }

    @Test func qos0WritesAreNotCounted() {
        var ledger = InFlightLedger()
        ledger.handedOver(mid: 5, qos: .atMostOnce)     // written later by the network thread
        let ack5x = ledger.acknowledged(mid: 5)
        #expect(ack5x == false)
        let ack6x = ledger.acknowledged(mid: 6)
        #expect(ack6x == false)   // written inside mosquitto_publish, before it returned
        ledger.handedOver(mid: 6, qos: .atMostOnce)
        ledger.handedOver(mid: 6, qos: .atLeastOnce)    // the id, reused later, is a fresh QoS 1 message
        #expect(ledger.count == 1)
    }

    @Test func acknowledgementsOutOfOrderFindTheirMessage() {
        var ledger = InFlightLedger()
        for mid in Int32(1)...4 { ledger.handedOver(mid: mid, qos: .atLeastOnce, bytes: Int(mid) * 100) }
        let acks = [3, 1, 3, 4, 2].map { ledger.acknowledged(mid: $0) }
        // The second 3 is already gone: kept as an early one, not counted twice.
        #expect(acks == [true, true, false, true, true])
        #expect(ledger.held == Held(count: 0, bytes: 0))
        ledger.handedOver(mid: 5, qos: .atLeastOnce, bytes: 100)
        let ack5 = ledger.acknowledged(mid: 5)
        #expect(ack5)
        #expect(ledger.held == Held(count: 0, bytes: 0))
    }

    @Test func unacknowledgedMessagesSurviveALostLink() {
        var ledger = InFlightLedger()
        ledger.handedOver(mid: 1, qos: .atLeastOnce)
        ledger.handedOver(mid: 2, qos: .atMostOnce)
        ledger.linkLost()
        #expect(ledger.count == 1)
        let ack1x = ledger.acknowledged(mid: 1)
        #expect(ack1x)
    }
}
