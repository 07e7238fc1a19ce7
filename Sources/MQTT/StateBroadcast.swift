import Synchronization

/// Fans connection-state changes out to any number of listeners (the bridge's availability logic, STATUS=, tests);
/// each new listener first gets the current state so it never has to race the first change.
final class StateBroadcast: Sendable {
    private struct State {
        var current: MQTTConnectionState = .connecting
        var nextID = 0
        var listeners: [Int: AsyncStream<MQTTConnectionState>.Continuation] = [:]
        var finished = false
    }

    private let state = Mutex(State())

    var current: MQTTConnectionState { state.withLock { $0.current } }

    /// Publishes `new` if it differs from the current state; returns whether it did.
    @discardableResult
    func update(_ new: MQTTConnectionState) -> Bool {
        let listeners = state.withLock { state -> [AsyncStream<MQTTConnectionState>.Continuation]? in
            guard state.current != new else { return nil }
            state.current = new
            return Array(state.listeners.values)
        }
        guard let listeners else { return false }
        for listener in listeners { listener.yield(new) }
        return true
    }

    func stream() -> AsyncStream<MQTTConnectionState> {
        let (stream, continuation) = AsyncStream.makeStream(of: MQTTConnectionState.self, bufferingPolicy: .bufferingNewest(64))
        let (id, current, finished) = state.withLock { state in
            defer { state.nextID += 1 }
            if !state.finished { state.listeners[state.nextID] = continuation }
            return (state.nextID, state.current, state.finished)
        }
        continuation.yield(current)
        if finished {
            continuation.finish()
        } else {
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
            }
        }
        return stream
    }

    /// Ends every listener's stream (after shutdown).
    func finish() {
        let listeners = state.withLock { state in
            state.finished = true
            defer { state.listeners = [:] }
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.finish() }
    }
}
