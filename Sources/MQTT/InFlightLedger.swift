import DequeModule

/// Message ids of QoS ≥ 1 messages given to libmosquitto and not yet acknowledged (its `on_publish`), so that the
/// offline bound can cover libmosquitto's own queue, which keeps such messages across reconnects and is otherwise
/// unbounded. Under the leaf lock of `LinkTally`: `on_publish` runs inside libmosquitto calls made under other locks.
///
/// `on_publish` can run before `publish` has returned the id to us (a fast PUBACK read by the network thread, or a
/// queued QoS 0 packet the network thread writes meanwhile), so an early acknowledgement is kept until its id is
/// handed over. A QoS 0 packet written inside its own `mosquitto_publish` never comes here
/// (`MosquittoHandle.acknowledgedDuringPublish`).
///
/// Bytes are counted too, QoS 0 packets not yet written included: libmosquitto queues those without bound when the
/// socket is slower than the publishers, so they count against the byte bound until written.
struct InFlightLedger: Sendable {
    /// QoS ≥ 1 ids and sizes in the order they were handed over. A broker acknowledges in the order it received the
    /// messages (MQTT requires it for PUBACK), so an acknowledgement is almost always the first entry: no hashing per
    /// message, as a dictionary would. Any other order is still found, by a walk from the front.
    private var pending = Deque<(mid: Int32, size: Int)>()
    /// QoS 0 ids handed over before their write completed: their `on_publish` is not an acknowledgement.
    private var unwrittenQoS0: [Int32: Int] = [:]
    /// Acknowledgements that came before their id was handed over, taken again right after: few at a time. A short
    /// array, not a set: an insert and a removal by hashing were ~350 instructions of each QoS 0 value (issue 45).
    private var early: [Int32] = []
    /// Bytes of `pending` and `unwrittenQoS0`.
    private(set) var bytes = 0
    /// QoS ≥ 1 acknowledgements so far (wrapping): `AckWatch` tells a stalled broker by this standing still.
    private(set) var acknowledgements: UInt64 = 0

    var count: Int { pending.count }

    /// What libmosquitto holds: unacknowledged QoS ≥ 1 messages (count and bytes) and unwritten QoS 0 bytes.
    var held: Held { Held(count: pending.count, bytes: bytes) }

    mutating func handedOver(mid: Int32, qos: MQTTQoS, bytes size: Int = 0) {
        // `early` is almost always empty, and a look-up hashes even then: this runs for every value published.
        if !early.isEmpty, let index = early.firstIndex(of: mid) {
            early.swapAt(index, early.count - 1)
            early.removeLast()
            return
        }
        if qos == .atMostOnce {
            unwrittenQoS0[mid] = size
        } else {
            pending.append((mid, size))
        }
        bytes += size
    }

    /// True when `mid` was a QoS ≥ 1 message counted here (so the count dropped).
    @discardableResult
    mutating func acknowledged(mid: Int32) -> Bool {
        if pending.first?.mid == mid {
            bytes -= pending.removeFirst().size
            acknowledgements &+= 1
            return true
        }
        if let index = pending.firstIndex(where: { $0.mid == mid }) {
            bytes -= pending.remove(at: index).size
            acknowledgements &+= 1
            return true
        }
        // An early QoS 0 acknowledgement finds the table empty (its write completed at once): no hashing then.
        if !unwrittenQoS0.isEmpty, let size = unwrittenQoS0.removeValue(forKey: mid) {
            bytes -= size
        } else if !early.contains(mid) {
            early.append(mid)
        }
        return false
    }

    /// The link dropped: unwritten QoS 0 packets are discarded by libmosquitto and will never report; QoS ≥ 1
    /// messages stay queued in libmosquitto and are resent after the next connect, so they stay counted.
    mutating func linkLost() {
        for size in unwrittenQoS0.values { bytes -= size }
        unwrittenQoS0.removeAll()
        early.removeAll(keepingCapacity: true)
    }
}
