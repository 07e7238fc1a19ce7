/// A `set` received for a channel while its device could not take it.
public struct PendingCommand: Sendable, Hashable {
    /// The channel name (the topic level under the device).
    public var channel: String
    /// The MQTT payload as received; encoding happens when it is written.
    public var payload: [UInt8]
    public var arrival: ContinuousClock.Instant
    /// The channel's `command_ttl`.
    public var ttl: Duration

    public init(channel: String, payload: [UInt8], arrival: ContinuousClock.Instant, ttl: Duration = .seconds(30)) {
        self.channel = channel
        self.payload = payload
        self.arrival = arrival
        self.ttl = ttl
    }

    public var deadline: ContinuousClock.Instant { arrival + ttl }

    /// Expired once it has waited its whole ttl (at the deadline itself too, so a timer firing exactly then drops it).
    public func isExpired(at now: ContinuousClock.Instant) -> Bool { now >= deadline }
}
