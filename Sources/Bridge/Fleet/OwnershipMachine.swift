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

/// Who owns one device, seen from one bridge of a fleet (docs/fleet.md): events in, actions out, no I/O. The broker is the
/// only shared state: the retained `B/D/owner` record, each bridge's `B/bridge/<id>/state` (retained, will
/// `offline`), and the non-retained handover request. The rules:
///
/// - claim when there is no live owner (no record, or its bridge's state is `offline`) and this bridge sees the
///   device (it reported an RSSI, and a new one since BlueZ last dropped the device: a sighting from long ago must
///   not win a claim against a bridge that hears the device now); the claim waits `claimDelay` (shorter for a stronger signal), so the bridge that hears the device best
///   usually claims alone;
/// - a claim is published, then settles for `settleTime`: only then does the bridge connect;
/// - hand over when this bridge has seen the device ≥ `handoverMargin` dB stronger than the owner reports, without a
///   break, for `handoverAfter`: the challenger asks, the owner gives the device up (its session disconnects and says
///   `offline`), then the owner itself publishes the record naming the challenger, which connects only on seeing it;
/// - when the owner's will fires, a bridge that sees the device takes it over (within 30 s: listen, claim delay and
///   settle are a few seconds); every bridge that saw the will marks the device `offline` (idempotent), so a device
///   nobody can take reads `offline`;
/// - between two bridges that both claim or both believe they own, the lower `bridge.id` wins;
/// - records and requests are claims, not commands: only a bridge whose retained state is `online` counts as live,
///   so a record or request naming any other (a forged one, or one whose bridge died) moves nothing: the owner
///   publishes its own record again, and a device without a live owner is claimed as usual;
/// - a bridge claims or asks for a device only while it has room for it (`room`): one whose adapters are full would
///   hold the device offline while another could connect it;
/// - an owner that has not had the device online for `unreachableAfter` (its adapter wedged or full, the device out
///   of its reach while others hear it) says so: its record reports `unknownRSSI`, so any bridge that hears the
///   device is "stronger" and, after the usual hysteresis, asks for it and gets it. Once online again, the owner
///   reports its real signal. A device nobody else hears stays where it is.
///
/// The races, and why they converge to exactly one owner:
/// - Two bridges claim at once: both publish; the broker orders the two publishes, and every bridge sees both. A
///   claimant that sees a lower id's claim while settling yields; one that sees a higher id's claim publishes its own
///   again, so the retained last write is the lower id's, which wins.
/// - An owner returns after its will fired: it listens first, so it sees the record of whoever took over and stays
///   idle; if nobody took over yet, the record still names it and it claims again, racing any pending claimant as
///   above (the pending claimant also cancels its claim when the record's bridge goes `online` again).
/// - The broker restarts during a handover: every bridge disconnects (no will: the broker, not the bridge, went) and
///   listens after reconnecting. A request in flight is void; a release the old owner published is either delivered
///   (the challenger sees itself named and claims it) or lost with the broker's retained state (then no owner: the
///   claim rule applies, strongest first, ties to the lower id). A bridge that owned the device keeps its link
///   through the outage and, if the record is gone or names a dead bridge, claims it again at once.
/// - Own records: a record naming this bridge that it did not just publish (a retained one from its previous run, or
///   the echo of a claim it has since yielded) is claimed again, unless it yielded to a lower id moments ago.
public struct OwnershipMachine: Sendable {
    public enum State: Sendable, Hashable {
        /// Broker connected recently: collecting retained records and states before deciding anything.
        case listening
        /// Another live bridge owns the device, or nobody does and this bridge waits to claim or does not see it.
        case idle
        /// A claim was published and is settling.
        case claiming
        case owned
        /// Asked to hand over to `to`: the session is disconnecting; the record naming `to` follows.
        case releasing(to: String, rssi: Int)
        /// This bridge asked the owner to hand over and waits for the record naming it.
        case requested
    }

    public let id: String
    public let handoverAfter: Duration
    public let unreachableAfter: Duration
    public static let handoverMargin = 10
    public static let listenTime: Duration = .seconds(2)
    public static let settleTime: Duration = .milliseconds(1500)
    public static let requestTimeout: Duration = .seconds(10)
    /// The owner republishes its record when its RSSI moved this much, at most every `refreshInterval`.
    public static let refreshMargin = 3
    public static let refreshInterval: Duration = .seconds(5)
    /// What a record says when the owner never saw the device's RSSI.
    public static let unknownRSSI = -127

