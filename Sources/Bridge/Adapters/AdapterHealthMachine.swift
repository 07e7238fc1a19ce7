/// One adapter's health (docs/adapters.md), as a value type: facts in, actions out, no I/O and no clock of its own (`now` is
/// passed in), so the wedge rule and the recovery ladder are tested by driving it directly.
///
/// Wedged: for `window` every discovery or connect operation through the adapter failed or timed out (none
/// succeeded) while a saved device on it was missing. The ladder then runs one step per wedge:
/// `restart_discovery`; if that fails at once, or the adapter is still wedged a window later, `power_cycle`; if that
/// fails, or the adapter is wedged again a window later, the state is `failed` and the ladder starts over after a
/// backoff that doubles up to `maxBackoff`. Any operation that succeeds ends it all: state `ok`, ladder and backoff
/// reset.
public struct AdapterHealthMachine: Sendable {
    public enum State: String, Sendable {
        case ok, recovering, failed
    }

    public enum Step: String, Sendable, CaseIterable {
        case restartDiscovery = "restart_discovery"
        case powerCycle = "power_cycle"
    }

    public enum Input: Sendable, Equatable {
        /// A discovery or connect operation through the adapter succeeded.
        case operationSucceeded
        /// One failed or timed out; the text is kept as `last_error`.
        case operationFailed(String)
        /// Whether some saved device assigned to the adapter is missing (not online).
        case deviceMissing(Bool)
        /// A recovery step the machine asked for has finished.
        case stepFinished(Step, ok: Bool, error: String?)
        /// A wake-up the machine asked for is due (early or repeated ones are harmless).
        case tick
    }

    public enum Action: Sendable, Equatable {
        /// Run this recovery step, then feed `stepFinished`.
        case run(Step)
        /// Log and announce a finished step (`adapter_recovery` event).
        case announce(Step, ok: Bool)
        /// Feed `tick` at this instant.
        case wake(at: ContinuousClock.Instant)
        /// `state`, `recoveries` or `lastError` changed: republish the adapter list.
        case changed
    }

    public let window: Duration
    public let firstBackoff: Duration
    public let maxBackoff: Duration

    public private(set) var state: State = .ok
    /// Recovery ladders started (wedges detected).
    public private(set) var recoveries = 0
    public private(set) var lastError: String?
    /// The first failure since the last success or recovery step; nil while nothing is failing.
    private var failingSince: ContinuousClock.Instant?
    private var missingSince: ContinuousClock.Instant?
    /// The next step of the ladder; nil when the ladder is exhausted (the next wedge means `failed`).
    private var nextStep: Step? = .restartDiscovery
    private var running: Step?
    private var backoff: Duration?
    private var retryAt: ContinuousClock.Instant?
    /// A window after a discovery restart that answered: if nothing has worked through the adapter by then, it is
    /// still wedged. Without it an adapter whose devices all failed over elsewhere would see no operation at all
    /// (nothing is placed on a recovering adapter, and it runs no discovery for others) and stay `recovering`.
    private var recheckAt: ContinuousClock.Instant?

    public init(window: Duration = .seconds(60), firstBackoff: Duration = .seconds(30),
                maxBackoff: Duration = .seconds(600)) {
        self.window = window
        self.firstBackoff = firstBackoff
        self.maxBackoff = maxBackoff
    }

    /// Whether a step is running or the machine waits for one; a device with `adapter: any` avoids such an adapter.
    public var isHealthy: Bool { state == .ok }

    /// Whether operations have failed since the last success or recovery step (the wedge window is open).
    public var isFailing: Bool { failingSince != nil }

    public mutating func handle(_ input: Input, now: ContinuousClock.Instant) -> [Action] {
        var out: [Action] = []
        switch input {
        case .operationSucceeded:
            failingSince = nil
            recheckAt = nil
            if state != .ok || nextStep != .restartDiscovery || retryAt != nil {
                state = .ok
                nextStep = .restartDiscovery
                backoff = nil
                retryAt = nil
                out.append(.changed)
            }
        case .operationFailed(let error):
            if failingSince == nil { failingSince = now }
            if lastError != error {
                lastError = error
                out.append(.changed)
            }
        case .deviceMissing(let missing):
            if missing, missingSince == nil { missingSince = now }
            if !missing { missingSince = nil }
        case .stepFinished(let step, let ok, let error):
            guard running == step else { break }
            running = nil
            out.append(.announce(step, ok: ok))
            if let error, lastError != error {
                lastError = error
                out.append(.changed)
            }
            // An operation succeeded while the step ran: the adapter is fine, whatever the step said.
            if state == .ok { break }
            // A step's own result is the freshest evidence: the window starts again from it.
            failingSince = ok ? nil : now
            switch (step, ok) {
            case (.restartDiscovery, false):
                start(.powerCycle, &out)
            case (.restartDiscovery, true):
                nextStep = .powerCycle
                recheckAt = now + window
            case (.powerCycle, true):
                nextStep = nil
                // Nothing missing on it (its devices failed over elsewhere): no operation will come to prove it
                // works, and the power cycle itself answered, so it is usable again. With a device missing, the
                // device's reconnection decides.
                if missingSince == nil {
                    state = .ok
                    out.append(.changed)
                }
            case (.powerCycle, false):
                giveUp(now: now, &out)
            }
        case .tick:
            break
        }
        evaluate(now: now, &out)
        return out
    }

    private mutating func evaluate(now: ContinuousClock.Instant, _ out: inout [Action]) {
        guard running == nil else { return }
        if let retryAt {
            guard now >= retryAt else { return out.append(.wake(at: retryAt)) }
            self.retryAt = nil
            nextStep = .restartDiscovery
            failingSince = nil
            recoveries += 1
            start(.restartDiscovery, &out)
            return
        }
        if let recheck = recheckAt, state == .recovering, nextStep == .powerCycle {
            guard now >= recheck else {
                out.append(.wake(at: recheck))
                return evaluateWindow(now: now, &out)
            }
            recheckAt = nil
            if missingSince != nil {
                // Nothing worked through it since the restart, and a device of it is still missing (or left it
                // while it failed): still wedged.
                failingSince = nil
                start(.powerCycle, &out)
            } else {
                // Nothing is missing on it any more and nothing failed: no evidence of a wedge is left.
                state = .ok
                nextStep = .restartDiscovery
                out.append(.changed)
            }
            return
        }
        evaluateWindow(now: now, &out)
    }

    private mutating func evaluateWindow(now: ContinuousClock.Instant, _ out: inout [Action]) {
        guard let failingSince, let missingSince else { return }
        let since = max(failingSince, missingSince)
        guard now - since >= window else { return out.append(.wake(at: since + window)) }
        // Wedged.
        self.failingSince = nil
        recheckAt = nil
        guard let step = nextStep else {
            giveUp(now: now, &out)
            return evaluate(now: now, &out)     // arms the wake-up for the end of the backoff
        }
        if step == .restartDiscovery { recoveries += 1 }
        start(step, &out)
    }

    private mutating func start(_ step: Step, _ out: inout [Action]) {
        running = step
        if state != .recovering {
            state = .recovering
        }
        out.append(.changed)
        out.append(.run(step))
    }

    private mutating func giveUp(now: ContinuousClock.Instant, _ out: inout [Action]) {
        let delay = backoff.map { min($0 * 2, maxBackoff) } ?? firstBackoff
        backoff = delay
        retryAt = now + delay
        nextStep = nil
        state = .failed
        out.append(.changed)
    }
}
