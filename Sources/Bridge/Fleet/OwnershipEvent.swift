/// `B/D/owner` (docs/fleet.md): which bridge owns a device, the signal it reported, and since when (UNIX seconds).
public struct OwnerRecord: Sendable, Hashable {
    public var bridge: String
    public var rssi: Int
    public var since: Int64

    public init(bridge: String, rssi: Int, since: Int64) {
        self.bridge = bridge
        self.rssi = rssi
        self.since = since
    }
}

/// The timers one `OwnershipMachine` asks for. Each arming carries a token; a timer that fires with an older token
/// was superseded and changes nothing (timers are never cancelled, only outdated).
public enum OwnershipTimer: Sendable, Hashable {
    /// After a broker (re)connect: the retained records and bridge states have had time to arrive.
    case listen
    /// No live owner: claim now (armed with a delay that lets the bridge seeing the device best claim first).
    case claim
    /// A claim was published: concurrent claims have had time to arrive; the claim stands or yielded.
    case settle
    /// The device has been seen ≥ 10 dB stronger than its owner reports for the whole window.
    case handover
    /// A handover request was not answered: give up, so a later window can ask again.
    case requestExpired
    /// The owner has not had the device online for `unreachableAfter`: it reports that it cannot reach it.
    case unreachable
}

public enum OwnershipEvent: Sendable, Hashable {
    case brokerConnected
    case brokerDisconnected
    /// The retained `B/D/owner` changed; nil when cleared or unreadable.
    case owner(OwnerRecord?)
    /// `B/bridge/<id>/state` of any bridge (this one's own included: it is ignored).
    case bridgeState(String, online: Bool)
    /// This bridge saw the device with this RSSI.
    case sighting(Int)
    /// This bridge no longer hears the device (BlueZ dropped it): it is no candidate for a claim or a handover.
    case unseen
    /// Another bridge asks the owner to hand the device over (`B/D/owner/request`).
    case handoverRequested(by: String, rssi: Int)
    /// This bridge's session has the device online (connected, subscribed), or no longer has.
    case link(up: Bool)
    /// Whether this bridge could connect the device if it owned it: an adapter that would take it is powered,
    /// healthy and below its `max_connections`. A bridge without room neither claims nor asks for the device.
    case room(Bool)
    /// The session gave the device up and is disconnected.
    case released
    case timer(OwnershipTimer, token: UInt64)
}

public enum OwnershipAction: Sendable, Hashable {
    /// Publish `B/D/owner`, retained.
    case publishOwner(OwnerRecord)
    /// Ask the owner for the device (`B/D/owner/request`, not retained).
    case requestHandover(rssi: Int)
    /// Tell the core this bridge owns the device (connects it, speaks for it), or no longer does.
    case own(Bool)
    /// The owner's will fired: say `B/D/availability` `offline` (any live bridge may; the payload is the same).
    case markOffline
    /// An owner back on the broker does not know yet whether another bridge took the device while it was cut off
    /// (its will fired): while held it keeps the link but does not speak for the device (its commands wait, its
    /// availability is not said again). `hold(false)`: still ours. A hold ended by `own(false)` instead is a silent
    /// release: the new owner already said the device's availability, and ours must not overwrite it.
    case hold(Bool)
    case schedule(OwnershipTimer, after: Duration, token: UInt64)
}
