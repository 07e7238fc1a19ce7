/// Counts shutdown's final messages until libmosquitto reports each one sent (QoS 0: written to the socket;
/// QoS ≥ 1: acknowledged). A PUBACK can be processed on the network thread before `publish` has returned the message
/// id to the caller, so acknowledgements of ids nobody waits for yet are kept while tracking is on.
struct DeliveryTracker: Sendable {
    private(set) var isTracking = false
    private(set) var outstanding = 0
    private var pending: Set<Int32> = []
    private var earlyAcknowledgements: Set<Int32> = []

    mutating func startTracking() { isTracking = true }

    /// A tracked message is about to be published or buffered.
    mutating func expect() { outstanding += 1 }

    /// The tracked message was handed to libmosquitto under `mid`; true when that completed everything.
    mutating func handedOver(mid: Int32) -> Bool {
        if earlyAcknowledgements.remove(mid) != nil { return complete() }
        pending.insert(mid)
        return false
    }

    /// libmosquitto's on_publish for `mid`; true when that completed everything.
    mutating func acknowledged(mid: Int32) -> Bool {
        // Every acknowledgement comes here, and only shutdown's final messages are tracked: no hash while none is.
        if !pending.isEmpty, pending.remove(mid) != nil { return complete() }
        if isTracking { earlyAcknowledgements.insert(mid) }
        return false
    }

    /// A tracked message was written and reported inside its publish call (QoS 0, `PublishResult.writtenAtOnce`);
    /// true when that completed everything.
    mutating func deliveredAtOnce() -> Bool { complete() }

    /// A tracked message will never be sent (dropped or evicted); true when that completed everything.
    mutating func abandoned() -> Bool { complete() }

    private mutating func complete() -> Bool {
        outstanding -= 1
        return outstanding == 0
    }
}
