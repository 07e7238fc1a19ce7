/// A session happening worth telling the outside world about (`B/bridge/event`, the log).
public enum BridgeEvent: Sendable, Hashable {
    case connected
    case disconnected(reason: String)
    case error(message: String)
    /// A retry was scheduled: attempt number (1-based since the last stable connection) and the delay before it.
    case reconnectAttempt(attempt: Int, delay: Duration)
}
