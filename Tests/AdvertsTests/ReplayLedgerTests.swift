import Testing
@testable import Adverts

@Suite struct ReplayLedgerTests {
    let key = KeyFingerprint(key: Array(repeating: 0x23, count: 16))!
    let otherKey = KeyFingerprint(key: Array(repeating: 0x42, count: 16))!
    var button: ReplayLedger.Entry { .init(address: "A4:C1:38:0B:70:02", key: key) }

    /// The audit's sequence (issue 40): counters 10, 11, 2000–2005 heard, then captures replayed. Before, a counter
    /// below 100 was always believed and became the last one, which made every older capture fresh again.
    @Test func noCaptureIsEverFreshAgain() {
        var ledger = ReplayLedger()
        for counter: UInt32 in [10, 11, 2000, 2001, 2002, 2003, 2004, 2005] {
            #expect(ledger.admit(counter, under: button) == .fresh)
        }
        for counter: UInt32 in [10, 2002, 2003, 11, 2004, 0, 99, 2005] {
            #expect(ledger.admit(counter, under: button) != .fresh, "capture \(counter) believed")
        }
        #expect(ledger.admit(2005, under: button) == .repeated)
        #expect(ledger.admit(10, under: button) == .wentBack(mark: 2005))
        #expect(ledger.admit(2006, under: button) == .fresh)
    }

    @Test func aKeyAndAnAddressEachHaveTheirOwnMark() {
        var ledger = ReplayLedger()
        #expect(ledger.admit(500, under: button) == .fresh)
        #expect(ledger.admit(3, under: .init(address: "A4:C1:38:0B:70:02", key: otherKey)) == .fresh)
        #expect(ledger.admit(3, under: .init(address: "A4:C1:38:0B:70:03", key: key)) == .fresh)
        #expect(ledger.admit(3, under: button) == .wentBack(mark: 500))
    }

    @Test func rearmingIsTheOneWayAMarkGoesDown() {
        var ledger = ReplayLedger()
        #expect(ledger.admit(500, under: button) == .fresh)
        ledger.rearm(address: "A4:C1:38:0B:70:01")
        #expect(ledger.admit(4, under: button) == .wentBack(mark: 500))
        ledger.rearm(address: "A4:C1:38:0B:70:02")
        #expect(ledger.admit(4, under: button) == .fresh)
        #expect(ledger.admit(3, under: button) == .wentBack(mark: 4))
    }

    @Test func theMarksSurviveTheirSavedForm() {
        var ledger = ReplayLedger()
        _ = ledger.admit(2005, under: button)
        _ = ledger.admit(UInt32.max, under: .init(address: "A4:C1:38:0B:70:03", key: otherKey))
        var restarted = ReplayLedger(lines: ledger.lines)
        #expect(restarted == ledger)
        #expect(restarted.admit(10, under: button) == .wentBack(mark: 2005))
        #expect(restarted.admit(2005, under: button) == .repeated)
    }

    @Test func theSavedFormNamesNoKey() {
        var ledger = ReplayLedger()
        let bindkey: [UInt8] = [0x23, 0x1d, 0x39, 0xc1, 0xd7, 0xcc, 0x1a, 0xb1, 0xae, 0xe2, 0x24, 0xcd, 0x09, 0x6d,
                                0xb9, 0x32]
        _ = ledger.admit(7, under: .init(address: "A4:C1:38:0B:70:02", key: KeyFingerprint(key: bindkey)!))
        #expect(!ledger.lines.contains("231d39c1"))
        #expect(ledger.lines.hasPrefix("A4:C1:38:0B:70:02 "))
    }

    @Test func aDamagedFileLosesLinesNotTheBridge() {
        let text = "junk\nA4:C1:38:0B:70:02 \(key.hex) 12\nA4:C1:38:0B:70:02 \(key.hex) 40\n"
            + "A4:C1:38:0B:70:02 zz 1\nA4:C1:38:0B:70:02 \(key.hex) -1\n\u{0}\u{1}\n"
        var ledger = ReplayLedger(lines: text)
        #expect(ledger.marks.count == 1)
        #expect(ledger.admit(39, under: button) == .wentBack(mark: 40))
        let many = (0..<10_000).map { "A4:C1:38:0B:\($0) \(key.hex) 1" }.joined(separator: "\n")
        #expect(ReplayLedger(lines: many).marks.count == 4096)
    }

    @Test func keepPrunesToTheConfiguredKeys() {
        var ledger = ReplayLedger()
        _ = ledger.admit(5, under: button)
        _ = ledger.admit(5, under: .init(address: "A4:C1:38:0B:70:03", key: key))
        ledger.keep([button])
        #expect(ledger.marks.keys.map(\.address) == ["A4:C1:38:0B:70:02"])
    }
}
