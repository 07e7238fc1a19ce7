/// When the daemon drops its read-only file pages (`StartupPageTrim`), as a value type: events in, "trim now" out,
/// no I/O and no clock of its own (the service passes `now` and owns the one timer, set to `deadline`).
///
/// A trim pays off after one-time work: whatever ran once maps its code and read-only data back and keeps it mapped
/// until the next trim. Start-up is the largest such burst, so the first trim comes once the daemon has settled:
/// `settle` after every configured device first came online, or `settle` after `fallback` when that does not happen
/// (no device, a device away). Later bursts — devices added, adopted or coming and going, an adapter appearing, a
/// reload, a broker reconnect with its republish — are one-time work too: after each, the next trim comes once the
/// daemon has been `quiet` (no further change) for a while, and never sooner than `spacing` after the previous trim,
/// so a device that flaps costs at most one trim per `spacing` (each is a few milliseconds of system calls and the
/// minor faults that bring the steady state's pages back). A daemon that never changes trims once.
struct PageTrimSchedule: Sendable {
    struct Timing: Sendable {
        var settle: Duration = .seconds(5)
        var fallback: Duration = .seconds(60)
        var quiet: Duration = .seconds(60)
        var spacing: Duration = .seconds(60)
    }

    enum Event: Sendable, Equatable {
        /// Every configured device is online (the status reporter says so at each change while it holds).
        case allOnline
        /// One-time work happened: a device's availability or the device list, the broker connection, an adapter.
        case changed
    }

    enum Kind: Sendable, Equatable {
        /// The first trim, of what start-up ran.
        case startup
        /// A later one, after changes settled.
        case settled
    }

    let timing: Timing
    /// When the service should next ask `due(now:)`; nil: nothing to do until the next event.
    private(set) var deadline: ContinuousClock.Instant?
    private var lastTrim: ContinuousClock.Instant?

    /// `start`: when the daemon started; the start-up trim comes by `fallback + settle` after it at the latest.
    init(timing: Timing = Timing(), start: ContinuousClock.Instant) {
        self.timing = timing
        deadline = start + timing.fallback + timing.settle
    }

    mutating func handle(_ event: Event, now: ContinuousClock.Instant) {
        switch (event, lastTrim) {
        case (.allOnline, nil):
            // Start-up: the first time every device is online brings the trim forward (later reports change nothing).
            deadline = min(deadline ?? now + timing.settle, now + timing.settle)
        case (.allOnline, .some):
            break   // it accompanies a `.changed`, which decides
        case (.changed, nil):
            break   // the start-up trim, still to come, takes what this ran
        case (.changed, .some(let last)):
            deadline = max(now + timing.quiet, last + timing.spacing)
        }
    }

    /// Whether to trim now; if so, the schedule counts it done (the deadline clears until the next change).
    mutating func due(now: ContinuousClock.Instant) -> Kind? {
        guard let deadline, now >= deadline else { return nil }
        let kind: Kind = lastTrim == nil ? .startup : .settled
        lastTrim = now
        self.deadline = nil
        return kind
    }
}
