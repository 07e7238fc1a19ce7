import Glibc
import Synchronization
import Testing
@testable import DBus

/// `LoopKernel`'s fairness rules, each against a descriptor that is always ready: the loop turns as fast as it can,
/// which is what a busy bus or a flooding broker looks like to it.
@Suite(.timeLimit(.minutes(1))) struct LoopFairnessTests {
    private static func nowNs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// A pipe with a byte in it that nobody reads: readable on every turn.
    private final class AlwaysReady: Sendable {
        let readEnd: Int32
        let writeEnd: Int32

        init() {
            var fds: [Int32] = [0, 0]
            precondition(pipe(&fds) == 0)
            (readEnd, writeEnd) = (fds[0], fds[1])
            var byte: UInt8 = 1
            precondition(write(writeEnd, &byte, 1) == 1)
        }

        deinit {
            close(readEnd)
            close(writeEnd)
        }
    }

    /// Rule 2 and 3: a timer source whose interest says "one period from now" each time it is asked (as the MQTT
    /// link's idle interest does) beside a watch that is always ready: served every period, not pushed back forever.
    @Test func aTimerBesideAnAlwaysReadyWatchFiresWithinItsPeriod() async {
        let loop = EventLoop()
        let busy = AlwaysReady()
        let turns = Atomic<Int>(0)
        let watch = loop.watchReadable(fd: busy.readEnd) { turns.add(1, ordering: .relaxed) }
        let period: Int64 = 50_000_000
        let (served, sink) = AsyncStream.makeStream(of: Int64.self)
        let count = Atomic<Int>(0)
        loop.addSource(interest: { PollInterest(fd: -1, events: 0, deadline: Self.nowNs() + period) }, serve: { _ in
            sink.yield(Self.nowNs())
            return count.add(1, ordering: .relaxed).newValue < 6
        })
        var stamps: [Int64] = []
        for await stamp in served {
            stamps.append(stamp)
            if stamps.count == 6 { break }
        }
        loop.removeWatch(watch)
        #expect(turns.load(ordering: .relaxed) > 6, "the watch kept the loop busy meanwhile")
        // Each serve a period after the last; a descheduled test thread may stretch one, never by seconds.
        let gaps = zip(stamps, stamps.dropFirst()).map { $1 - $0 }
        #expect(gaps.allSatisfy { $0 >= period && $0 < 20 * period }, "gaps: \(gaps)")
    }

    /// Rule 1 and 4: two sources whose descriptors are always ready take turns, one serve each per turn.
    @Test func twoAlwaysReadySourcesAlternate() async {
        let loop = EventLoop()
        let first = AlwaysReady(), second = AlwaysReady()
        let order = Mutex<[Character]>([])
        let (done, sink) = AsyncStream.makeStream(of: Void.self)
        for (name, pipe) in [(Character("a"), first), (Character("b"), second)] {
            loop.addSource(interest: { PollInterest(fd: pipe.readEnd, events: Int16(POLLIN), deadline: .max) },
                           serve: { revents in
                let count = order.withLock { order in
                    order.append(revents & Int16(POLLIN) != 0 ? name : "?")
                    return order.count
                }
                if count >= 200 { sink.finish() }
                return count < 200
            })
        }
        for await _ in done {}
        await loop.ping()
        let seen = order.withLock { Array($0.prefix(200)) }
        #expect(!seen.contains("?"))
        // Both were added before the loop's first turn with them, so every turn serves a, then b.
        let pairs = stride(from: 0, to: seen.count - 1, by: 2).map { String(seen[$0...$0 + 1]) }
        #expect(pairs.allSatisfy { $0 == "ab" }, "\(seen)")
    }

    /// Rule 2: a watch coming or going (which remakes the poll set) does not make a source forget a deadline it
    /// holds.
    @Test func aDeadlineSurvivesTheWatchesChanging() async {
        let loop = EventLoop()
        let busy = AlwaysReady()
        let period: Int64 = 50_000_000
        let (served, sink) = AsyncStream.makeStream(of: Int64.self)
        let firstAsked = Atomic<Int64>(0)
        loop.addSource(interest: {
            let now = Self.nowNs()
            _ = firstAsked.compareExchange(expected: 0, desired: now, ordering: .relaxed)
            return PollInterest(fd: -1, events: 0, deadline: now + period)
        }, serve: { _ in
            sink.yield(Self.nowNs())
            return false
        })
        // A watch added and removed on every turn of the busy loop remakes the set each time.
        let churn = Atomic<Bool>(true)
        let busyWatch = loop.watchReadable(fd: busy.readEnd) {
            guard churn.load(ordering: .relaxed) else { return }
            let extra = loop.watchReadable(fd: busy.writeEnd) {}
            loop.removeWatch(extra)
        }
        var iterator = served.makeAsyncIterator()
        let at = await iterator.next() ?? .max
        churn.store(false, ordering: .relaxed)
        loop.removeWatch(busyWatch)
        let waited = at - firstAsked.load(ordering: .relaxed)
        #expect(waited >= period && waited < 20 * period, "served \(waited / 1_000_000) ms after its first interest")
    }
}
