import Synchronization
import Testing
@testable import Bridge

/// `FloodTrim`: one heap trim after each flood, none per dropped message. Waits are on the trims themselves.
@Suite(.timeLimit(.minutes(1))) struct FloodTrimTests {
    @Test func aFloodOfDropsIsTrimmedOnceAfterItAndTheNextFloodAgain() async {
        // A quiet of a second: the drops below take milliseconds, so a pause inside them long enough to end the
        // "flood" early (a descheduled test thread on a loaded machine) would have to last a second.
        let trim = FloodTrim(quiet: .seconds(1))
        let (trims, trimmed) = AsyncStream.makeStream(of: Void.self)
        let running = Task { await trim.run { _ in trimmed.yield() } }
        var iterator = trims.makeAsyncIterator()

        for _ in 0..<2_000 { trim.noteDrop() }
        await iterator.next()
        // The trim came after the flood: nothing dropped since, so nothing more is pending.
        for _ in 0..<500 { trim.noteDrop() }
        await iterator.next()

        trim.finish()
        await running.value
        trimmed.finish()
        var more = 0
        while await iterator.next() != nil { more += 1 }
        #expect(more == 0, "one trim per flood")
    }

    @Test func finishingWithoutAFloodEndsTheLoop() async {
        let trim = FloodTrim(quiet: .seconds(3600))
        let running = Task { await trim.run { _ in Issue.record("no flood, no trim") } }
        trim.finish()
        await running.value
    }
}
