internal import CDBus
import Glibc

/// Reads the packets queued on a SOCK_SEQPACKET socket (BlueZ's `AcquireNotify` sockets) with one `recvmmsg(2)`.
///
/// A `read()` loop costs one call per packet plus a last one that only returns EAGAIN: at 1 kHz, where every
/// wake-up finds one notification, that last call is a third of the reader's system calls. One `recvmmsg` returns
/// all that is queued (up to `slots`); fewer than `slots` means the queue was empty, so no EAGAIN call follows, and
/// a packet that lands just after is reported by the next `poll()` (level-triggered).
public enum PacketBatch {
    public enum Outcome: Equatable, Sendable {
        /// This many packets were handed to the body; fewer than `slots` means the queue is drained.
        case received(Int)
        case wouldBlock
        case interrupted
        case failed(Int32)
    }

    /// Receives up to `slots` packets of at most `capacity` bytes each (longer ones are truncated, as `read` would)
    /// without blocking, and calls `body` with each, in order, before returning. The bytes are only valid inside
    /// `body`. Buffers live on the stack: no allocation per call.
    public static func receive(fd: Int32, capacity: Int, slots: Int,
                               _ body: (UnsafeRawBufferPointer) -> Void) -> Outcome {
        withUnsafeTemporaryAllocation(byteCount: capacity * slots, alignment: 16) { bytes in
            withUnsafeTemporaryAllocation(of: iovec.self, capacity: slots) { vectors in
                withUnsafeTemporaryAllocation(of: gattbridge_mmsghdr.self, capacity: slots) { headers in
                    for slot in 0..<slots {
                        vectors[slot] = iovec(iov_base: bytes.baseAddress! + slot * capacity, iov_len: capacity)
                        var header = gattbridge_mmsghdr()
                        header.msg_hdr.msg_iov = vectors.baseAddress! + slot
                        header.msg_hdr.msg_iovlen = 1
                        headers[slot] = header
                    }
                    let count = gattbridge_recvmmsg(fd, headers.baseAddress!, UInt32(slots), Int32(MSG_DONTWAIT))
                    if count < 0 {
                        let error = errno
                        if error == EAGAIN || error == EWOULDBLOCK { return .wouldBlock }
                        if error == EINTR { return .interrupted }
                        return .failed(error)
                    }
                    for slot in 0..<Int(count) {
                        let length = min(Int(headers[slot].msg_len), capacity)
                        body(UnsafeRawBufferPointer(start: bytes.baseAddress! + slot * capacity, count: length))
                    }
                    return .received(Int(count))
                }
            }
        }
    }
}
