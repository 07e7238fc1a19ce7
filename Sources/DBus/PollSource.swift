/// Something that waits in the event loop's `poll` beside libdbus: one descriptor (or none) and a deadline, asked for
/// afresh before every poll. The broker's socket is one (the MQTT link hosted on this loop), so a notification, its
/// PUBLISH and the broker's PUBACK are served by one thread and one `poll`, as in the floor relay.
public struct PollInterest: Sendable {
    /// −1 for none.
    public var fd: Int32
    /// `POLLIN` / `POLLOUT`.
    public var events: Int16
    /// CLOCK_MONOTONIC nanoseconds from which the source is served on the loop's next turn even if its descriptor
    /// is not ready.
    public var deadline: Int64
    /// When the loop's `poll` must return at the latest for this source: `deadline`, or later when a turn the loop
    /// makes anyway (for another descriptor) may serve the deadline.
    public var wakeBy: Int64

    public init(fd: Int32, events: Int16, deadline: Int64, wakeBy: Int64? = nil) {
        self.fd = fd
        self.events = events
        self.deadline = deadline
        self.wakeBy = max(wakeBy ?? deadline, deadline)
    }
}

/// A source's two calls, both on the loop thread: `interest` before each poll, `serve` after it (with the
/// descriptor's `revents`, 0 when only the deadline passed); `serve` returning false removes the source.
final class PollSource: Sendable {
    let interest: @Sendable () -> PollInterest
    let serve: @Sendable (Int16) -> Bool

    init(interest: @escaping @Sendable () -> PollInterest, serve: @escaping @Sendable (Int16) -> Bool) {
        self.interest = interest
        self.serve = serve
    }
}
