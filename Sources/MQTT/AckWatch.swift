/// Notices a broker that stopped acknowledging: QoS ≥ 1 messages wait in libmosquitto while no PUBACK has come for
/// `limit`, though the link is up (PINGRESPs still arrive). The link cannot recover from that by itself: MQTT sends a
/// message again only after a reconnect, and libmosquitto sends no new QoS ≥ 1 message while the broker's receive
/// maximum is taken by unacknowledged ones. Seen with mosquitto 2.0.11 (Debian 12, Raspberry Pi OS) under a flood
/// of publishes to the bridge: it logged PUBACKs it never wrote, and every later QoS ≥ 1 publish of the bridge
/// waited for good (docs/dev/ARCHITECTURE.md, "Threads and the two data paths").
///
/// A value fed by the network thread once in a while (`observe`), with the ledger's count and acknowledgement total
/// and the time; it keeps no clock and takes no lock, so the hot path pays nothing for it.
///
/// Invariants: `since` is nil while nothing waits for an acknowledgement; otherwise it is when the last progress
/// (an acknowledgement, or the first message waiting) was seen. A stall is reported once per `since`.
struct AckWatch: Sendable {
    let limit: Int64
    private var acknowledged: UInt64 = 0
    private var since: Int64?
    private var reported = false

    init(limitNanoseconds: Int64) {
        limit = limitNanoseconds
    }

    /// Whether the broker has left `waiting` messages unacknowledged for `limit` with no acknowledgement at all
    /// (`acknowledgements` is the ledger's running total).
    mutating func observe(waiting: Int, acknowledgements: UInt64, now: Int64) -> Bool {
        guard waiting > 0 else {
            since = nil
            acknowledged = acknowledgements
            return false
        }
        guard let since, acknowledgements == acknowledged else {
            since = now
            acknowledged = acknowledgements
            reported = false
            return false
        }
        guard !reported, now - since >= limit else { return false }
        reported = true
        return true
    }

    /// The link went down (or came up): what waits is resent on the next connection, which starts a new wait.
    mutating func reset() {
        since = nil
        reported = false
    }
}
