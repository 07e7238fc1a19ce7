/// Remembers the last availability published so that `B/D/availability` is written on every change and only then.
/// Nothing published yet counts as a change, so a session's first report always goes out (clearing a stale retained
/// `online` from an earlier run).
public struct AvailabilityTracker: Sendable, Hashable {
    public private(set) var published: Bool?

    public init() {}

    /// Returns the value to publish, or nil when it equals the last one published.
    public mutating func update(_ online: Bool) -> Bool? {
        guard published != online else { return nil }
        published = online
        return online
    }
}
