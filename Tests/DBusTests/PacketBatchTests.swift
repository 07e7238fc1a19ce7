import DBus
import Glibc
import Testing

/// `recvmmsg` through the C shim, on a real SOCK_SEQPACKET socketpair.
struct PacketBatchTests {
    private static func socketPair() -> (ours: Int32, theirs: Int32) {
        var fds: [Int32] = [-1, -1]
        let rc = socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        precondition(rc == 0)
        return (fds[0], fds[1])
    }

    private static func send(_ fd: Int32, _ bytes: [UInt8]) {
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        precondition(n == bytes.count)
    }

    private static func receive(_ fd: Int32, capacity: Int = 64, slots: Int) -> (PacketBatch.Outcome, [[UInt8]]) {
        var packets: [[UInt8]] = []
        let outcome = PacketBatch(capacity: capacity, slots: slots).receive(fd: fd) { packets.append(Array($0)) }
        return (outcome, packets)
    }

    @Test func oneCallTakesWhatIsQueuedInOrderAndSaysWhenTheQueueIsEmpty() {
        let (ours, theirs) = Self.socketPair()
        defer { close(ours); close(theirs) }
        #expect(Self.receive(ours, slots: 4).0 == .wouldBlock)
        let sent: [[UInt8]] = (0..<10).map { [UInt8($0), 0xAB] } + [[]]
        for value in sent { Self.send(theirs, value) }
        var got: [[UInt8]] = []
        var counts: [Int] = []
        while case let (.received(count), packets) = Self.receive(ours, slots: 4) {
            counts.append(count)
            got += packets
        }
        #expect(counts == [4, 4, 3])          // the last batch is short: the queue was drained
        #expect(got == sent)                  // the empty notification too
    }

    @Test func aPacketLongerThanTheCapacityIsCutLikeARead() {
        let (ours, theirs) = Self.socketPair()
        defer { close(ours); close(theirs) }
        Self.send(theirs, Array(repeating: 7, count: 100))
        Self.send(theirs, [1, 2, 3])
        let (outcome, packets) = Self.receive(ours, capacity: 16, slots: 8)
        #expect(outcome == .received(2))
        #expect(packets == [Array(repeating: 7, count: 16), [1, 2, 3]])
    }

    @Test func aClosedPeerReadsAsEmptyPacketsAndABadFDFails() {
        let (ours, theirs) = Self.socketPair()
        close(theirs)
        let (outcome, packets) = Self.receive(ours, slots: 2)
        if case .received(let count) = outcome { #expect(count >= 1) } else { Issue.record("\(outcome)") }
        #expect(packets.allSatisfy { $0.isEmpty })
        close(ours)
        // Not `ours` again: another test may already have been given that number.
        #expect(Self.receive(-1, slots: 2).0 == .failed(EBADF))
    }
}
