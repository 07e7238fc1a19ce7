import Synchronization

/// What the passive half turned away since start, for the bridge API's `health` (docs/bridge-api.md): readings and
/// events beyond a bound (`AdvertTracker`'s drops, reported once per device on `B/bridge/log`), and broadcasts of
/// unsaved broadcasters not admitted as auto devices (a full table, or over the admission rate). Written by
/// `AdvertFeature`, read by `BridgeAPIFeature`.
public final class AdvertCounts: Sendable {
    private let droppedCount = Atomic<Int>(0)
    private let refusedCount = Atomic<Int>(0)

    public init() {}

    public var dropped: Int { droppedCount.load(ordering: .relaxed) }
    public var refused: Int { refusedCount.load(ordering: .relaxed) }

    func update(dropped: Int, refused: Int) {
        droppedCount.store(dropped, ordering: .relaxed)
        refusedCount.store(refused, ordering: .relaxed)
    }
}
