import DBus
import Glibc
import Synchronization

/// Reads notifications from an `AcquireNotify` socket on the D-Bus event-loop thread.
///
/// The socket is SOCK_SEQPACKET: each `read()` returns exactly one notification, so no framing is needed and no
/// D-Bus message is involved per value. EOF or an error means BlueZ ended the subscription (disconnect, reconnect
/// renegotiating the MTU, or another party releasing it).
final class FDNotificationReader: Sendable {
    private struct State {
        var fd: Int32
        var watch: EventLoop.WatchID?
        var closed = false
    }

    private let loop: EventLoop
    private let capacity: Int
    private let continuation: AsyncStream<[UInt8]>.Continuation
    private let state: Mutex<State>

    /// Takes ownership of `fd`.
    init(loop: EventLoop, fd: Int32, mtu: Int, continuation: AsyncStream<[UInt8]>.Continuation) {
        self.loop = loop
        // A notification carries at most MTU − 3 bytes; a larger buffer costs nothing and survives an MTU we were not told.
        capacity = max(mtu, 1024)
        self.continuation = continuation
        state = Mutex(State(fd: fd))
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

    private func readAvailable() {
        while true {
            let fd = state.withLock { $0.closed ? -1 : $0.fd }
            guard fd >= 0 else { return }
            var failure: Int32 = 0
            let value = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
                let n = Glibc.read(fd, buffer.baseAddress, capacity)
                if n < 0 { failure = errno }
                count = max(n, 0)
                if n == 0 { failure = -1 }
            }
            if failure == EINTR { continue }
            if failure == EAGAIN || failure == EWOULDBLOCK { return }
            if failure != 0 {
                close()
                return
            }
            continuation.yield(value)
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
