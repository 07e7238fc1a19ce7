/// Fleet (docs/fleet.md): which reports of how well this bridge hears its passive devices the core passes on to the
/// ownership machines. BlueZ signals a device's RSSI only when it changes, so a passive device that enters the config
/// while its RSSI holds still (an `auto` device, added on its first broadcast; a device added by a reload) would never
/// be told to its new machine, and no bridge would claim it. The last RSSI told is kept per device instead: every
/// report that differs from it is told, the first one for a device included. Bounded by the passive devices of the
/// config (`keep`).
struct PassiveSightings: Sendable {
    private var told: [String: Int] = [:]

    /// The device entered the config, or came again: its ownership machine may be new, so its next report is told.
    mutating func restart(_ name: String) {
        told[name] = nil
    }

    /// Forgets the devices no longer in the config.
    mutating func keep(_ names: Set<String>) {
        told = told.filter { names.contains($0.key) }
    }

    /// A report of `rssi` for the device `name` (from any adapter this bridge uses): whether to tell it.
    mutating func report(_ name: String, rssi: Int) -> Bool {
        guard told[name] != rssi else { return false }
        told[name] = rssi
        return true
    }

    /// BlueZ dropped the device's object: it is unseen, and the next report, whatever its value, is news.
    mutating func lost(_ name: String) {
        told[name] = nil
    }
}
