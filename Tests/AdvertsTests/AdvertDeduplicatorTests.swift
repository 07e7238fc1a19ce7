import Testing
@testable import Adverts

@Suite struct AdvertDeduplicatorTests {
    func packet(_ id: UInt32?) -> AdvertResult {
        AdvertResult(format: .bthome, measurements: [Measurement("battery", .integer(90))], packetID: id)
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

    @Test func memoryStaysBounded() {
        var dedup = AdvertDeduplicator(window: 1_000_000)
        for i in 0..<10_000 { _ = dedup.admit(packet(UInt32(i)), now: Double(i)) }
        #expect(dedup.admit(packet(9_999), now: 10_000) == .repeated)
        #expect(dedup.admit(packet(0), now: 10_001) == .fresh)
    }
}
