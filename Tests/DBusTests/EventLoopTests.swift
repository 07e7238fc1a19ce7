import Glibc
import Synchronization
import Testing
@testable import DBus

@Suite struct EventLoopTests {
    @Test func executesInOrderOnTheLoopThread() async {
        let loop = EventLoop()
        let seen = Mutex<[Int]>([])
        let onLoop = Mutex<Bool>(true)
        for i in 0..<1000 {
            loop.execute {
                if !loop.isLoopThread { onLoop.withLock { $0 = false } }
                seen.withLock { $0.append(i) }
            }
        }
        await loop.ping()
        #expect(seen.withLock { $0 } == Array(0..<1000))
        #expect(onLoop.withLock { $0 })
        #expect(!loop.isLoopThread)
        #expect(await loop.run { loop.isLoopThread })
    }

    @Test func watchReadableCallsOnePerReadAndStopsAfterRemoval() async throws {
        let loop = EventLoop()
        let (readEnd, writeEnd) = Self.makePipe()
        defer { close(readEnd); close(writeEnd) }
        let (chunks, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        let calls = Atomic<Int>(0)
        let id = loop.watchReadable(fd: readEnd) {
            calls.add(1, ordering: .relaxed)
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = read(readEnd, &buffer, 64)
            if n > 0 { continuation.yield(Array(buffer[0..<n])) }
        }
        var iterator = chunks.makeAsyncIterator()
        var bytes: [UInt8] = [1, 2, 3]
        #expect(write(writeEnd, &bytes, 3) == 3)
        #expect(await iterator.next() == [1, 2, 3])
        #expect(calls.load(ordering: .relaxed) == 1)

        loop.removeWatch(id)
        #expect(write(writeEnd, &bytes, 3) == 3)
        await loop.ping()
        await loop.ping()
        #expect(calls.load(ordering: .relaxed) == 1)
    }

    @Test func removeWatchOnTheLoopThreadTakesEffectAtOnce() async {
        let loop = EventLoop()
        let (readEnd, writeEnd) = Self.makePipe()
        defer { close(readEnd); close(writeEnd) }
        let calls = Atomic<Int>(0)
        // Two watches on the same readable fd: the first handler removes the second within the same poll round.
        let second = Mutex<EventLoop.WatchID?>(nil)
        _ = loop.watchReadable(fd: readEnd) {
            if let id = second.withLock({ $0 }) { loop.removeWatch(id) }
        }
        second.withLock { $0 = loop.watchReadable(fd: readEnd) { calls.add(1, ordering: .relaxed) } }
        await loop.ping()
        var byte: UInt8 = 1
        #expect(write(writeEnd, &byte, 1) == 1)
        await loop.ping()
        await loop.ping()
        // Depending on dictionary order the second may run once before the first removed it; never afterwards.
        let afterRemoval = calls.load(ordering: .relaxed)
        #expect(afterRemoval <= 1)
        await loop.ping()
        #expect(calls.load(ordering: .relaxed) == afterRemoval)
    }

    private static func makePipe() -> (readEnd: Int32, writeEnd: Int32) {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        return (fds[0], fds[1])
    }

    private static func nowNs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// A source with nothing else to wake the loop is served once its `wakeBy` comes, not at its earlier `deadline`:
    /// the loop sleeps past the deadline (the MQTT link gathering PUBACKs costs no wake-up of its own).
    @Test func aSourceAloneIsServedByItsWakeByNotBeforeItsDeadline() async {
        let loop = EventLoop()
        await loop.ping()
        let start = Self.nowNs()
        let (deadline, wakeBy) = (start + 30_000_000, start + 150_000_000)
        let (served, sink) = AsyncStream.makeStream(of: Int64.self)
        loop.addSource(interest: { PollInterest(fd: -1, events: 0, deadline: deadline, wakeBy: wakeBy) }, serve: { _ in
            sink.yield(Self.nowNs())
            return false
        })
        var iterator = served.makeAsyncIterator()
        let at = await iterator.next() ?? 0
        #expect(at >= wakeBy)
    }

    /// Past its deadline, a source is served on whatever turn the loop makes next (here: work queued from outside).
    @Test func aSourcePastItsDeadlineIsServedOnTheLoopsNextTurn() async throws {
        let loop = EventLoop()
        await loop.ping()
        let start = Self.nowNs()
        let deadline = start + 20_000_000
        let served = Atomic<Int>(0)
        loop.addSource(interest: { PollInterest(fd: -1, events: 0, deadline: deadline, wakeBy: start + 60_000_000_000) },
                       serve: { _ in
            served.add(1, ordering: .relaxed)
            return false
        })
        await loop.ping()
        #expect(served.load(ordering: .relaxed) == 0)
        try await Task.sleep(for: .milliseconds(40))          // the clock passes the deadline; the loop sleeps on
        #expect(served.load(ordering: .relaxed) == 0)
        await loop.ping()
        #expect(served.load(ordering: .relaxed) == 1)
        await loop.ping()
        #expect(served.load(ordering: .relaxed) == 1, "removed once its serve returned false")
    }

    /// The poll set is kept from turn to turn, but a source's interest is asked for on every turn: a descriptor it
    /// names only from some turn on is polled from then, and one it stops naming is not.
    @Test func aSourcesDescriptorIsTakenFromItsInterestOnEveryTurn() async {
        let loop = EventLoop()
        let (readEnd, writeEnd) = Self.makePipe()
        defer { close(readEnd); close(writeEnd) }
        let watching = Atomic<Bool>(false)
        let served = Atomic<Int>(0)
        let (reads, sink) = AsyncStream.makeStream(of: Int16.self)
        loop.addSource(interest: {
            PollInterest(fd: watching.load(ordering: .relaxed) ? readEnd : -1, events: Int16(POLLIN), deadline: .max)
        }, serve: { revents in
            served.add(1, ordering: .relaxed)
            var byte: UInt8 = 0
            _ = read(readEnd, &byte, 1)
            sink.yield(revents)
            return true
        })
        var byte: UInt8 = 1
        #expect(write(writeEnd, &byte, 1) == 1)
        await loop.ping()
        await loop.ping()
        #expect(served.load(ordering: .relaxed) == 0, "no descriptor named: the readable pipe is not polled")

        watching.store(true, ordering: .relaxed)
        loop.wakeUp()
        var iterator = reads.makeAsyncIterator()
        let revents = await iterator.next() ?? 0
        #expect(revents & Int16(POLLIN) != 0)

        watching.store(false, ordering: .relaxed)
        await loop.ping()
        let before = served.load(ordering: .relaxed)
        #expect(write(writeEnd, &byte, 1) == 1)
        await loop.ping()
        await loop.ping()
        #expect(served.load(ordering: .relaxed) == before)
    }

    /// A source that ends leaves the others their own descriptors (the poll set is remade without it), and a source
    /// added while the round serves its sources is first asked for its interest on the next turn, then served.
    @Test func anEndedSourceLeavesTheOthersTheirDescriptorsAndOneAddedInARoundWaits() async {
        let loop = EventLoop()
        let (readEnd, writeEnd) = Self.makePipe()
        defer { close(readEnd); close(writeEnd) }
        let firstServed = Atomic<Int>(0)
        loop.addSource(interest: { PollInterest(fd: -1, events: 0, deadline: 0) }, serve: { _ in
            firstServed.add(1, ordering: .relaxed)
            return false
        })
        let laterAsked = Atomic<Int>(0)
        let (events, sink) = AsyncStream.makeStream(of: String.self)
        let added = Atomic<Bool>(false)
        loop.addSource(interest: { PollInterest(fd: readEnd, events: Int16(POLLIN), deadline: .max) }, serve: { revents in
            var byte: UInt8 = 0
            _ = read(readEnd, &byte, 1)
            sink.yield(revents & Int16(POLLIN) != 0 ? "readable" : "not readable")
            if !added.exchange(true, ordering: .relaxed) {
                loop.addSource(interest: {
                    laterAsked.add(1, ordering: .relaxed)
                    return PollInterest(fd: -1, events: 0, deadline: 0)
                }, serve: { _ in
                    sink.yield(laterAsked.load(ordering: .relaxed) > 0 ? "asked first" : "served unasked")
                    return false
                })
            }
            return true
        })
        await loop.ping()
        await loop.ping()
        #expect(firstServed.load(ordering: .relaxed) == 1)
        var byte: UInt8 = 1
        #expect(write(writeEnd, &byte, 1) == 1)
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == "readable")
        #expect(await iterator.next() == "asked first")
        #expect(firstServed.load(ordering: .relaxed) == 1)
    }
}
