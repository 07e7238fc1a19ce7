import Adverts
import FuzzSupport

/// The replay ledger (docs/adverts.md, "Replays"): a script of admits, re-arms, saves and restores over four senders
/// and two keys, then the rest of the input read as a saved file. Oracles: a counter is believed exactly when it is
/// above every counter believed under its sender and key since that sender was last re-armed (a model kept beside
/// it); a save read back is the same ledger, and a restart loses no mark; any file reads without a crash, into at most
/// 4096 marks, and what it reads saves and reads back alike.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReplayLedger(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let keys = [KeyFingerprint(key: Array(repeating: 0x23, count: 16))!,
                KeyFingerprint(key: Array(repeating: 0x42, count: 16))!]
    let addresses = ["A4:C1:38:00:00:01", "A4:C1:38:00:00:02", "A4:C1:38:00:00:03", "A4:C1:38:00:00:04"]
    var ledger = ReplayLedger()
    var believed: [ReplayLedger.Entry: [UInt32]] = [:]
    let steps = Int(input.byte())
    for _ in 0..<steps where !input.isEmpty {
        let op = input.byte()
        let entry = ReplayLedger.Entry(address: addresses[Int(op >> 1) & 3], key: keys[Int(op >> 3) & 1])
        switch op & 1 {
        case 0:
            let counter = input.take(4).enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * $1.offset) }
            let verdict = ledger.admit(counter, under: entry)
            let highest = believed[entry]?.max()
            let expected: ReplayLedger.Verdict = highest.map {
                counter > $0 ? .fresh : counter == $0 ? .repeated : .wentBack(mark: $0)
            } ?? .fresh
            require(verdict == expected, "counter \(counter) after \(believed[entry] ?? []): \(verdict), not \(expected)")
            if verdict == .fresh { believed[entry, default: []].append(counter) }
        default:
            if op & 0x10 != 0 {
                ledger.rearm(address: entry.address)
                believed = believed.filter { $0.key.address != entry.address }
            } else {
                let restarted = ReplayLedger(lines: ledger.lines)
                require(restarted == ledger, "a save read back differs")
                ledger = restarted
            }
        }
    }
    let text = String(decoding: input.rest(), as: UTF8.self)
    let read = ReplayLedger(lines: text)
    require(read.marks.count <= 4096, "\(read.marks.count) marks read")
    require(ReplayLedger(lines: read.lines) == read, "a file read, saved and read again differs")
    return 0
}

@_cdecl("FuzzReplayLedger_main")
public func fuzzReplayLedgerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runFuzzer(argc, argv, { data, size in fuzzReplayLedger(data, size) })
}
