import BridgeModel

/// The bridge API in a fleet (docs/bridge-api.md, §10), seen from one bridge: which bridges are live, who owns each device, what
/// each device's availability says, and from that who answers a shared request and who writes the shared retained
/// topics. Facts in, decisions out, no I/O.
///
/// Every bridge of the fleet receives every shared request (`B/bridge/request/<verb>`) and must decide alone, from the
/// retained topics all of them see, whether it is the one that answers, so that a requester gets exactly one answer:
/// - the coordinator answers: the live bridge with the lowest id (a bridge counts itself live; one that knows no lower
///   live id is the coordinator), the rule the ownership machine already uses for ties;
/// - `inspect` of a saved device with a live owner is answered by that owner instead: only it may connect the device
///   (peripherals usually accept one connection);
/// - `device/add` and `device/remove` are applied by every bridge (any bridge may have to take the device over) and
///   answered by the coordinator alone.
///
/// Right after a broker (re)connect the retained bridge states have not arrived yet, and a bridge would take itself
/// for the coordinator: until `settle()` it neither answers shared requests (the caller holds them) nor writes the
/// shared topics.
package struct FleetDirectory: Sendable, Equatable {
    /// What to do with a shared request.
    package enum Route: Sendable, Equatable {
        case answer
        /// Carry it out (a device change every bridge applies) without answering.
        case applySilently
        case ignore
    }

    /// At most this many devices' owners and availabilities are remembered: the topics come from anyone who may
    /// publish under the base topic.
    static let maxDevices = 10_000

    package let id: String
    /// Other bridges whose `B/bridge/<id>/state` last said `online`.
    private(set) var live: Set<String> = []
    /// Device topic level → the bridge its `B/D/owner` record names.
    private(set) var records: [String: String] = [:]
    /// Device topic levels this bridge owns, as the core says.
    private(set) var owned: Set<String> = []
    /// Device topic level → what its retained `B/D/availability` says.
    private(set) var availability: [String: Bool] = [:]
    package private(set) var settled = false

    package init(id: String) {
        self.id = id
    }

    // MARK: - Facts

    package mutating func bridgeState(_ bridge: String, online: Bool) {
        guard bridge != id else { return }     // this bridge is live while it runs, whatever its retained state says
        if online { live.insert(bridge) } else { live.remove(bridge) }
    }

    /// The `B/D/owner` record of the device at `level` names `bridge`; nil when cleared or unreadable.
    package mutating func owner(_ level: String, _ bridge: String?) {
        guard let bridge else { records[level] = nil; return }
        guard records[level] != nil || records.count < Self.maxDevices else { return }
        records[level] = bridge
    }

    package mutating func setOwned(_ level: String, _ isOwned: Bool) {
        if isOwned { owned.insert(level) } else { owned.remove(level) }
    }

    /// `B/D/availability` of the device at `level`: `online`, `offline`, or nil when cleared.
    package mutating func availability(_ level: String, online: Bool?) {
        guard let online else { availability[level] = nil; return }
        guard availability[level] != nil || availability.count < Self.maxDevices else { return }
        availability[level] = online
    }

    /// The broker (re)connected: the retained states are on their way.
    package mutating func unsettle() { settled = false }
    /// They have had time to arrive.
    package mutating func settle() { settled = true }

    // MARK: - Decisions

    /// The lowest live id, this bridge included.
    package var coordinator: String { live.reduce(id) { min($0, $1) } }

    /// Whether this bridge writes the shared `B/bridge/devices` and `B/bridge/info`.
    package var isCoordinator: Bool { settled && coordinator == id }

    /// The device's owner when that bridge is live: this bridge for the devices it owns, else the bridge its record
    /// names if that one is live (a record naming this bridge that the core has not confirmed is a claim in
    /// progress, or left over from an earlier run: no owner yet).
    func liveOwner(_ level: String) -> String? {
        if owned.contains(level) { return id }
        guard let bridge = records[level], bridge != id, live.contains(bridge) else { return nil }
        return bridge
    }

    /// Who answers a shared request for `verb` (nil: a request that could not be parsed); `inspecting` is the topic
    /// level of the saved device an `inspect` names, if it names one.
    package func route(_ verb: BridgeRequest.Verb?, inspecting level: String? = nil) -> Route {
        switch verb {
        case .deviceAdd, .deviceRemove, .deviceRearm:
            return isCoordinator ? .answer : .applySilently
        case .inspect:
            if let level, let owner = liveOwner(level) { return owner == id ? .answer : .ignore }
            return isCoordinator ? .answer : .ignore
        case .devices, .health, .scan, nil:
            return isCoordinator ? .answer : .ignore
        }
    }

    /// A device in the fleet's listing: its owner, and its state: the session's (`session`) when this bridge owns
    /// it; when another live bridge does, what the device's availability says (`offline` until it says anything);
    /// with no live owner, the last availability anyone said, else `connecting` (just added or started, nobody has
    /// claimed it yet).
    package func listing(_ level: String, session: DeviceLinkState?) -> (owner: String?, state: DeviceLinkState) {
        let owner = liveOwner(level)
        let said = availability[level].map { $0 ? DeviceLinkState.online : .offline }
        switch owner {
        case id?: return (owner, session ?? .connecting)
        case nil: return (nil, said ?? .connecting)
        default: return (owner, said ?? .offline)
        }
    }
}
