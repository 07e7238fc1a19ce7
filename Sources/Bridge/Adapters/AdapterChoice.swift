/// Which adapter a device connects through (docs/adapters.md), as a pure function of what the bridge knows, so every rule is
/// tested by calling it.
///
/// - A pinned device (`adapter: hciN`) uses that adapter whenever it exists and has room below `max_connections`,
///   powered or not: its session then waits for it to be powered, as a single-adapter bridge always did. On a full
///   adapter it waits for a slot (devices are placed in config order, so the earlier ones get the slots).
/// - A device with `any` goes through the adapter that most recently saw it strongest among usable ones: powered,
///   healthy (not recovering or failed), and below `max_connections` (the device's own place counts as free).
///   Only sightings close to the newest one count (`recent`): an old strong reading from an adapter that lost
///   sight of the device must not beat a fresh one.
/// - It stays where it is unless another adapter is better by `hysteresis` dB, so RSSI noise does not bounce a
///   connecting device between radios; a device nobody has seen goes to the first usable adapter by name (it is
///   discovered there), so a bridge whose devices all fit on hci0 behaves as a single-adapter one did.
/// - A device just placed (`settling`) stays on its adapter while that one is usable, whatever the age of its
///   sighting there, unless another adapter is better by `hysteresis` dB (`AdapterSet.settle` says why).
/// - When no healthy adapter is left, a powered one that is recovering still beats nothing: the device keeps trying,
///   and its attempts tell whether the recovery worked.
public enum AdapterChoice {
    public struct Candidate: Sendable, Equatable {
        public var name: String
        public var powered: Bool
        /// Health `ok`: not recovering from a wedge, not failed.
        public var healthy: Bool
        /// Devices assigned to this adapter other than the one being placed.
        public var devices: Int
        public var maxConnections: Int
        /// When this adapter last saw the device, and how strong (nil RSSI: seen, strength unknown).
        public var seen: Sighting?

        public init(name: String, powered: Bool, healthy: Bool = true, devices: Int = 0,
                    maxConnections: Int = 5, seen: Sighting? = nil) {
            self.name = name
            self.powered = powered
            self.healthy = healthy
            self.devices = devices
            self.maxConnections = maxConnections
            self.seen = seen
        }

        var hasRoom: Bool { devices < maxConnections }
    }

    public struct Sighting: Sendable, Equatable {
        public var rssi: Int?
        public var at: ContinuousClock.Instant

        public init(rssi: Int?, at: ContinuousClock.Instant) {
            self.rssi = rssi
            self.at = at
        }
    }

    /// Sightings older than the newest one by more than this do not compete.
    public static let recent: Duration = .seconds(30)
    public static let hysteresis = 5

    /// The adapter for the device, or nil when none can take it (the session waits for one).
    public static func choose(pinned: String?, current: String?, candidates: [Candidate],
                              settling: Bool = false) -> String? {
        if let pinned { return candidates.contains { $0.name == pinned && $0.hasRoom } ? pinned : nil }
        let usable = candidates.filter { $0.powered && $0.hasRoom }
        let healthy = usable.filter(\.healthy)
        return best(healthy.isEmpty ? usable : healthy, current: current, settling: settling)
    }

    private static func best(_ pool: [Candidate], current: String?, settling: Bool) -> String? {
        guard !pool.isEmpty else { return nil }
        let newest = pool.compactMap { $0.seen?.at }.max()
        let seen = pool.filter { candidate in
            guard let at = candidate.seen?.at, let newest else { return false }
            return newest - at <= recent
        }
        let mine = pool.first { $0.name == current }
        if seen.isEmpty {
            if let mine { return mine.name }
            return pool.min { $0.name < $1.name }?.name
        }
        // Strongest first; equal strength: the fresher sighting; then the name, so the answer is stable.
        let strongest = seen.min { a, b in
            let ra = a.seen?.rssi ?? Int.min, rb = b.seen?.rssi ?? Int.min
            if ra != rb { return ra > rb }
            if a.seen!.at != b.seen!.at { return a.seen!.at > b.seen!.at }
            return a.name < b.name
        }!
        // Where the device is and is seen (or was just placed), it stays unless both strengths are known and the
        // other is clearly better.
        if let mine, mine.name != strongest.name,
           seen.contains(where: { $0.name == mine.name }) || (settling && mine.healthy) {
            guard let theirs = strongest.seen?.rssi, let ours = mine.seen?.rssi, theirs - ours >= hysteresis else {
                return mine.name
            }
        }
        return strongest.name
    }
}