    public private(set) var state: State = .idle
    public private(set) var record: OwnerRecord?
    public private(set) var rssi: Int?
    public private(set) var brokerUp = false
    /// Bridges whose retained state is `online`, as seen since the broker connected. Only these are live: a record
    /// or a request naming any other bridge (one that does not exist, or whose will fired) is a claim nobody backs,
    /// so an owner keeps its device against it and a bridge without a live owner claims.
    private var live: Set<String> = []
    /// The lower id this bridge yielded to while settling; its echo of our claim is then no reason to claim again.
    private var yieldedTo: String?
    private var claimPending = false
    private var strongerSince: ContinuousClock.Instant?
    private var lastPublish: ContinuousClock.Instant?
    private var tokens: [OwnershipTimer: UInt64] = [:]
    /// Listening after a reconnect while owning: the device stays connected until the retained state is known.
    private var listeningWhileOwned = false
    private var linkUp = false
    private var hasRoom = true
    /// The owner reports `unknownRSSI` because it could not bring the device online (`unreachableAfter`).
    public private(set) var unreachable = false

    public init(id: String, handoverAfter: Duration = .seconds(30), unreachableAfter: Duration = .seconds(60)) {
        self.id = id
        self.handoverAfter = handoverAfter
        self.unreachableAfter = unreachableAfter
    }

    /// The signal this bridge stands for as owner: what it hears, unless it cannot reach the device.
    private var reportedRSSI: Int { unreachable ? Self.unknownRSSI : rssi ?? Self.unknownRSSI }

    public var owns: Bool { state == .owned }

    /// How long a bridge waits before claiming a device with no live owner: 0.5 s at -30 dBm or better, 50 ms more
    /// per dB weaker, at most 4 s. The strongest bridge claims first and the others see its claim instead of racing.
    public static func claimDelay(rssi: Int) -> Duration {
        let weaker = min(max(-rssi, 30), 100) - 30
        return .milliseconds(500 + 50 * weaker)
    }

    /// Feeds one event; `now` is the monotonic time (hysteresis, refresh pacing), `unixNow` the wall clock for
    /// `since`.
    public mutating func handle(_ event: OwnershipEvent, now: ContinuousClock.Instant = .now,
                                unixNow: Int64 = 0) -> [OwnershipAction] {
        var out: [OwnershipAction] = []
        switch event {
        case .brokerConnected:
            brokerUp = true
            // Resubscribing replays every retained record and state: what we knew may be stale or gone (a
            // broker restart without persistence), so it is learnt again while listening.
            record = nil
            live = []
            claimPending = false
            strongerSince = nil
            switch state {
            case .owned:                               // an owner keeps its device through a broker outage
                if !listeningWhileOwned { out.append(.hold(true)) }
                listeningWhileOwned = true
            case .releasing: break                     // the release it owes is still published
            default: state = .listening
            }
            arm(.listen, after: Self.listenTime, &out)

        case .brokerDisconnected:
            brokerUp = false
            switch state {
            case .claiming, .requested, .listening: state = .idle
            default: break
            }
            claimPending = false
            strongerSince = nil

        case .owner(let new):
            let previous = record
            record = new
            if listeningWhileOwned || state == .listening { break }
            recordChanged(from: previous, now: now, unixNow: unixNow, &out)

        case .bridgeState(let bridge, let online):
            guard bridge != id else { break }
            if online {
                guard live.insert(bridge).inserted else { break }
                if record?.bridge == bridge, state == .idle { claimPending = false; bump(.claim) }
            } else {
                guard live.remove(bridge) != nil else { break }
                guard record?.bridge == bridge, !(state == .listening || listeningWhileOwned) else { break }
                out.append(.markOffline)
                considerClaim(&out)
            }

        case .sighting(let value):
            rssi = value
            sighted(now: now, unixNow: unixNow, &out)

        case .unseen:
            rssi = nil
            strongerSince = nil
            bump(.handover)
            if state == .idle { claimPending = false; bump(.claim) }

        case .handoverRequested(let challenger, let theirs):
            // Only a live bridge may ask: a request naming a bridge nobody has seen online would hand the device to
            // a name that never claims it.
            guard state == .owned, !listeningWhileOwned, challenger != id, live.contains(challenger) else { break }
            let mine = reportedRSSI
            if theirs >= mine + Self.handoverMargin {
                state = .releasing(to: challenger, rssi: theirs)
                out.append(.own(false))
            } else {
                // Our report was stale: correct it, so the challenger measures against the truth.
                publishRecord(rssi: mine, since: record?.bridge == id ? record?.since ?? unixNow : unixNow, now: now, &out)
            }

        case .link(let up):
            guard up != linkUp else { break }
            linkUp = up
            if up {
                bump(.unreachable)
                if unreachable {
                    unreachable = false
                    if state == .owned, !listeningWhileOwned, let record, record.bridge == id {
                        publishRecord(rssi: reportedRSSI, since: record.since, now: now, &out)
                    }
                }
            } else if state == .owned {
                arm(.unreachable, after: unreachableAfter, &out)
            }

        case .room(let room):
            guard room != hasRoom else { break }
            hasRoom = room
            if room {
                sighted(now: now, unixNow: unixNow, &out)
            } else {
                strongerSince = nil
                bump(.handover)
                if state == .idle { claimPending = false; bump(.claim) }
            }

        case .released:
            guard case .releasing(let to, let theirs) = state else { break }
            state = .idle
            let handed = OwnerRecord(bridge: to, rssi: theirs, since: unixNow)
            record = handed
            out.append(.publishOwner(handed))

        case .timer(let timer, let token):
            guard tokens[timer] == token else { break }
            fired(timer, now: now, unixNow: unixNow, &out)
        }
        return out
    }

