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
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
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
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
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
}
