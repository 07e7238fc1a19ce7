@testable import BridgeFleet

/// Drives one `OwnershipMachine` as the `FleetFeature` would: remembers the timers it armed (only the latest token
/// of each counts) and fires them on request, with a clock the test advances.
struct OwnershipHarness {
    var machine: OwnershipMachine
    var now = ContinuousClock.now
    var unixNow: Int64 = 1_700_000_000
    private(set) var armed: [OwnershipTimer: (token: UInt64, due: ContinuousClock.Instant)] = [:]
    private(set) var log: [OwnershipAction] = []

    init(id: String, handoverAfter: Duration = .seconds(30)) {
        machine = OwnershipMachine(id: id, handoverAfter: handoverAfter)
    }

    var state: OwnershipMachine.State { machine.state }

    @discardableResult
    mutating func send(_ event: OwnershipEvent) -> [OwnershipAction] {
        let actions = machine.handle(event, now: now, unixNow: unixNow)
        for case .schedule(let timer, let delay, let token) in actions { armed[timer] = (token, now + delay) }
        log += actions
        return actions.filter { if case .schedule = $0 { false } else { true } }
    }

    /// Advances the clock to the timer's deadline and returns its event; nil when it is not armed.
    mutating func take(_ timer: OwnershipTimer) -> OwnershipEvent? {
        guard let (token, due) = armed.removeValue(forKey: timer) else { return nil }
        if due > now { now = due }
        return .timer(timer, token: token)
    }

    func isArmed(_ timer: OwnershipTimer) -> Bool { armed[timer] != nil }

    @discardableResult
    mutating func fire(_ timer: OwnershipTimer) -> [OwnershipAction]? {
        take(timer).map { send($0) }
    }

    mutating func advance(_ duration: Duration) { now += duration }

    /// Connected, listened, and the device seen at `rssi`: the state the retained topics left it in.
    /// `live` bridges (the fleet's usual names) have their retained state `online`, unless listed in `offline`; any
    /// other name is no bridge at all.
    mutating func connect(record: OwnerRecord? = nil, offline: [String] = [], rssi: Int? = -60,
                          live: [String] = ["a", "b", "c", "d"]) {
        send(.brokerConnected)
        for bridge in live where bridge != machine.id && !offline.contains(bridge) {
            send(.bridgeState(bridge, online: true))
        }
        if let record { send(.owner(record)) }
        for bridge in offline { send(.bridgeState(bridge, online: false)) }
        if let rssi { send(.sighting(rssi)) }
        fire(.listen)
    }

    /// From idle with no owner: claim, settle, own.
    mutating func claimAndOwn() {
        fire(.claim)
        fire(.settle)
    }

    func published() -> [OwnerRecord] {
        log.compactMap { if case .publishOwner(let record) = $0 { record } else { nil } }
    }
}

/// The broker for several machines in one test: a publish of the retained record goes to every machine (the
/// publisher's own included), in the order published, as one broker would deliver it.
struct FleetHarness {
    var bridges: [String: OwnershipHarness]
    var retained: OwnerRecord?
    /// Bridges cut off from the broker: they receive nothing (a SIGKILLed or unplugged bridge).
    var down: Set<String> = []

    init(_ ids: [String], handoverAfter: Duration = .seconds(30)) {
        bridges = Dictionary(uniqueKeysWithValues: ids.map { ($0, OwnershipHarness(id: $0, handoverAfter: handoverAfter)) })
    }

    var owners: [String] { bridges.values.filter(\.machine.owns).map(\.machine.id).sorted() }

    /// Sends `event` to one bridge and delivers what it publishes to all of them, until nothing more is published.
    mutating func send(_ id: String, _ event: OwnershipEvent) {
        var queue: [(String, OwnershipEvent)] = [(id, event)]
        while !queue.isEmpty {
            let (target, next) = queue.removeFirst()
            let actions = bridges[target]!.send(next)
            if case .brokerConnected = next {
                // The retained states: every bridge on the broker is `online`, and says so to the others.
                for other in bridges.keys.sorted() where other != target && !down.contains(other) {
                    queue.append((target, .bridgeState(other, online: true)))
                    queue.append((other, .bridgeState(target, online: true)))
                }
            }
            for action in actions {
                switch action {
                case .publishOwner(let record):
                    retained = record
                    for other in bridges.keys.sorted() where !down.contains(other) { queue.append((other, .owner(record))) }
                case .requestHandover(let rssi):
                    for other in bridges.keys.sorted() where other != target && !down.contains(other) {
                        queue.append((other, .handoverRequested(by: target, rssi: rssi)))
                    }
                case .own(false):
                    queue.append((target, .released))    // the session's disconnect completed at once
                default:
                    break
                }
            }
        }
    }

    mutating func fire(_ id: String, _ timer: OwnershipTimer) {
        guard let event = bridges[id]!.take(timer) else { return }
        send(id, event)
    }

    /// Publishes a record as `from` would have: to every bridge, with what they answer.
    mutating func publish(_ record: OwnerRecord) {
        retained = record
        for id in bridges.keys.sorted() where !down.contains(id) { send(id, .owner(record)) }
    }

    /// Delivers a record to every bridge without running what they answer (a publish still in flight).
    mutating func deliverOnly(_ record: OwnerRecord) -> [(String, [OwnershipAction])] {
        retained = record
        return bridges.keys.sorted().map { ($0, bridges[$0]!.send(.owner(record))) }
    }

    mutating func advanceAll(_ duration: Duration) {
        for id in bridges.keys { bridges[id]!.advance(duration) }
    }
}
