/// What happened to one `publish` call, so callers can count or report losses without waiting on the network.
public enum MQTTPublishOutcome: Sendable, Equatable {
    /// Given to libmosquitto, which writes it now or, for QoS ≥ 1, keeps it and resends it after a reconnect.
    case handedOver
    /// Held in the offline buffer; sent in order after the next connect, unless evicted by newer messages first.
    case buffered
    /// Not sent and never will be: QoS 0 while offline, an invalid topic, or the client has shut down.
    case dropped(String)
}
