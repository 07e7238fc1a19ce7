import Synchronization

/// Fans events out to any number of `AsyncStream`s.
///
/// A Mutex rather than actor state so that `events()` can register synchronously: a caller that subscribes
/// and then inspects the mirror cannot miss an event emitted in between.
final class EventBroadcaster<Element: Sendable>: Sendable {
    private struct State {
        var nextID: UInt64 = 0
        var continuations: [UInt64: AsyncStream<Element>.Continuation] = [:]
        var finished = false
    }

    private let state = Mutex(State())

    init() {}

    func subscribe() -> (id: UInt64, stream: AsyncStream<Element>) {
        let (stream, continuation) = AsyncStream<Element>.makeStream()
        let id: UInt64? = state.withLock { state in
            guard !state.finished else { return nil }
            state.nextID += 1
            state.continuations[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return (0, stream)
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return (id, stream)
    }

    func yield(_ element: Element) {
        let continuations = state.withLock { Array($0.continuations.values) }
        for continuation in continuations { continuation.yield(element) }
    }

    /// Ends one subscriber's stream.
    func finish(_ id: UInt64) {
        state.withLock { $0.continuations.removeValue(forKey: id) }?.finish()
    }

    /// Ends every stream; later subscribers get an already finished stream.
    func finishAll() {
        let continuations = state.withLock { state in
            state.finished = true
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}
