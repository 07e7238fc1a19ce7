/// A thread with a `poll` loop of its own that can serve the broker's socket beside its other descriptors: in the
/// daemon, the D-Bus event loop, so a notification, its PUBLISH and the broker's PUBACK are all handled by one thread
/// and one `poll`, as the floor relay does (docs/performance.md). Without a host the client runs a thread of its own.
public protocol MQTTLoopHost: Sendable {
    /// On the host's thread, from now on: `interest` before every `poll` (which descriptor to wait for, and until
    /// when), `serve` after it with that descriptor's `revents` (0 when only the deadline passed), until `serve`
    /// returns false. `interest` and `serve` never block.
    func attach(interest: @escaping @Sendable () -> MQTTPollInterest, serve: @escaping @Sendable (Int16) -> Bool)
    /// From any thread: the host asks `interest` again soon (returns at once on the host's own thread).
    func wake()
    var isHostThread: Bool { get }
}

/// What the MQTT link waits for in the host's next `poll`.
public struct MQTTPollInterest: Sendable {
    /// The broker's socket, or −1 for none (while disconnected or connecting).
    public var fd: Int32
    /// `POLLIN` / `POLLOUT`.
    public var events: Int16
    /// CLOCK_MONOTONIC nanoseconds from which `serve` runs on the host's next turn even if the descriptor is not
    /// ready.
    public var deadline: Int64
    /// When the host's `poll` must return at the latest (for this source): `deadline`, or later when a turn the host
    /// makes anyway may serve the deadline (while traffic flows, reads are gathered without a wake-up of their own).
    public var wakeBy: Int64

    public init(fd: Int32, events: Int16, deadline: Int64, wakeBy: Int64? = nil) {
        self.fd = fd
        self.events = events
        self.deadline = deadline
        self.wakeBy = max(wakeBy ?? deadline, deadline)
    }
}
