/// The per-device memory that decides whether a decoded broadcast is news. Devices repeat each reading many times
/// (BTHome and Xiaomi send one packet id or frame counter in several advertisements, and two adapters or two bridges
/// hear the same one), and an attacker may replay an old encrypted broadcast. The decoders are pure, so the caller
/// keeps one of these per device and asks it about each result.
///
/// Rules: a packet id already accepted within `window` is a repeat, and so is an encrypted broadcast with the last
/// accepted counter (the same packet heard again: counter and key make the nonce, a device never reuses one); an
/// encrypted broadcast whose counter is below the last accepted one is a replay, unless the counter is below 100 (a
/// device that restarted, or got a new battery, counts from 0 again; bthome-ble allows the same).
public struct AdvertDeduplicator: Sendable {
    public enum Verdict: Sendable, Equatable {
        case fresh
        case repeated
        case replayed
    }

    /// How long a packet id counts as seen: ids are one byte and wrap, so the memory must be shorter than a wrap.
    public let window: Double
    private var lastCounter: UInt32?
    /// Accepted packet ids and when, oldest first; at most 256 entries (ids are 8-bit), fewer after pruning.
    private var seen: [(id: UInt32, at: Double)] = []

    public init(window: Double = 60) {
        self.window = window
    }

    /// Judges `result`, heard at `now` (seconds on any monotonic clock), and remembers it if it is fresh.
    public mutating func admit(_ result: AdvertResult, now: Double) -> Verdict {
        seen.removeAll { now - $0.at >= window || $0.at > now }
        if let id = result.packetID, seen.contains(where: { $0.id == id }) { return .repeated }
        if let counter = result.encryptionCounter, let last = lastCounter {
            if counter == last { return .repeated }
            if counter < last, counter >= 100 { return .replayed }
        }
        if let id = result.packetID {
            seen.append((id, now))
            if seen.count > 256 { seen.removeFirst(seen.count - 256) }
        }
        if let counter = result.encryptionCounter { lastCounter = counter }
        return .fresh
    }
}
