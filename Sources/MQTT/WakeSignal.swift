import Glibc
import Synchronization

/// Tells the thread that serves the link (its own network thread, or an `MQTTLoopHost`) that work waits: `shutdown`
/// ends a back-off at once, and publishers whose packet could not be written at once have that thread write it.
/// Its own thread sleeps on a pipe; a host is woken through `MQTTLoopHost.wake`, and not at all from its own thread,
/// which asks for the link's interest again before it polls.
final class WakeSignal: Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32
    private let pending = Atomic<Bool>(false)
    private let host = Mutex<(any MQTTLoopHost)?>(nil)

    init() {
        var fds: [Int32] = [-1, -1]
        _ = pipe(&fds)
        for fd in fds {
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        (readEnd, writeEnd) = (fds[0], fds[1])
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Before the link starts: signals go to `host` from now on.
    func redirect(to host: any MQTTLoopHost) { self.host.withLock { $0 = host } }

    func signal() {
        pending.store(true, ordering: .releasing)
        if let host = host.withLock({ $0 }) {
            if !host.isHostThread { host.wake() }
            return
        }
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// True while a signal waits for the serving thread's next turn.
    var isPending: Bool { pending.load(ordering: .acquiring) }

    /// The serving thread, at the start of a turn: the signal is being acted on.
    func acknowledge() { pending.store(false, ordering: .releasing) }

    var fileDescriptor: Int32 { readEnd }

    /// Clears the pipe (own thread only).
    func drain() {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            while read(readEnd, buffer.baseAddress, buffer.count) > 0 {}
        }
    }
}
