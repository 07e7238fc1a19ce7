import BridgeFeatureHost
import Synchronization

/// Holds the current `BridgeState`. The core's loop and its sessions' reports write it (any thread, never blocking:
/// one short lock); readers take the value, or follow `changes()`. Nothing is kept per reader beyond its newest
/// state, so a reader that stalls costs one copy, and with no reader a change costs no wake-up.
final class StateStore: Sendable {
    private let state = Mutex(BridgeState())
    private let watchers = Mutex<(next: Int, all: [Int: AsyncStream<BridgeState>.Continuation])>((0, [:]))
    /// Called when the STATUS= line's counts changed.
    private let countsChanged: @Sendable () -> Void

    init(countsChanged: @escaping @Sendable () -> Void) {
        self.countsChanged = countsChanged
    }

    var current: BridgeState { state.withLock { $0 } }

    func update(_ change: (inout BridgeState) -> Void) {
        let (new, recount) = state.withLock { state -> (BridgeState, Bool) in
            let before = state.counts
            change(&state)
            state.version += 1
            return (state, state.counts != before)
        }
        if recount { countsChanged() }
        for watcher in watchers.withLock({ Array($0.all.values) }) { watcher.yield(new) }
    }

    /// The state now, then after every change; a slow reader gets only the newest.
    func changes() -> AsyncStream<BridgeState> {
        let (stream, continuation) = AsyncStream.makeStream(of: BridgeState.self, bufferingPolicy: .bufferingNewest(1))
        let id = watchers.withLock { watchers in
            defer { watchers.next += 1 }
            watchers.all[watchers.next] = continuation
            return watchers.next
        }
        continuation.onTermination = { [weak self] _ in self?.watchers.withLock { _ = $0.all.removeValue(forKey: id) } }
        continuation.yield(current)
        return stream
    }

    /// Ends every reader's stream (the bridge stops).
    func finish() {
        for watcher in watchers.withLock({ Array($0.all.values) }) { watcher.finish() }
    }
}

extension BridgeState {
    /// For the STATUS= line: devices online, devices, and in a fleet how many this bridge owns.
    var counts: BridgeCore.Snapshot {
        BridgeCore.Snapshot(devicesOnline: devices.count { $0.online }, devices: devices.count,
                            owned: isFleet ? devices.count { $0.owned } : nil)
    }
}
