internal import CDBus
import Glibc

/// Reads the packets queued on a SOCK_SEQPACKET socket (BlueZ's `AcquireNotify` sockets) with one `recvmmsg(2)`.
///
/// A `read()` loop costs one call per packet plus a last one that only returns EAGAIN: at 1 kHz, where every
/// wake-up finds one notification, that last call is a third of the reader's system calls. One `recvmmsg` returns
/// all that is queued (up to `slots`); fewer than `slots` means the queue was empty, so no EAGAIN call follows, and
/// a packet that lands just after is reported by the next `poll()` (level-triggered).
///
/// The buffers are allocated once, not per call: a few KB is past what Swift puts on the stack, and a heap block
/// that size per notification showed up in the profile (malloc, free and the allocator's consolidation). One owner,
/// one thread: the reader that owns it calls `receive` only on the D-Bus loop thread, hence `@unchecked Sendable`.
public final class PacketBatch: @unchecked Sendable {
    public enum Outcome: Equatable, Sendable {
        /// This many packets were handed to the body; fewer than `slots` means the queue is drained.
        case received(Int)
        case wouldBlock
        case interrupted
        case failed(Int32)
    }

    public let capacity: Int
    public let slots: Int
    private let bytes: UnsafeMutableRawPointer
    private let vectors: UnsafeMutablePointer<iovec>
    private let headers: UnsafeMutablePointer<gattbridge_mmsghdr>

    /// Room for `slots` packets of `capacity` bytes each (longer ones are truncated, as `read` would).
    public init(capacity: Int, slots: Int) {
        self.capacity = max(capacity, 1)
        self.slots = max(slots, 1)
        bytes = .allocate(byteCount: self.capacity * self.slots, alignment: 16)
        vectors = .allocate(capacity: self.slots)
        headers = .allocate(capacity: self.slots)
        for slot in 0..<self.slots {
            vectors[slot] = iovec(iov_base: bytes + slot * self.capacity, iov_len: self.capacity)
            var header = gattbridge_mmsghdr()
            header.msg_hdr.msg_iov = vectors + slot
            header.msg_hdr.msg_iovlen = 1
            headers[slot] = header
        }
    }

    deinit {
        bytes.deallocate()
        vectors.deallocate()
        headers.deallocate()
    }

    /// Receives what is queued on `fd` without blocking and calls `body` with each packet, in order, before
    /// returning. The bytes are only valid inside `body`.
    public func receive(fd: Int32, _ body: (UnsafeRawBufferPointer) -> Void) -> Outcome {
        let count = gattbridge_recvmmsg(fd, headers, UInt32(slots), Int32(MSG_DONTWAIT))
        if count < 0 {
            let error = errno
            if error == EAGAIN || error == EWOULDBLOCK { return .wouldBlock }
            if error == EINTR { return .interrupted }
            return .failed(error)
        }
        for slot in 0..<Int(count) {
            let length = min(Int(headers[slot].msg_len), capacity)
            body(UnsafeRawBufferPointer(start: bytes + slot * capacity, count: length))
        }
        return .received(Int(count))
    }
}
