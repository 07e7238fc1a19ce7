/// Fleet (docs/fleet.md): how well this bridge hears each passive device, as the core tells the ownership machines.
///
/// - A bridge hears through all the adapters its config uses, and BlueZ reports each adapter's RSSI on its own: told
///   one after the other, the reports of a near and a far adapter would swing the machine's RSSI back and forth, and
///   each weak one would restart the wait of a handover. What is told is the strongest report among the adapters
///   that heard the device within `window`.
/// - BlueZ signals an RSSI only when it changes, so a passive device that enters the config while its RSSI holds
///   still (an `auto` device, added on its first broadcast; a device added by a reload) would never be told to its
///   new machine, and no bridge would claim it. The value told is kept per device: a report that changes it, or the
///   first one for a device, is told.
///
/// Bounded by the passive devices of the config (`keep`) times the bridge's adapters.
package struct PassiveSightings: Sendable {
    package init() {}

    /// Passive sensors broadcast every few seconds to every minute: an adapter's report is current this long.
    static let window: Duration = .seconds(60)

    /// What `report` and `lost` ask to tell the device's ownership machine.
    package enum Tell: Sendable, Equatable {
        case rssi(Int)
        case unseen
    }

    private var heard: [String: [String: (rssi: Int, at: ContinuousClock.Instant)]] = [:]
    private var told: [String: Int] = [:]

    /// The device entered the config, or came again: its ownership machine may be new, so its next report is told.
    package mutating func restart(_ name: String) {
        told[name] = nil
    }

    /// Forgets the devices no longer in the config.
    package mutating func keep(_ names: Set<String>) {
        told = told.filter { names.contains($0.key) }
        heard = heard.filter { names.contains($0.key) }
    }

    /// `adapter` heard the device `name` at `rssi`: the strongest current report, when it is news.
    package mutating func report(_ name: String, adapter: String, rssi: Int, now: ContinuousClock.Instant) -> Tell? {
        var adapters = (heard[name] ?? [:]).filter { now - $0.value.at < Self.window }
        adapters[adapter] = (rssi, now)
        heard[name] = adapters
        return tell(name)
    }

    /// BlueZ dropped the device's object under `adapter`: the strongest report of the other adapters, or unseen.
    package mutating func lost(_ name: String, adapter: String, now: ContinuousClock.Instant) -> Tell? {
        let adapters = (heard[name] ?? [:]).filter { $0.key != adapter && now - $0.value.at < Self.window }
        heard[name] = adapters.isEmpty ? nil : adapters
        guard !adapters.isEmpty else {
            told[name] = nil
            return .unseen
        }
        return tell(name)
    }

    private mutating func tell(_ name: String) -> Tell? {
        guard let best = heard[name]?.values.map(\.rssi).max(), told[name] != best else { return nil }
        told[name] = best
        return .rssi(best)
    }
}
