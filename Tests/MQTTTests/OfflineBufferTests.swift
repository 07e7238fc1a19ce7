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
            if let old = buffer.append(message(n)) { evicted.append(old.message.payloadString) }
        }
        #expect(evicted == ["1", "2"])
        #expect(buffer.evicted == 2)
        #expect(buffer.takeAll().map(\.message.payloadString) == ["3", "4", "5"])
        #expect(buffer.isEmpty)
    }

    @Test func zeroLimitKeepsNothing() {
        var buffer = OfflineBuffer(limit: 0)
        #expect(buffer.append(message(1))?.message.payloadString == "1")
        #expect(buffer.count == 0 && buffer.evicted == 1)
    }
}
