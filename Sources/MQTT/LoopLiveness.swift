import Durations
import Synchronization

/// Evidence, readable from any thread, that the network thread (the client's own, or the host loop serving the link)
/// is making progress. It beats in every turn, and turns come at least once a second (poll deadline), whether or not
/// the broker is reachable. The one call that may legitimately block longer is the connect call (DNS resolution, on a
/// helper thread when hosted; beats pause meanwhile), so it is tracked separately with a generous allowance.
final class LoopLiveness: Sendable {
    static let stallLimit: Duration = .seconds(5)
    static let connectCallAllowance: Duration = .seconds(60)

    private let running = Atomic<Bool>(false)
    private let lastBeat = Atomic<Int64>(0)
    private let connectCallStart = Atomic<Int64>(0)

    func started() {
        beat()
        running.store(true, ordering: .releasing)
    }

    func stopped() { running.store(false, ordering: .releasing) }

    func beat() { lastBeat.store(MonotonicClock.nanoseconds, ordering: .relaxed) }

    func enterConnectCall() { connectCallStart.store(MonotonicClock.nanoseconds, ordering: .relaxed) }

    func leaveConnectCall() {
        connectCallStart.store(0, ordering: .relaxed)
        beat()
    }

    var isAlive: Bool { isAlive(within: Self.stallLimit) }

    /// Whether the link turned within `window` (monotonic clock), or is inside an allowed connect call.
    func isAlive(within window: Duration) -> Bool {
        guard running.load(ordering: .acquiring) else { return false }
        let now = MonotonicClock.nanoseconds
        let connectStart = connectCallStart.load(ordering: .relaxed)
        if connectStart != 0, now - connectStart < Self.connectCallAllowance.inNanoseconds { return true }
        return now - lastBeat.load(ordering: .relaxed) < window.inNanoseconds
    }
}
