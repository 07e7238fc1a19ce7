/// What libmosquitto's `on_publish` and the message callback update, under one leaf lock (`MQTTClient.tally`).
///
/// A leaf because those callbacks run inside libmosquitto calls, on whichever thread made the call (a QoS 0 packet
/// written at once reports inside the publisher's `mosquitto_publish`), with the I/O lock and often the session
/// lock held: nothing else is taken while this is held. One lock, not one per part: an acknowledgement updates
/// the ledger and the delivery tracker together. A QoS 0 value written at once takes it once (the byte bound's
/// check): its own `on_publish` inside the publish call is told to its caller under the I/O lock instead
/// (`MosquittoHandle.acknowledgedDuringPublish`); it was four takes of two locks.
struct LinkTally: Sendable {
    /// QoS ≥ 1 messages libmosquitto holds unacknowledged, and unwritten QoS 0 bytes.
    var ledger = InFlightLedger()
    /// Shutdown's final messages until each is sent.
    var deliveries = DeliveryTracker()
    /// Drop totals per reason, for `MQTTDropReport.total`.
    var drops: [MQTTDropReport.Reason: Int] = [:]
}
