internal import CMosquitto
import Glibc
import Synchronization

/// The one owner of the broker link: the libmosquitto handle, and the state that only the thread serving the link
/// (the client's own network thread or its `MQTTLoopHost`, "the network thread") touches: the turn state between
/// polls and the events libmosquitto's connect and disconnect callbacks record for the turn to act on. Modelled on
/// `DBus/ConnectionCore`: the loop-only state is reached through accessors that check the thread in debug builds,
/// which is what makes the `@unchecked Sendable` sound.
///
/// Who may touch what, and why:
/// - `turn` and `events`: the network thread only. The connect and disconnect callbacks run inside
///   `mosquitto_loop_read`, `_write`, `_misc` and `mosquitto_disconnect`, which only the network thread calls (a
///   publisher's `mosquitto_publish` runs `on_publish` alone, and a hosted connect call's helper thread writes the
///   CONNECT and nothing that reports), so these need no lock.
/// - `handle`: every thread, each libmosquitto call under the handle's I/O lock (`MosquittoHandle`): publishers
///   write their packets themselves, which is what keeps a value's way out free of a thread switch.
/// - `connectOutcome`: the one hand-off from the hosted link's connect helper thread back to the loop, under a lock
///   of its own (one take per connect attempt).
final class LinkCore: @unchecked Sendable {
    let handle: MosquittoHandle
    let owner = ThreadOwner()
    /// Set by the helper thread when its connect call returned (hosted link only).
    let connectOutcome = Mutex<ConnectOutcome?>(nil)

    // Network thread only, through the accessors below. Without Swift's dynamic exclusivity check, as in
    // `ConnectionCore`: every access is one statement on one thread, and the check was a runtime call per access,
    // several per turn.
    @exclusivity(unchecked) private var _turn: LinkTurn
    @exclusivity(unchecked) private var _events: [LinkEvent] = []

    var turn: LinkTurn {
        _read { owner.assertOnOwner("LinkCore.turn"); yield _turn }
        _modify { owner.assertOnOwner("LinkCore.turn"); yield &_turn }
    }

    /// Written by libmosquitto's connect and disconnect callbacks, taken by the turn after each libmosquitto call.
    var events: [LinkEvent] {
        _read { owner.assertOnOwner("LinkCore.events"); yield _events }
        _modify { owner.assertOnOwner("LinkCore.events"); yield &_events }
    }

    init(handle: MosquittoHandle, ackLimit: Duration) {
        self.handle = handle
        _turn = LinkTurn(ackLimit: ackLimit)
    }

    /// Before any thread serves the link (`MQTTClient.start`, once): how it is served, and when to connect first.
    /// Written without the thread check, as no thread owns the link yet; the host's attach or the thread's start
    /// that follows publishes it to the serving thread.
    func prepare(hosted: Bool, firstAttempt: Int64) {
        _turn.hosted = hosted
        _turn.nextAttempt = firstAttempt
    }

    /// Takes the events recorded since the last call, oldest first.
    func takeEvents() -> [LinkEvent] {
        owner.assertOnOwner("LinkCore.events")
        guard !_events.isEmpty else { return [] }
        defer { _events = [] }
        return _events
    }
}

/// The link's state between turns of the network loop (`LinkCore.turn`).
struct LinkTurn: Sendable {
    /// Served by an `MQTTLoopHost` rather than the client's own thread.
    var hosted = false
    var socketOpen = false
    var failures = 0
    var nextAttempt: Int64 = 0
    var stopDeadline: Int64?
    /// Hosted: when the broker's socket was last read, and until when its input is left to gather (see
    /// `MQTTClient.linkInterest`); 0 when it is polled for input.
    var lastRead: Int64 = 0
    var gatherUntil: Int64 = 0
    /// Hosted: a connect call (DNS, TCP probe, blocking connect) runs on a helper thread, which alone may touch
    /// the handle meanwhile.
    var connecting = false
    var finished = false
    /// Shutdown while connecting: when to stop waiting for the helper thread's connect call.
    var abandonConnectAt: Int64?
    /// A broker that stopped acknowledging (`AckWatch`), looked at no more than once a second.
    var ackWatch: AckWatch
    var nextAckCheck: Int64 = 0
    /// While the socket is open and the broker has not yet answered CONNECT: when to give up on it (0 otherwise).
    /// libmosquitto alone would wait a whole keepalive, and a broker that accepts TCP but never answers would hold
    /// the link there.
    var connackDeadline: Int64 = 0

    init(ackLimit: Duration) {
        ackWatch = AckWatch(limitNanoseconds: ackLimit.inNanoseconds)
    }
}

/// What a connect call returned: the socket is open (the broker's CONNACK still to come), or why not.
enum ConnectOutcome: Sendable, Equatable {
    case opened
    case failed(LinkFailure)

    init(rc: Int32, errno error: Int32) {
        self = rc == MOSQ_SUCCESS ? .opened : .failed(.error(code: rc, errno: error))
    }
}

/// What a libmosquitto callback observed, for the network loop to act on outside the callback. Codes, not texts:
/// the text is made once, when the state it goes into changes (`LinkFailure.description`).
enum LinkEvent: Sendable, Equatable {
    case sessionStarted
    /// The broker's CONNACK refused the session; the disconnect that follows says so.
    case refused(code: Int32)
    case lost(LinkFailure)
}

/// Why the link is down, as a value the loop decides on; `description` is the wording of the log line and of
/// `MQTTConnectionState.disconnected`, and `code` its reason code.
enum LinkFailure: Sendable, Equatable, CustomStringConvertible {
    /// A libmosquitto error code or an MQTT 5 reason code (they share the callbacks' `rc`); with `MOSQ_ERR_ERRNO`,
    /// the system's `errno` says what failed.
    case error(code: Int32, errno: Int32)
    /// The broker refused CONNECT: an MQTT 5 reason code, or an MQTT 3.1.1 CONNACK return code.
    case refused(code: Int32, v5: Bool)
    /// Our own DISCONNECT (shutdown).
    case closedByClient

    var code: Int32 {
        switch self {
        case .error(let code, _), .refused(let code, _): code
        case .closedByClient: 0
        }
    }

    var description: String {
        switch self {
        case .error(let code, let error) where code == Int32(MOSQ_ERR_ERRNO.rawValue): String(cString: strerror(error))
        case .error(let code, _): mosquittoDescription(code)
        case .refused(let code, let v5):
            "connection refused: "
                + (v5 ? String(cString: mosquitto_reason_string(code)) : String(cString: mosquitto_connack_string(code)))
        case .closedByClient: "disconnected by client"
        }
    }
}
