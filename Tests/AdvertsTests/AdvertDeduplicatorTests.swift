import Testing
@testable import Adverts

@Suite struct AdvertDeduplicatorTests {
    func packet(_ id: UInt32?, counter: UInt32? = nil) -> AdvertResult {
        AdvertResult(format: .bthome, measurements: [Measurement("battery", .integer(90))], packetID: id,
                     encrypted: counter != nil, encryptionCounter: counter)
    }

    @Test func aPacketIDRepeatsWithinTheWindowOnly() {
        var dedup = AdvertDeduplicator(window: 60)
        #expect(dedup.admit(packet(7), now: 0) == .fresh)
        #expect(dedup.admit(packet(7), now: 1) == .repeated)
        #expect(dedup.admit(packet(8), now: 2) == .fresh)
        #expect(dedup.admit(packet(7), now: 59.9) == .repeated)
        #expect(dedup.admit(packet(7), now: 60) == .fresh)
    }

    @Test func withoutPacketIDEveryBroadcastIsFresh() {
        var dedup = AdvertDeduplicator()
        #expect(dedup.admit(packet(nil), now: 0) == .fresh)
        #expect(dedup.admit(packet(nil), now: 0) == .fresh)
    }

    @Test func encryptionCounterMustGrow() {
        var dedup = AdvertDeduplicator()
        #expect(dedup.admit(packet(nil, counter: 500), now: 0) == .fresh)
        #expect(dedup.admit(packet(nil, counter: 500), now: 1) == .repeated)
        #expect(dedup.admit(packet(nil, counter: 499), now: 2) == .replayed)
        #expect(dedup.admit(packet(nil, counter: 501), now: 3) == .fresh)
        // A restarted device counts from 0 again: accepted below 100.
        #expect(dedup.admit(packet(nil, counter: 3), now: 4) == .fresh)
        #expect(dedup.admit(packet(nil, counter: 2), now: 5) == .fresh)
    }

    @Test func aRejectedBroadcastLeavesNoTrace() {
        var dedup = AdvertDeduplicator()
        #expect(dedup.admit(packet(1, counter: 500), now: 0) == .fresh)
        #expect(dedup.admit(packet(2, counter: 400), now: 1) == .replayed)
        // Packet id 2 was not remembered by the replay.
        #expect(dedup.admit(packet(2, counter: 501), now: 2) == .fresh)
    }

    @Test func memoryStaysBounded() {
        var dedup = AdvertDeduplicator(window: 1_000_000)
        for i in 0..<10_000 { _ = dedup.admit(packet(UInt32(i)), now: Double(i)) }
        #expect(dedup.admit(packet(9_999), now: 10_000) == .repeated)
        #expect(dedup.admit(packet(0), now: 10_001) == .fresh)
    }
}
