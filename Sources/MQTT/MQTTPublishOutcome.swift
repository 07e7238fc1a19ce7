/// What happened to one `publish` call, so callers can count or report losses without waiting on the network.
public enum MQTTPublishOutcome: Sendable, Equatable {
    /// Given to libmosquitto, which writes it now or, for QoS ≥ 1, keeps it and resends it after a reconnect.
    case handedOver
    /// Held in the offline buffer; sent in order after the next connect, unless evicted by newer messages first.
    case buffered
    /// Not sent and never will be.
    case dropped(MQTTDropCause)
}

/// Why one message was not sent: a value, so the client decides what to count by matching a case (it matched
/// texts once, where a changed wording would have silently stopped a count). `description` is the log's wording.
public enum MQTTDropCause: Sendable, Equatable, CustomStringConvertible {
    case clientShutDown
    /// QoS 0 while libmosquitto already holds the byte bound's worth of unwritten packets.
    case overByteBound
    /// QoS 0 while offline.
    case notConnected
    /// QoS ≥ 1 while the offline buffer is full.
    case offlineBufferFull
    case invalidTopic(String)
    case correlationDataTooLong
    /// libmosquitto refused the message with this error code.
    case refused(code: Int32)

    public var description: String {
        switch self {
        case .clientShutDown: "client shut down"
        case .overByteBound: "over the byte bound (QoS 0)"
        case .notConnected: "not connected (QoS 0)"
        case .offlineBufferFull: "offline buffer full"
        case .invalidTopic(let topic): "invalid topic \(topic)"
        case .correlationDataTooLong: "correlation data over 65535 bytes"
        case .refused(let code): mosquittoDescription(code)
        }
    }
}
