import Glibc

/// A pipe the network thread sleeps on between reconnect attempts, so `shutdown` can end a back-off at once.
final class WakeSignal: Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32

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

    func signal() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Sleeps until signalled or `milliseconds` pass, then clears the signal.
    func wait(milliseconds: Int32) {
        var entry = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        _ = poll(&entry, 1, milliseconds)
        var drain = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &drain, drain.count) > 0 {}
    }
}
