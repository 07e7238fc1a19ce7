import Synchronization

/// Which devices this bridge owns (docs/fleet.md), readable from any thread: the session reports arrive on the session
/// loops and the commands on the core's actor, and neither should wait for the other to know. A lone bridge (not in
/// a fleet) owns every device.
final class OwnershipBoard: Sendable {
    private let state: Mutex<(fleet: Bool, owned: Set<String>)>

    init(fleet: Bool) {
        state = Mutex((fleet, []))
    }

    var isFleet: Bool { state.withLock { $0.fleet } }

    func owns(_ device: String) -> Bool {
        state.withLock { !$0.fleet || $0.owned.contains(device) }
    }

    /// True when this changed the ownership.
    func set(_ device: String, owned: Bool) -> Bool {
        state.withLock { owned ? $0.owned.insert(device).inserted : $0.owned.remove(device) != nil }
    }

    /// A reload joined or left a fleet; leaving makes every device this bridge's own again. True when it changed.
    func setFleet(_ fleet: Bool) -> Bool {
        state.withLock { state in
            guard state.fleet != fleet else { return false }
            state = (fleet, [])
            return true
        }
    }
}
