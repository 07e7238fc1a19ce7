/// The per-device memory that decides whether a decoded broadcast is news. Devices repeat each reading many times
/// (BTHome and Xiaomi send one packet id or frame counter in several advertisements, and two adapters or two bridges
/// hear the same one), and an attacker may replay an old encrypted broadcast. The decoders are pure, so the caller
/// keeps one of these per device and asks it about each result.
///
/// Rule: a packet id already accepted within `window` is a repeat. Encryption counters are not this memory's
/// business: `ReplayLedger` judges them, by a rule that survives restarts and has no exception.
public struct AdvertDeduplicator: Sendable {
    public enum Verdict: Sendable, Equatable {
        case fresh
        case repeated
    }

    /// How long a packet id counts as seen: ids are one byte and wrap, so the memory must be shorter than a wrap.
    public let window: Double
    /// Accepted packet ids and when, oldest first; at most 256 entries (ids are 8-bit), fewer after pruning.
    private var seen: [(id: UInt32, at: Double)] = []

    public init(window: Double = 60) {
        self.window = window
    }

    /// Judges `result`, heard at `now` (seconds on any monotonic clock), and remembers it if it is fresh.
    public mutating func admit(_ result: AdvertResult, now: Double) -> Verdict {
        seen.removeAll { now - $0.at >= window || $0.at > now }
        if let id = result.packetID, seen.contains(where: { $0.id == id }) { return .repeated }
        if let id = result.packetID {
            seen.append((id, now))
            if seen.count > 256 { seen.removeFirst(seen.count - 256) }
        }
        return .fresh
    }
}
