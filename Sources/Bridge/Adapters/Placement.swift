import BlueZ
import Config

/// The core's placement decisions (docs/adapters.md), pure: after anything that may move a device (an adapter came,
/// went or wedged, a device was seen or lost, a config change, a fleet ownership), `place` puts every device on an
/// adapter (`AdapterSet`) and says who must hear of it. Only changes are told: a session hears its adapter when the
/// adapter or its power changed, the fleet hears a device's room when that changed, the features hear the adapter
/// list when it or the placement changed.
package struct Placement: Sendable {
    package enum Notice: Sendable, Equatable {
        /// Tell the device's session its adapter (nil: none usable).
        case adapter(device: String, AdapterInfo?)
        /// Fleet: whether this bridge has room for the device (`CoreEvent.room`).
        case room(device: String, Bool)
        case adapters([AdapterStatus], placement: [String: String])
        /// A device moved to this adapter (nil: none), for the log.
        case moved(device: String, to: String?)
    }

    package var set: AdapterSet
    /// What each session was last told about its adapter (absent: nothing yet).
    private(set) var toldAdapter: [String: AdapterInfo?] = [:]
    /// Fleet: what was last told about each device's room.
    private(set) var toldRoom: [String: Bool] = [:]
    private var lastStatuses: [AdapterStatus]?
    private var lastPlacement: [String: String] = [:]

    package init(set: AdapterSet) {
        self.set = set
    }

    /// `sessions`: the devices with a running session; `fleet`: whether the bridge is in one, and `listeningOnly` the
    /// devices it does not own there (they listen, they do not connect).
    package mutating func place(_ devices: [DeviceConfig], sessions: some Sequence<String>, fleet: Bool,
                        listeningOnly: Set<String>) -> [Notice] {
        var out = set.place(devices, listeningOnly: listeningOnly).map { Notice.moved(device: $0, to: set.placed[$0]) }
        for name in sessions {
            let now = set.adapter(of: name)
            let told = toldAdapter[name] ?? nil
            guard toldAdapter[name] == nil || now?.path != told?.path || now?.powered != told?.powered else { continue }
            toldAdapter[name] = .some(now)
            out.append(.adapter(device: name, now))
        }
        out += adapterList()
        if !fleet {
            toldRoom = [:]
            return out
        }
        for device in devices {
            let room = set.hasRoom(for: device, listeningOnly: listeningOnly)
            guard toldRoom[device.name] != room else { continue }
            toldRoom[device.name] = room
            out.append(.room(device: device.name, room))
        }
        return out
    }

    /// The adapter list, when it or the placement changed since last told.
    package mutating func adapterList() -> [Notice] {
        let statuses = set.statuses
        guard statuses != lastStatuses || set.placed != lastPlacement else { return [] }
        lastStatuses = statuses
        lastPlacement = set.placed
        return [.adapters(statuses, placement: set.placed)]
    }

    /// Where a new session starts; remembered as told.
    package mutating func initialAdapter(for device: String, _ devices: [DeviceConfig],
                                         listeningOnly: Set<String>) -> AdapterInfo? {
        _ = set.place(devices, listeningOnly: listeningOnly)
        let info = set.adapter(of: device)
        toldAdapter[device] = .some(info)
        return info
    }

    /// The device left the config: placed anew, told anew if it comes back.
    package mutating func forget(_ device: DeviceConfig) {
        set.forget(device)
        toldAdapter[device.name] = nil
        toldRoom[device.name] = nil
    }

    /// bluetoothd left: no adapters, and every session was told so.
    package mutating func bluezGone() {
        set.update([])
        toldAdapter = toldAdapter.mapValues { _ in nil }
    }
}
