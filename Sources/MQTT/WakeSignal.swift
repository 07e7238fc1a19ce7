import Glibc

/// A pipe the network thread sleeps on, between reconnect attempts and beside the broker's socket: `shutdown` ends
/// a back-off at once, and publishers whose packet could not be written at once have the thread write it.
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

    var fileDescriptor: Int32 { readEnd }

    /// Sleeps until signalled or `milliseconds` pass, then clears the signal.
    func wait(milliseconds: Int32) {
        var entry = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        _ = poll(&entry, 1, milliseconds)
        drain()
    }

    /// Clears the signal.
    func drain() {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            while read(readEnd, buffer.baseAddress, buffer.count) > 0 {}
        }
    }
}
