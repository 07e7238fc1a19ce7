/// The reconnection policy of device sessions, as data: which failure leads to which delay and next step, plus the
/// timeouts the session arms. Modelled on bleak-retry-connector: transient controller errors retry quickly, a busy
/// stack waits longer, a vanished device object is rediscovered, and adapter or bluetoothd outages wait for events
/// instead of polling.
public struct ReconnectPolicy: Sendable, Hashable {
    /// The table. A category missing from it uses `fallback`.
    public var rules: [FailureKind.Category: RetryRule]
    public var fallback: RetryRule
    /// How long a `Connect` may take before the attempt counts as `connectTimeout`.
    public var connectTimeout: Duration
    /// How long service resolution may take before the attempt counts as `resolveTimeout`.
    public var resolveTimeout: Duration
    /// A session online at least this long counts as stable: its next failure starts the backoff from attempt 1.
    public var stableAfter: Duration
    /// How long `Device1.Pair` may take (a peripheral may wait for its user to type) before it counts as failed.
    public var pairTimeout: Duration = .seconds(60)
    /// Connect failures that count against the adapter's health (docs/adapters.md wedge rule): the controller is busy or
    /// bluetoothd does not answer. A device that is simply away fails otherwise (page timeout,
    /// `le-connection-abort-by-local`, or our own connect timeout, which races BlueZ's 20 s LE connection timeout)
    /// and must not get a healthy adapter power-cycled.
    public var adapterFailures: Set<FailureKind.Category> = [.inProgress, .notReady, .noReply]

    public init(rules: [FailureKind.Category: RetryRule], fallback: RetryRule,
                connectTimeout: Duration = .seconds(20), resolveTimeout: Duration = .seconds(30),
                stableAfter: Duration = .seconds(30)) {
        self.rules = rules
        self.fallback = fallback
        self.connectTimeout = connectTimeout
        self.resolveTimeout = resolveTimeout
        self.stableAfter = stableAfter
    }

    public func rule(for kind: FailureKind) -> RetryRule {
        rules[kind.category] ?? fallback
    }

    /// The delay before retry number `attempt` after `kind`; nil when the next step waits for an event.
    public func delay(for kind: FailureKind, attempt: Int, jitter: Double) -> Duration? {
        rule(for: kind).delay(attempt: attempt, jitter: jitter)
    }

    public static let standard = ReconnectPolicy(
        rules: [
            // The controller aborted the attempt (often a busy radio): retry soon.
            .connectAbortedLocally: RetryRule(initialDelay: .milliseconds(500), multiplier: 1.5, maxDelay: .seconds(10), then: .retryConnect),
            // Page timeout, host down, software abort: the device is probably away.
            .connectFailed: RetryRule(initialDelay: .seconds(1), maxDelay: .seconds(30), then: .retryConnect),
            // bluetoothd is already connecting: give it time.
            .inProgress: RetryRule(initialDelay: .seconds(2), maxDelay: .seconds(30), then: .retryConnect),
            .notReady: RetryRule(initialDelay: .seconds(2), maxDelay: .seconds(30), then: .retryConnect),
            // BlueZ dropped the object: discover it again at once, back off if that keeps happening.
            .deviceGone: RetryRule(initialDelay: .seconds(1), maxDelay: .seconds(30), immediateAttempts: 1, then: .rediscover),
            .notConnected: RetryRule(initialDelay: .seconds(1), maxDelay: .seconds(30), then: .retryConnect),
            // Unanswered: the device may be away, or bluetoothd stuck on a silent controller. A timeout does not
            // count against the adapter (an absent device makes them too), so the retry goes through discovery,
            // whose start the adapter's health does count: it works on a healthy radio and times out on a stuck one.
            .connectTimeout: RetryRule(initialDelay: .seconds(2), maxDelay: .seconds(60), then: .rediscover),
            .resolveTimeout: RetryRule(initialDelay: .seconds(2), maxDelay: .seconds(60), then: .retryConnect),
            .subscribeFailed: RetryRule(initialDelay: .seconds(2), maxDelay: .seconds(60), then: .retryConnect),
            .noReply: RetryRule(initialDelay: .seconds(2), maxDelay: .seconds(60), then: .retryConnect),
            // Usually followed by a bluezGone event; retrying (not waiting) cannot deadlock if bluetoothd is back already.
            .serviceUnknown: RetryRule(initialDelay: .seconds(2), maxDelay: .seconds(30), then: .retryConnect),
            // Most likely a stale GATT cache in BlueZ: drop the device so it is resolved afresh; slowly, as it may be a
            // config mistake.
            .characteristicMissing: RetryRule(initialDelay: .seconds(5), maxDelay: .seconds(300), then: .removeDeviceAndRediscover),
            // A working device dropped the link: reconnect soon.
            .linkLost: RetryRule(initialDelay: .seconds(1), maxDelay: .seconds(30), then: .retryConnect),
            .adapterOff: .wait(.waitForAdapter),
            .adapterMissing: .wait(.waitForAdapter),
            .bluezGone: .wait(.waitForBlueZ),
            .other: RetryRule(initialDelay: .seconds(5), maxDelay: .seconds(60), then: .retryConnect),
            // A refused pairing (wrong passkey): never a tight loop, which locks some peripherals out. 1 min → 10 min.
            .authentication: RetryRule(initialDelay: .seconds(60), multiplier: 2, maxDelay: .seconds(600), then: .retryConnect),
        ],
        fallback: RetryRule(initialDelay: .seconds(5), maxDelay: .seconds(60), then: .retryConnect)
    )
}
