internal import CSystemd
import Glibc

/// The service manager's notification protocol (sd_notify(3)). Every call is one datagram to `NOTIFY_SOCKET`, a
/// non-blocking send, so it is fine from async code; without `NOTIFY_SOCKET` (not under systemd) calls do nothing.
public struct SystemdNotifier: Sendable {
    public init() {}

    public var isEnabled: Bool { getenv("NOTIFY_SOCKET") != nil }

    public func ready() { notify("READY=1") }

    /// A one-line status for `systemctl status`; newlines would start new assignments, so they become spaces.
    public func status(_ text: String) {
        notify("STATUS=" + text.replacing("\r", with: " ").replacing("\n", with: " "))
    }

    public func watchdog() { notify("WATCHDOG=1") }

    public func stopping() { notify("STOPPING=1") }

    /// systemd needs the monotonic timestamp to match this reload with the READY=1 that ends it.
    public func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
        notify("RELOADING=1\nMONOTONIC_USEC=\(microseconds)")
    }

    /// Sends `state` as is (newline-separated assignments).
    public func notify(_ state: String) {
        guard isEnabled else { return }
        _ = sd_notify(0, state)
    }

    /// `WATCHDOG_USEC`, when the watchdog is on and meant for this process (`WATCHDOG_PID` unset or ours).
    public var watchdogTimeout: Duration? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return .microseconds(microseconds)
    }

    /// How often to send WATCHDOG=1: half the timeout, as sd_watchdog_enabled(3) recommends.
    public var watchdogInterval: Duration? { watchdogTimeout.map { $0 / 2 } }
}
