import Glibc
import Testing
@testable import Systemd

/// A notify socket like systemd's (AF_UNIX datagrams at a temp path); environment changes make these tests serial.
@Suite(.serialized) struct SystemdNotifierTests {
    /// Binds a datagram socket at a fresh path, points NOTIFY_SOCKET at it for the test body, then cleans up.
    private func withNotifySocket(_ body: (_ receive: () -> String?) throws -> Void) rethrows {
        let path = "/tmp/notify-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in path.utf8.enumerated() { bytes[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setenv("NOTIFY_SOCKET", path, 1)
        defer {
            unsetenv("NOTIFY_SOCKET")
            close(fd)
            unlink(path)
        }
        try body {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(fd, &buffer, buffer.count, 0)
            return count < 0 ? nil : String(decoding: buffer[0..<count], as: UTF8.self)
        }
    }

    @Test func sendsExactStateStrings() {
        withNotifySocket { receive in
            let notifier = SystemdNotifier()
            #expect(notifier.isEnabled)
            notifier.ready()
            #expect(receive() == "READY=1")
            notifier.status("mqtt connected; 2/3 devices online")
            #expect(receive() == "STATUS=mqtt connected; 2/3 devices online")
            notifier.status("two\nlines")
            #expect(receive() == "STATUS=two lines")
            notifier.watchdog()
            #expect(receive() == "WATCHDOG=1")
            notifier.stopping()
            #expect(receive() == "STOPPING=1")
        }
    }

    @Test func reloadingCarriesTheMonotonicClock() throws {
        try withNotifySocket { receive in
            var before = timespec()
            clock_gettime(CLOCK_MONOTONIC, &before)
            SystemdNotifier().reloading()
            var after = timespec()
            clock_gettime(CLOCK_MONOTONIC, &after)
            let message = try #require(receive())
            let lines = message.split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines.first == "RELOADING=1")
            let value = try #require(lines.last?.split(separator: "=", maxSplits: 1).last.flatMap { UInt64($0) })
            #expect(lines.last?.hasPrefix("MONOTONIC_USEC=") == true)
            let low = UInt64(before.tv_sec) * 1_000_000 + UInt64(before.tv_nsec) / 1000
            let high = UInt64(after.tv_sec) * 1_000_000 + UInt64(after.tv_nsec) / 1000
            #expect(low <= value && value <= high)
        }
    }

    @Test func doesNothingWithoutNotifySocket() {
        unsetenv("NOTIFY_SOCKET")
        let notifier = SystemdNotifier()
        #expect(!notifier.isEnabled)
        notifier.ready()  // must not crash or block
    }

    @Test func watchdogIntervalIsHalfTheTimeout() {
        defer {
            unsetenv("WATCHDOG_USEC")
            unsetenv("WATCHDOG_PID")
        }
        let notifier = SystemdNotifier()
        unsetenv("WATCHDOG_USEC")
        #expect(notifier.watchdogInterval == nil)

        setenv("WATCHDOG_USEC", "20000000", 1)
        #expect(notifier.watchdogTimeout == .seconds(20))
        #expect(notifier.watchdogInterval == .seconds(10))

        setenv("WATCHDOG_PID", "\(getpid())", 1)
        #expect(notifier.watchdogInterval == .seconds(10))

        setenv("WATCHDOG_PID", "\(getpid() + 1)", 1)
        #expect(notifier.watchdogInterval == nil, "meant for another process")

        unsetenv("WATCHDOG_PID")
        setenv("WATCHDOG_USEC", "soon", 1)
        #expect(notifier.watchdogInterval == nil)
    }
}
