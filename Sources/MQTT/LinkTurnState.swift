import Synchronization

/// The link's state between turns of the network loop. Touched only by the thread that serves the link (the
/// client's own network thread, or its `MQTTLoopHost`), one turn at a time, which is what makes the
/// `@unchecked Sendable` sound; the one exception, `connectOutcome`, has a lock of its own.
final class LinkTurnState: @unchecked Sendable {
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
    /// Set by the helper thread when its connect call returned.
    let connectOutcome = Mutex<(rc: Int32, errno: Int32)?>(nil)
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
