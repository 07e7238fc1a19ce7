/// The commands one device has not taken yet, in arrival order (SPEC §4: commands to one device are written in
/// arrival order; a `set` waits for the reconnection up to its `command_ttl`, then is dropped with an error).
///
/// Pure: the caller passes the time in. TTLs differ per channel, so a later command may expire before an earlier one;
/// expiry therefore scans the whole queue, which stays small (bounded by `capacity`).
public struct CommandQueue: Sendable {
    public let capacity: Int
    public private(set) var commands: [PendingCommand] = []

    /// `capacity` bounds memory when a device is away and commands keep coming.
    public init(capacity: Int = 100) {
        self.capacity = max(1, capacity)
    }

    public var isEmpty: Bool { commands.isEmpty }
    public var count: Int { commands.count }

    /// The earliest deadline in the queue: when the caller should next call `expire(now:)`.
    public var nextDeadline: ContinuousClock.Instant? { commands.lazy.map(\.deadline).min() }

    /// Appends a command. When full, the oldest is dropped and returned so that it can be reported.
    public mutating func enqueue(_ command: PendingCommand) -> PendingCommand? {
        var dropped: PendingCommand?
        if commands.count >= capacity { dropped = commands.removeFirst() }
        commands.append(command)
        return dropped
    }

    /// Removes and returns the oldest command. Call `expire(now:)` first so that nothing stale is written.
    public mutating func popReady() -> PendingCommand? {
        commands.isEmpty ? nil : commands.removeFirst()
    }

    /// Removes and returns, in arrival order, every command that waited its whole ttl by `now`.
    public mutating func expire(now: ContinuousClock.Instant) -> [PendingCommand] {
        let expired = commands.filter { $0.isExpired(at: now) }
        if !expired.isEmpty { commands.removeAll { $0.isExpired(at: now) } }
        return expired
    }

    /// Empties the queue (device removed or bridge stopping), returning what was pending so it can be reported.
    public mutating func removeAll() -> [PendingCommand] {
        defer { commands.removeAll() }
        return commands
    }
}
