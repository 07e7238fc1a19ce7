import Durations

/// What to do after one kind of failure: how long to wait (exponential, capped, jittered) and what to try then.
///
/// Pure data, so the whole reconnection behaviour is a table that can be read and tested at a glance.
public struct RetryRule: Sendable, Hashable {
    /// The step taken once the delay has passed (or, for the waiting steps, once the world changes).
    public enum Next: Sendable, Hashable {
        /// Connect again (discovering first if the device object is unknown).
        case retryConnect
        /// Forget the device object and discover it again before connecting.
        case rediscover
        /// Remove the device from BlueZ (flushing its cached GATT tree), then discover and connect.
        case removeDeviceAndRediscover
        /// No timer: wait until the adapter is reported powered.
        case waitForAdapter
        /// No timer: wait until `org.bluez` returns and the adapter is reported again.
        case waitForBlueZ

        /// True for the steps that wait for an event instead of a timer.
        public var waitsForEvent: Bool { self == .waitForAdapter || self == .waitForBlueZ }
    }

    /// The delay before the first timed retry.
    public var initialDelay: Duration
    /// Growth factor per further attempt.
    public var multiplier: Double
    /// The cap: no delay is ever longer, jitter included.
    public var maxDelay: Duration
    /// ± fraction of the delay chosen at random, so devices that failed together do not retry in lockstep.
    public var jitter: Double
    /// How many first attempts run at once (delay zero) before the timed backoff starts.
    public var immediateAttempts: Int
    public var then: Next

    public init(initialDelay: Duration, multiplier: Double = 2, maxDelay: Duration, jitter: Double = 0.2,
                immediateAttempts: Int = 0, then: Next) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.jitter = jitter
        self.immediateAttempts = immediateAttempts
        self.then = then
    }

    /// A rule without a timer, for failures that only an event can end.
    public static func wait(_ next: Next) -> RetryRule {
        RetryRule(initialDelay: .zero, multiplier: 1, maxDelay: .zero, jitter: 0, then: next)
    }

    /// The delay before retry number `attempt` (1-based), rounded to milliseconds; nil for the waiting steps.
    /// `jitter` is a random value in [-1, 1] (clamped), injected so that callers and tests decide where randomness
    /// comes from.
    public func delay(attempt: Int, jitter unit: Double) -> Duration? {
        if then.waitsForEvent { return nil }
        let attempt = max(1, attempt)
        if attempt <= immediateAttempts { return .zero }
        let cap = maxDelay.inSeconds
        var seconds = initialDelay.inSeconds
        for _ in 0..<(attempt - immediateAttempts - 1) where seconds < cap {
            seconds *= multiplier
        }
        let unit = unit.isNaN ? 0 : min(1, max(-1, unit))
        seconds = min(seconds, cap) * (1 + unit * jitter)
        seconds = min(max(0, seconds), cap)
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }
}
