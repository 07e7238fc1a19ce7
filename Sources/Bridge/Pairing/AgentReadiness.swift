import Synchronization

/// Whether bluetoothd has the daemon's agent, and with which capability, so a session's `Device1.Pair` waits for it.
///
/// bluetoothd takes a pairing's IO capability from the caller's agent as the `Pair` call arrives; without one it
/// pairs as `NoInputNoOutput`. Sessions start before the agent feature has registered (at start-up, after a reload
/// that unregisters to change the capability, after bluetoothd restarts), and a passkey device paired in that gap
/// fails authentication, backs off for a minute and has spent an attempt that some peripherals count towards a
/// lock-out.
public final class AgentReadiness: Sendable {
    private struct State {
        /// The capability bluetoothd has the agent registered with; nil while it is not registered.
        var capability: String?
        var waiters: [UInt64: (needsKeyboard: Bool, continuation: CheckedContinuation<Bool, Never>)] = [:]
        var nextWaiter: UInt64 = 0

        func satisfies(needsKeyboard: Bool) -> Bool {
            guard let capability else { return false }
            return !needsKeyboard || capability == AgentReadiness.keyboard
        }
    }

    static let keyboard = "KeyboardOnly"
    private let state = Mutex(State())

    public init() {}

    /// Tasks waiting now (for tests: a session blocked on the agent).
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// The agent is registered with `capability`, or (nil) not registered.
    func set(capability: String?) {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.capability = capability
            let ready = state.waiters.filter { state.satisfies(needsKeyboard: $0.value.needsKeyboard) }
            for key in ready.keys { state.waiters[key] = nil }
            return ready.values.map(\.continuation)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// True once the agent can answer this device's pairing (a passkey needs `KeyboardOnly`), false if that did not
    /// happen within `limit` or the task was cancelled.
    package func wait(needsKeyboard: Bool, within limit: Duration) async -> Bool {
        if state.withLock({ $0.satisfies(needsKeyboard: needsKeyboard) }) { return true }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.waitIndefinitely(needsKeyboard: needsKeyboard) }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    private func waitIndefinitely(needsKeyboard: Bool) async -> Bool {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { state -> Bool? in
                    if state.satisfies(needsKeyboard: needsKeyboard) { return true }
                    if Task.isCancelled { return false }
                    state.waiters[id] = (needsKeyboard, continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(returning: false)
        }
    }
}