    // MARK: - Rules

    private var ownerLive: Bool {
        guard let record else { return false }
        return record.bridge == id ? state == .owned : live.contains(record.bridge)
    }

    private mutating func fired(_ timer: OwnershipTimer, now: ContinuousClock.Instant, unixNow: Int64,
                                _ out: inout [OwnershipAction]) {
        switch timer {
        case .listen:
            let wasOwned = listeningWhileOwned
            listeningWhileOwned = false
            if wasOwned {
                if let record, record.bridge != id, live.contains(record.bridge) {
                    // Someone took the device while we were cut off (our will fired): theirs now, released silently
                    // (the hold stays until this bridge owns the device again).
                    state = .idle
                    out.append(.own(false))
                    break
                }
                out.append(.hold(false))
                if record?.bridge != id || record?.rssi != reportedRSSI {
                    // Lost with the broker's retained state, or naming a dead bridge: ours, said again.
                    let since = record?.bridge == id ? record?.since ?? unixNow : unixNow
                    publishRecord(rssi: reportedRSSI, since: since, now: now, &out)
                }
                break
            }
            guard state == .listening else { break }
            state = .idle
            if let record, record.bridge == id {
                claim(unixNow: unixNow, now: now, &out)
            } else {
                considerClaim(&out)
                sighted(now: now, unixNow: unixNow, &out)
            }

        case .claim:
            guard claimPending else { break }
            claimPending = false
            guard state == .idle, brokerUp, !ownerLive, rssi != nil, hasRoom else { break }
            claim(unixNow: unixNow, now: now, &out)

        case .settle:
            guard state == .claiming else { break }
            if record?.bridge == id {
                state = .owned
                yieldedTo = nil
                out.append(.own(true))
                owned(&out)
            } else {
                state = .idle
                considerClaim(&out)
            }

        case .handover:
            guard state == .idle, brokerUp, hasRoom, let since = strongerSince, now - since >= handoverAfter,
                  let rssi, let record, ownerLive, rssi >= record.rssi + Self.handoverMargin else { break }
            strongerSince = nil
            state = .requested
            out.append(.requestHandover(rssi: rssi))
            arm(.requestExpired, after: Self.requestTimeout, &out)

        case .requestExpired:
            guard state == .requested else { break }
            state = .idle
            sighted(now: now, unixNow: unixNow, &out)

        case .unreachable:
            guard state == .owned, !linkUp, !unreachable else { break }
            if listeningWhileOwned {
                arm(.unreachable, after: Self.listenTime, &out)   // decided once the retained state is known
                break
            }
            unreachable = true
            let since = record?.bridge == id ? record?.since ?? unixNow : unixNow
            publishRecord(rssi: reportedRSSI, since: since, now: now, &out)
        }
    }

