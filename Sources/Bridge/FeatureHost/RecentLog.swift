import Synchronization

/// The last entries of `B/bridge/log` as they were published, for readers that come later (the web page's Log,
/// docs/web.md): the page shows what MQTT shows. Bounded, so a flood of errors costs a fixed amount of memory.
package final class RecentLog: Sendable {
    package struct Entry: Sendable, Equatable {
        /// Counts entries since start: a reader asks for what came after the last one it saw.
        package let sequence: UInt64
        package let at: ContinuousClock.Instant
        /// The payload as published (a JSON object).
        package let payload: String
    }

    package static let capacity = 200

    private struct State {
        var topic: String?
        var entries: [Entry] = []
        var next: UInt64 = 1
    }
    private let state = Mutex(State())

    /// The log's topic under the running config; nil: nothing is recorded.
    package func watch(_ topic: String?) { state.withLock { $0.topic = topic } }

    /// A feature's publish: kept when it is on the log's topic.
    package func record(_ topic: String, _ payload: String) {
        state.withLock { state in
            guard let watched = state.topic, watched == topic else { return }
            if state.entries.count == Self.capacity { state.entries.removeFirst() }
            state.entries.append(Entry(sequence: state.next, at: .now, payload: payload))
            state.next += 1
        }
    }

    /// The entries after `sequence` (all with 0), oldest first.
    package func entries(after sequence: UInt64 = 0) -> [Entry] {
        state.withLock { state in
            guard let first = state.entries.firstIndex(where: { $0.sequence > sequence }) else { return [] }
            return Array(state.entries[first...])
        }
    }
}
