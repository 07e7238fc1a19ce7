/// Message ids of QoS ≥ 1 messages given to libmosquitto and not yet acknowledged (its `on_publish`), so that the
/// offline bound can cover libmosquitto's own queue, which keeps such messages across reconnects and is otherwise
/// unbounded. A leaf lock guards it: `on_publish` runs inside libmosquitto calls made under other locks.
///
/// `on_publish` can run before `publish` has returned the id to us (a fast PUBACK read by the network thread, or a
/// QoS 0 packet written inside `mosquitto_publish`), so an early acknowledgement is kept until its id is handed over.
struct InFlightLedger: Sendable {
    private var pending: Set<Int32> = []
    /// QoS 0 ids handed over before their write completed: their `on_publish` is not an acknowledgement.
    private var unwrittenQoS0: Set<Int32> = []
    private var early: Set<Int32> = []

    var count: Int { pending.count }

    mutating func handedOver(mid: Int32, qos: MQTTQoS) {
        if early.remove(mid) != nil { return }
        if qos == .atMostOnce {
            unwrittenQoS0.insert(mid)
        } else {
            pending.insert(mid)
        }
    }

    /// True when `mid` was a QoS ≥ 1 message counted here (so the count dropped).
    @discardableResult
    mutating func acknowledged(mid: Int32) -> Bool {
        if pending.remove(mid) != nil { return true }
        if unwrittenQoS0.remove(mid) == nil { early.insert(mid) }
        return false
    }

    /// The link dropped: unwritten QoS 0 packets are discarded by libmosquitto and will never report; QoS ≥ 1
    /// messages stay queued in libmosquitto and are resent after the next connect, so they stay counted.
    mutating func linkLost() {
        unwrittenQoS0.removeAll()
        early.removeAll()
    }
}
