@testable import BridgeSession

/// Drives a `SessionMachine` the way the orchestrator would, with a fixed jitter so delays are exact.
struct SessionHarness {
    var machine: SessionMachine
    var now: ContinuousClock.Instant
    /// Every action returned so far, for invariants that span steps.
    private(set) var log: [SessionAction] = []

    init(policy: ReconnectPolicy = .standard, jitter: Double = 0) {
        machine = SessionMachine(policy: policy, jitter: { jitter })
        now = ContinuousClock.now
    }

    var state: SessionState { machine.state }
    var generation: SessionGeneration { machine.generation }

    @discardableResult
    mutating func send(_ event: SessionEvent) -> [SessionAction] {
        let actions = machine.handle(event, now: now)
        log += actions
        return actions
    }

    mutating func advance(_ duration: Duration) { now += duration }

    /// Started, adapter powered, device object known: queued for the slot.
    mutating func toWaitingForSlot() {
        send(.adapterAvailable(powered: true))
        send(.deviceFound)
        send(.start)
    }

    mutating func toConnecting() {
        toWaitingForSlot()
        send(.connectSlotGranted(generation))
    }

    mutating func toResolving() {
        toConnecting()
        send(.connectSucceeded(generation))
    }

    mutating func toSubscribing() {
        toResolving()
        send(.servicesResolved(generation))
    }

    mutating func toOnline() {
        toSubscribing()
        send(.subscribed(generation))
    }

    /// From `backoff`, lets the timer fire and completes the attempt.
    mutating func reconnect() {
        send(.backoffElapsed(generation))
        if state == .discovering { send(.deviceFound) }
        send(.connectSlotGranted(generation))
        send(.connectSucceeded(generation))
        send(.servicesResolved(generation))
        send(.subscribed(generation))
    }
}
