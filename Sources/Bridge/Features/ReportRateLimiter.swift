/// At most `limit` reports per window; the rest are counted and summed up once the window is over (docs/security.md: at
/// most 10 rejected-command reports a second on `B/bridge/log`). Pure: the caller passes the time.
struct ReportRateLimiter: Sendable {
    let limit: Int
    let window: Duration
    private var windowStart: ContinuousClock.Instant?
    private var admitted = 0
    /// Reports not published in the current (or just ended) window.
    private(set) var suppressed = 0

    init(limit: Int = 10, window: Duration = .seconds(1)) {
        self.limit = limit
        self.window = window
    }

    enum Decision: Equatable {
        case publish
        /// Counted; `firstInWindow` asks the caller to arrange a `summary(now:)` at `windowEnd`.
        case suppress(firstInWindow: Bool)
    }

    var windowEnd: ContinuousClock.Instant? { windowStart.map { $0 + window } }

    mutating func admit(now: ContinuousClock.Instant) -> Decision {
        if let start = windowStart, now < start + window {
            if admitted < limit {
                admitted += 1
                return .publish
            }
            suppressed += 1
            return .suppress(firstInWindow: suppressed == 1)
        }
        windowStart = now
        admitted = 1
        return .publish
    }

    /// The number of reports suppressed, once their window is over (nil before, or when there were none).
    mutating func summary(now: ContinuousClock.Instant) -> Int? {
        guard suppressed > 0, let end = windowEnd, now >= end else { return nil }
        defer { suppressed = 0 }
        return suppressed
    }
}
