@testable import BlueZ
import DBus
import Glibc
import Synchronization
import Testing

/// The fd path's reader on a real SOCK_SEQPACKET socketpair and a real event loop.
struct FDNotificationReaderTests {
    private static func socketPair() -> (ours: Int32, theirs: Int32) {
        var fds: [Int32] = [-1, -1]
        // CLOEXEC: a process another test spawns meanwhile must not inherit (and keep open) our end.
        let rc = socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        precondition(rc == 0)
        return (fds[0], fds[1])
    }

    private static func send(_ fd: Int32, _ bytes: [UInt8]) {
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        precondition(n == bytes.count)
    }

    private static func waitUntil(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)      // bounds a failure only (parallel suites, two cores)
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            await Task.yield()
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    @Test func sinkReceivesEveryValueOnTheLoopThreadAndTheStreamOnlyFinishesAtEOF() async throws {
        let loop = EventLoop()
        let (ours, theirs) = Self.socketPair()
        let received = Mutex<[[UInt8]]>([])
        let offLoop = Atomic(0)
        let (values, continuation) = AsyncStream<[UInt8]>.makeStream()
        let reader = FDNotificationReader(loop: loop, fd: OwnedFD(ours), mtu: 23, continuation: continuation, sink: { value in
            if !loop.isLoopThread { offLoop.add(1, ordering: .relaxed) }
            received.withLock { $0.append(Array(value)) }
        })
        reader.start()
        let sent: [[UInt8]] = (0..<200).map { i in [UInt8(i), UInt8(truncatingIfNeeded: i &* 7), 0xAB] }
            + [Array(repeating: 0x5A, count: 512)]
        for value in sent { Self.send(theirs, value) }
        #expect(await Self.waitUntil { received.withLock { $0.count } == sent.count })
        #expect(received.withLock { $0 } == sent)        // in order, one read per packet, no MTU-sized padding
        #expect(offLoop.load(ordering: .relaxed) == 0)

        _ = Glibc.close(theirs)                       // BlueZ ending the subscription
        var yielded = 0
        for await _ in values { yielded += 1 }        // returns only because the stream finished
        #expect(yielded == 0)
    }

    /// A zero-length notification reads as 0 bytes, like end-of-file: it must be delivered, and the
    /// subscription must survive it; only the peer's close ends it.
    @Test func emptyNotificationIsDeliveredAndOnlyTheHangUpEndsTheSubscription() async throws {
        let loop = EventLoop()
        let (ours, theirs) = Self.socketPair()
        let (values, continuation) = AsyncStream<[UInt8]>.makeStream()
        let reader = FDNotificationReader(loop: loop, fd: OwnedFD(ours), mtu: 23, continuation: continuation)
        reader.start()
        var iterator = values.makeAsyncIterator()
        Self.send(theirs, [])
        #expect(await iterator.next() == [])
        Self.send(theirs, [7])
        Self.send(theirs, [])
        Self.send(theirs, [8, 9])
        #expect(await iterator.next() == [7])
        #expect(await iterator.next() == [])
        #expect(await iterator.next() == [8, 9])
        _ = Glibc.close(theirs)
        #expect(await iterator.next() == nil, "the hang-up ends the stream")
    }

    @Test func withoutSinkValuesAreYieldedAndStopFinishesTheStream() async throws {
        let loop = EventLoop()
        let (ours, theirs) = Self.socketPair()
        defer { _ = Glibc.close(theirs) }
        let (values, continuation) = AsyncStream<[UInt8]>.makeStream()
        let reader = FDNotificationReader(loop: loop, fd: OwnedFD(ours), mtu: 23, continuation: continuation)
        reader.start()
        Self.send(theirs, [1, 2])
        Self.send(theirs, [3])
        var iterator = values.makeAsyncIterator()
        #expect(await iterator.next() == [1, 2])
        #expect(await iterator.next() == [3])
        reader.stop()
        #expect(await iterator.next() == nil)
        // Our end is closed: the peer sees EOF, as BlueZ does when we release the acquisition.
        var byte: UInt8 = 0
        #expect(Glibc.read(theirs, &byte, 1) == 0)
    }

    @Test func stopEndsTheSinkSubscription() async throws {
        let loop = EventLoop()
        let (ours, theirs) = Self.socketPair()
        defer { _ = Glibc.close(theirs) }
        let count = Atomic(0)
        let (values, continuation) = AsyncStream<[UInt8]>.makeStream()
        let reader = FDNotificationReader(loop: loop, fd: OwnedFD(ours), mtu: 23, continuation: continuation,
                                          sink: { _ in count.add(1, ordering: .relaxed) })
        reader.start()
        Self.send(theirs, [9])
        #expect(await Self.waitUntil { count.load(ordering: .relaxed) == 1 })
        reader.stop()
        for await _ in values { Issue.record("no value may reach the stream when a sink is given") }
        // After the end the socket is closed: nothing more can be delivered.
        var byte: UInt8 = 1
        #expect(Glibc.send(theirs, &byte, 1, Int32(MSG_NOSIGNAL)) < 0)     // EPIPE, without the signal
        #expect(count.load(ordering: .relaxed) == 1)
    }
}
