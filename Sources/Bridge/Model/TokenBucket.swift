/// A rate with a burst: `capacity` tokens, one back every `interval`. For what outsiders decide the pace of: anyone
/// in radio range asks the passive half for new things (entities, auto devices), any broker client floods the bridge
/// API with requests that are answered busy; those are paid for in tokens, and a burst lets a real start-up (every
/// sensor of a house heard in the first seconds) or a script's batch through. Pure: the caller passes the time.
package struct TokenBucket: Sendable {
    let capacity: Int
    let interval: Duration
    private var tokens: Int
    private var refilled: ContinuousClock.Instant?

    package init(capacity: Int, interval: Duration) {
        self.capacity = capacity
        self.interval = interval
        tokens = capacity
    }

    /// Takes a token if one is there.
    package mutating func take(now: ContinuousClock.Instant) -> Bool {
        refill(now)
        guard tokens > 0 else { return false }
        tokens -= 1
        return true
    }

    private mutating func refill(_ now: ContinuousClock.Instant) {
        guard let last = refilled else {
            refilled = now
            return
        }
        guard now > last else { return }
        let earned = Int((now - last) / interval)
        guard earned > 0 else { return }
        if tokens + earned >= capacity {
            tokens = capacity
            refilled = now
        } else {
            tokens += earned
            refilled = last + interval * earned
        }
    }
}
