/// Messages the client lost for good, reported on `MQTTClient.drops` so the owner can log and publish the loss.
public struct MQTTDropReport: Sendable, Equatable {
    public enum Reason: String, Sendable, Equatable, CaseIterable {
        /// Evicted (the oldest first) because the offline bound was reached.
        case bufferFull = "buffer_full"
        /// QoS 0 published while the broker was unreachable.
        case notConnected = "not_connected"
        /// Still buffered or unacknowledged when the client shut down.
        case shutdown
        /// A received message larger than `maximumPacketSize` (MQTT 3.1.1 only; on MQTT 5 the broker drops it).
        case oversizeReceived = "oversize_received"
        /// Received while `MQTTClient.inboxLimit` bytes waited for the consumer (a flood).
        case inboxFull = "inbox_full"
    }

    public var reason: Reason
    /// Messages lost in this event.
    public var count: Int
    /// Messages lost for this reason since the client was created, so a consumer that fell behind (the stream
    /// keeps only the newest reports) still knows the whole loss.
    public var total: Int

    public init(reason: Reason, count: Int, total: Int) {
        self.reason = reason
        self.count = count
        self.total = total
    }
}