    private mutating func recordChanged(from previous: OwnerRecord?, now: ContinuousClock.Instant, unixNow: Int64,
                                        _ out: inout [OwnershipAction]) {
        guard let record else {
            // Cleared: an owner says itself again; anyone else may claim.
            if state == .owned { out.append(.publishOwner(OwnerRecord(bridge: id, rssi: reportedRSSI, since: unixNow))) }
            else if state == .idle { considerClaim(&out) }
            return
        }
        if record.bridge == id {
            switch state {
            case .claiming, .owned, .releasing:
                break                                   // our own publish coming back
            case .requested:
                state = .owned                          // the owner released the device to us
                strongerSince = nil
                out.append(.own(true))
                owned(&out)
            case .idle:
                if yieldedTo != nil { break }           // the echo of a claim we yielded; the lower id follows
                claimPending = false
                claim(unixNow: unixNow, now: now, &out)
            case .listening:
                break
            }
            return
        }
        // The hysteresis runs against one owner's reports: a new owner starts it again, a refresh re-checks it.
        if previous?.bridge != record.bridge || (rssi ?? Self.unknownRSSI) < record.rssi + Self.handoverMargin {
            strongerSince = nil
            bump(.handover)
        }
        switch state {
        case .claiming:
            if record.bridge < id, live.contains(record.bridge) {
                state = .idle
                yieldedTo = record.bridge
            } else {
                claim(unixNow: unixNow, now: now, &out)  // the retained last write must be the lower id's
            }
        case .owned:
            if record.bridge < id, live.contains(record.bridge) {
                state = .idle
                out.append(.own(false))
            } else {
                // A higher id, or a bridge that is not live (a forged or stale record): the device stays ours,
                // and the record says so again.
                publishRecord(rssi: reportedRSSI, since: unixNow, now: now, &out)
            }
        case .requested:
            break
        case .idle:
            if record.bridge != yieldedTo { yieldedTo = nil }
            if ownerLive {
                claimPending = false
                bump(.claim)
                sighted(now: now, unixNow: unixNow, &out)   // a weaker report (an unreachable owner) starts the window
            } else {
                considerClaim(&out)
            }
        case .releasing, .listening:
            break
        }
    }

    private mutating func sighted(now: ContinuousClock.Instant, unixNow: Int64, _ out: inout [OwnershipAction]) {
        guard let rssi else { return }
        switch state {
        case .owned where !listeningWhileOwned && !unreachable:
            guard let record, record.bridge == id, abs(rssi - record.rssi) >= Self.refreshMargin,
                  lastPublish.map({ now - $0 >= Self.refreshInterval }) ?? true else { break }
            publishRecord(rssi: rssi, since: record.since, now: now, &out)
        case .idle:
            guard ownerLive, let record else {
                considerClaim(&out)
                break
            }
            if hasRoom, rssi >= record.rssi + Self.handoverMargin {
                if strongerSince == nil {
                    strongerSince = now
                    arm(.handover, after: handoverAfter, &out)
                }
            } else {
                strongerSince = nil
                bump(.handover)
            }
        default:
            break
        }
    }

    /// The device became this bridge's: a link not up by `unreachableAfter` makes the owner say it cannot reach it.
    private mutating func owned(_ out: inout [OwnershipAction]) {
        unreachable = false
        if linkUp { bump(.unreachable) } else { arm(.unreachable, after: unreachableAfter, &out) }
    }

    /// Arms a claim when nobody live owns the device and this bridge sees it.
    private mutating func considerClaim(_ out: inout [OwnershipAction]) {
        guard state == .idle, brokerUp, hasRoom, !ownerLive, !claimPending, let rssi else { return }
        claimPending = true
        arm(.claim, after: Self.claimDelay(rssi: rssi), &out)
    }

    private mutating func claim(unixNow: Int64, now: ContinuousClock.Instant, _ out: inout [OwnershipAction]) {
        state = .claiming
        yieldedTo = nil
        let claim = OwnerRecord(bridge: id, rssi: rssi ?? Self.unknownRSSI, since: unixNow)
        record = claim
        lastPublish = now
        out.append(.publishOwner(claim))
        arm(.settle, after: Self.settleTime, &out)
    }

    private mutating func publishRecord(rssi: Int, since: Int64, now: ContinuousClock.Instant,
                                        _ out: inout [OwnershipAction]) {
        let mine = OwnerRecord(bridge: id, rssi: rssi, since: since)
        record = mine
        lastPublish = now
        out.append(.publishOwner(mine))
    }

    private mutating func arm(_ timer: OwnershipTimer, after delay: Duration, _ out: inout [OwnershipAction]) {
        let token = bump(timer)
        out.append(.schedule(timer, after: delay, token: token))
    }

    @discardableResult
    private mutating func bump(_ timer: OwnershipTimer) -> UInt64 {
        let token = (tokens[timer] ?? 0) &+ 1
        tokens[timer] = token
        return token
    }
}
