import DBus
import Glibc
import Synchronization

/// Reads notifications from an `AcquireNotify` socket on the D-Bus event-loop thread.
///
/// The socket is SOCK_SEQPACKET: each `read()` returns exactly one notification, so no framing is needed and no
/// D-Bus message is involved per value. A hang-up or an error means BlueZ ended the subscription (disconnect,
/// reconnect renegotiating the MTU, or another party releasing it). A zero-length notification is legal GATT and
/// also reads as 0 bytes, so a 0 is taken as end-of-file only when the socket reports the hang-up (POLLHUP,
/// POLLRDHUP or POLLERR); otherwise it is delivered as an empty value. (The one case this cannot tell apart: an
/// empty notification still queued when BlueZ closes the socket is lost with the hang-up.)
///
/// With a sink, each value is handed to it right here on the loop thread instead of being yielded to the stream:
/// every hop to another thread is a futex wake-up and a context switch, which at 1 kHz cost more than the work itself.
/// The stream then carries no values but still finishes when the subscription ends, and the sink is never called
/// after that (both happen on the loop thread, in order).
///
/// No socket option on our end enlarges the queue: on an AF_UNIX SEQPACKET socketpair a queued packet is charged to
/// the sender's SO_SNDBUF (BlueZ's end; ~278 small notifications by default), not to our SO_RCVBUF (checked on Linux
/// 6.18: setting it changes nothing). Reading promptly is the only remedy on this side.
final class FDNotificationReader: Sendable {
    private struct State {
        var fd: Int32
        var watch: EventLoop.WatchID?
        var closed = false
    }

    private let loop: EventLoop
    /// Loop thread only (`readAvailable`).
    private let batch: PacketBatch
    private let continuation: AsyncStream<[UInt8]>.Continuation
    private let sink: (@Sendable (UnsafeRawBufferPointer) -> Void)?
    private let state: Mutex<State>

    /// Takes ownership of `fd` (closed by `stop()` or at the hang-up). `sink`, when given, receives every value on
    /// the loop thread (it must not block), lent from the read buffer: valid only during the call.
    init(loop: EventLoop, fd: consuming OwnedFD, mtu: Int, continuation: AsyncStream<[UInt8]>.Continuation,
         sink: (@Sendable (UnsafeRawBufferPointer) -> Void)? = nil) {
        self.loop = loop
        // A notification carries at most MTU − 3 bytes; a larger buffer costs nothing and survives an MTU we were not told.
        batch = PacketBatch(capacity: max(mtu, 1024), slots: Self.slots)
        self.continuation = continuation
        self.sink = sink
        state = Mutex(State(fd: fd.take()))
    }

    func start() {
        let fd = state.withLock { $0.fd }
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        loop.execute { [self] in
            let watch = loop.watchReadable(fd: fd) { [self] in readAvailable() }
            let closedMeanwhile = state.withLock { state in
                if state.closed { return true }
                state.watch = watch
                return false
            }
            if closedMeanwhile { loop.removeWatch(watch) }
        }
    }

    /// Closes the socket (which releases the acquisition in BlueZ) and ends the stream. Idempotent.
    func stop() {
        if loop.isLoopThread {
            close()
        } else {
            loop.execute { [self] in close() }
        }
    }

    /// Packets one `recvmmsg` takes: a burst larger than this costs one more call per `slots` notifications.
    private static let slots = 8

    /// The most batches one turn of the loop reads: a peripheral that floods leaves the rest for the next turn (its
    /// socket stays readable), so the loop's other descriptors and the broker's link get theirs in between.
    private static let batchesPerTurn = 4

    /// Runs on the loop thread. Reads what the socket holds, up to `batchesPerTurn` (one `recvmmsg` per batch, see
    /// `PacketBatch`), so a burst costs one wake-up of the loop, and a lone notification one system call.
    private func readAvailable() {
        assert(loop.isLoopThread, "FDNotificationReader read off the D-Bus loop thread")
        for _ in 0..<Self.batchesPerTurn {
            let fd = state.withLock { $0.closed ? -1 : $0.fd }
            guard fd >= 0 else { return }
            var ended = false
            // A sink borrows the value from the read buffer; the stream gets a copy the size of the notification.
            let outcome = batch.receive(fd: fd) { packet in
                guard !ended else { return }
                // An empty notification, unless it is the end-of-file of a hung-up socket.
                if packet.isEmpty && Self.peerHungUp(fd) {
                    ended = true
                    return
                }
                deliver(packet)
            }
            switch outcome {
            case _ where ended:
                close()
                return
            case .received(let count):
                if count == 0 && Self.peerHungUp(fd) { close() }
                if count < Self.slots { return }
            case .wouldBlock:
                return
            case .interrupted:
                continue
            case .failed:
                close()     // a socket error
                return
            }
        }
    }

    /// Linux's POLLRDHUP, which Glibc only exports with _GNU_SOURCE.
    private static let pollReadHangUp: Int16 = 0x2000

    /// The socket's hang-up state, without waiting. On an AF_UNIX SEQPACKET socket the peer's close sets POLLHUP.
    static func peerHungUp(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN) | pollReadHangUp, revents: 0)
        guard poll(&entry, 1, 0) >= 0 else { return true }
        return entry.revents & (Int16(POLLHUP) | pollReadHangUp | Int16(POLLERR) | Int16(POLLNVAL)) != 0
    }

    private func deliver(_ value: UnsafeRawBufferPointer) {
        if let sink {
            sink(value)
        } else {
            continuation.yield(Array(value))
        }
    }

    /// Runs on the loop thread.
    private func close() {
        let taken: (fd: Int32, watch: EventLoop.WatchID?)? = state.withLock { state in
            guard !state.closed else { return nil }
            state.closed = true
            defer { state.watch = nil }
            return (state.fd, state.watch)
        }
        guard let taken else { return }
        if let watch = taken.watch { loop.removeWatch(watch) }
        _ = Glibc.close(taken.fd)
        continuation.finish()
    }
}
