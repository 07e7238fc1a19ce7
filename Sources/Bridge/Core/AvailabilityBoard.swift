import Synchronization

/// Which devices are online, updated synchronously from the session loops, so the STATUS line and the watchdog do
/// not need a turn of the core's actor to know.
final class AvailabilityBoard: Sendable {
    private let online = Mutex<[String: Bool]>([:])
    private let changed: @Sendable () -> Void

    init(changed: @escaping @Sendable () -> Void) {
        self.changed = changed
    }

    func set(_ device: String, online value: Bool) {
        online.withLock { $0[device] = value }
        changed()
    }

    func register(_ device: String) {
        online.withLock { map in if map[device] == nil { map[device] = false } }
    }

    func remove(_ device: String) {
        online.withLock { $0[device] = nil }
    }

    func touch() { changed() }

    /// In a fleet, `owned` counts the saved devices this bridge owns.
    func snapshot(fleet: FleetView) -> BridgeCore.Snapshot {
        online.withLock { map in
            BridgeCore.Snapshot(devicesOnline: map.values.filter { $0 }.count, devices: map.count,
                                owned: fleet.isFleet ? map.keys.filter(fleet.owns).count : nil)
        }
    }
}
