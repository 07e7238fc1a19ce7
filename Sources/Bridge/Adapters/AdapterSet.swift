import BlueZ
import Bluetooth
import BridgeModel
import Codecs
import Config

/// What the core knows about its adapters (docs/adapters.md): which of BlueZ's adapters the config uses, each one's health,
/// which adapters saw which device how strongly, and where each device is placed. A value type the core owns; the
/// decisions are `AdapterChoice`'s and `AdapterHealthMachine`'s, this keeps their inputs.
package struct AdapterSet {
    package var settings: BluetoothSettings
    /// The adapters BlueZ has that the config uses, by name.
    package private(set) var present: [String: AdapterInfo] = [:]
    package private(set) var health: [String: AdapterHealthMachine] = [:]
    /// Device name → adapter name.
    package private(set) var placed: [String: String] = [:]
    package private(set) var online: Set<String> = []
    /// Connections others hold on each adapter (by name): the Bluetooth proxy's links for Home Assistant, which take
    /// an adapter's `max_connections` as the devices do (docs/adapters.md).
    package var external: [String: Int] = [:]
    /// Adapters a missing device was moved away from while their operations were failing. The wedge rule keeps
    /// counting for them until an operation through them works: otherwise a device that fails over to another
    /// adapter (after `AnyAdapterDiscovery`'s head start) would leave the wedged one unhealed, its capacity lost.
    private var abandoned: Set<String> = []
    private var sightings: [BluetoothAddress: [String: AdapterChoice.Sighting]] = [:]
    /// When each device was last placed on its adapter (`settle`).
    private var placedAt: [String: ContinuousClock.Instant] = [:]
    /// The saved devices' addresses: only their sightings are kept (a neighbour's phone with a rotating random
    /// address must not grow the table).
    private var watched: Set<BluetoothAddress> = []
    let window: Duration
    /// A device placed on a usable adapter stays there this long before sightings may move it. Every move restarts
    /// the device's connection (its old adapter's link is cancelled, the new one connects from scratch), and around
    /// a power cycle the facts come in a burst: the adapter powers off (its devices move), comes back healthy, and
    /// each radio's discovery reports the devices anew. Re-placing on each fact bounced the devices between the
    /// two radios within milliseconds, each bounce a Disconnect and a Connect racing in bluetoothd, which stalled
    /// their reconnection for the connect timeout or longer. An adapter that becomes unusable still loses its
    /// devices at once.
    static let settle: Duration = .seconds(5)

    package init(settings: BluetoothSettings, window: Duration) {
        self.settings = settings
        self.window = window
    }

    /// BlueZ's adapters changed: keeps those the config uses. Health survives an adapter's power cycle, and starts
    /// afresh when an adapter reappears after being removed.
    package mutating func update(_ adapters: [AdapterInfo]) {
        let used = adapters.filter { settings.uses($0.name) }
        present = Dictionary(used.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        health = health.filter { present[$0.key] != nil }
        abandoned = abandoned.filter { present[$0] != nil }
        for name in present.keys where health[name] == nil {
            health[name] = AdapterHealthMachine(window: window)
        }
    }

    /// Whether the BlueZ adapter at `path` is one the config uses. BlueZ lists what every adapter of the host hears;
    /// an adapter the config leaves out (another bridge's radio on the same host, say) is not this bridge's hearing.
    package func uses(adapterPath path: String) -> Bool {
        present.values.contains { $0.path == path }
    }

    /// The devices whose sightings count; sightings of any other address are dropped.
    package mutating func watch(_ devices: [DeviceConfig]) {
        watched = Set(devices.map(\.address))
        sightings = sightings.filter { watched.contains($0.key) }
    }

    package mutating func saw(_ address: BluetoothAddress, adapter: String, rssi: Int?,
                              at now: ContinuousClock.Instant) {
        guard present[adapter] != nil, watched.contains(address) else { return }
        sightings[address, default: [:]][adapter] = AdapterChoice.Sighting(rssi: rssi, at: now)
    }

    /// The device's sighting by `adapter` no longer holds (BlueZ removed the object, or the adapter went).
    package mutating func lostSight(_ address: BluetoothAddress, adapter: String) {
        sightings[address]?[adapter] = nil
    }

    package mutating func setOnline(_ device: String, _ value: Bool) {
        if value { online.insert(device) } else { online.remove(device) }
    }

    mutating func forget(_ device: DeviceConfig) {
        placed[device.name] = nil
        placedAt[device.name] = nil
        online.remove(device.name)
        sightings[device.address] = nil
    }

    /// Places every device, in config order (earlier devices get the first places on a full adapter), and returns
    /// the names of the devices whose adapter changed. A device that is online stays where it is while its adapter
    /// is there and powered: moving it would drop a working link. Devices in `listeningOnly` (in a fleet, those
    /// another bridge owns) only listen for adverts through their adapter: they take no connection slot, and a full
    /// adapter still listens for them, or no bridge would ever hear them to claim them. A passive device (docs/adverts.md)
    /// is never placed: it never connects, and every adapter hears its broadcasts.
    mutating func place(_ allDevices: [DeviceConfig], listeningOnly: Set<String> = [],
                        now: ContinuousClock.Instant = .now) -> [String] {
        let devices = allDevices.filter { !$0.isPassive }
        if watched.count != devices.count || devices.contains(where: { !watched.contains($0.address) }) { watch(devices) }
        var changed: [String] = []
        for device in devices {
            let current = placed[device.name]
            if online.contains(device.name), let current, present[current]?.powered == true { continue }
            let candidates = present.values.sorted { $0.name < $1.name }.map { adapter in
                AdapterChoice.Candidate(
                    name: adapter.name, powered: adapter.powered, healthy: health[adapter.name]?.isHealthy ?? true,
                    devices: placed.filter { $0.key != device.name && $0.value == adapter.name
                                             && !listeningOnly.contains($0.key) }.count + (external[adapter.name] ?? 0),
                    maxConnections: listeningOnly.contains(device.name) ? Int.max
                                                                         : settings.maxConnections(of: adapter.name),
                    seen: sightings[device.address]?[adapter.name])
            }
            let settling = placedAt[device.name].map { now - $0 < Self.settle } ?? false
            let choice = AdapterChoice.choose(pinned: device.adapter, current: current, candidates: candidates,
                                              settling: settling)
            if choice != current {
                if let current, !online.contains(device.name), health[current]?.isFailing == true {
                    abandoned.insert(current)
                }
                placed[device.name] = choice
                placedAt[device.name] = now
                changed.append(device.name)
            }
        }
        return changed
    }

    /// Whether the device would get a connection slot if this bridge owned it (a fleet's claim rule): an adapter it
    /// may use is powered, healthy and has room beside the devices that connect (those in `listeningOnly` take
    /// none). A device already placed with a slot has room where it is.
    func hasRoom(for device: DeviceConfig, listeningOnly: Set<String>) -> Bool {
        present.values.contains { adapter in
            guard device.adapter == nil || device.adapter == adapter.name, adapter.powered,
                  health[adapter.name]?.isHealthy ?? true else { return false }
            let taken = placed.filter { $0.key != device.name && $0.value == adapter.name
                                        && !listeningOnly.contains($0.key) }.count + (external[adapter.name] ?? 0)
            return taken < settings.maxConnections(of: adapter.name)
        }
    }

    /// The object paths of the adapters that listen for any missing `adapter: any` device: present, powered and
    /// healthy (a recovering adapter's discovery is the recovery ladder's business).
    package var listening: Set<String> {
        Set(present.values.filter { $0.powered && (health[$0.name]?.isHealthy ?? true) }.map(\.path))
    }

    func adapter(of device: String) -> AdapterInfo? {
        placed[device].flatMap { present[$0] }
    }

    /// Whether a device placed on `adapter` is missing (not online), or one left it missing while it was failing:
    /// the wedge rule's condition.
    func missing(on adapter: String) -> Bool {
        abandoned.contains(adapter) || placed.contains { $0.value == adapter && !online.contains($0.key) }
    }

    package mutating func feed(_ adapter: String, _ input: AdapterHealthMachine.Input,
                       now: ContinuousClock.Instant) -> [AdapterHealthMachine.Action] {
        guard health[adapter] != nil else { return [] }
        switch input {
        // A discovery restart that answered proves little (the wedges seen fail connects, not discovery): the
        // evidence stays for the machine's re-check a window later.
        case .operationSucceeded, .stepFinished(.powerCycle, ok: true, _): abandoned.remove(adapter)
        default: break
        }
        var actions = health[adapter]!.handle(.deviceMissing(missing(on: adapter)), now: now)
        actions += health[adapter]!.handle(input, now: now)
        return actions
    }

    /// The `B/bridge/adapters` array, by name.
    var statuses: [AdapterStatus] {
        present.values.sorted { $0.name < $1.name }.map { adapter in
            let machine = health[adapter.name]
            return AdapterStatus(
                name: adapter.name, address: adapter.address?.description, powered: adapter.powered,
                discovering: adapter.discovering,
                connections: placed.filter { $0.value == adapter.name && online.contains($0.key) }.count,
                state: machine?.state ?? .ok, recoveries: machine?.recoveries ?? 0, lastError: machine?.lastError)
        }
    }
}

/// One element of `B/bridge/adapters` and of the API's `health` answer (docs/adapters.md).
public struct AdapterStatus: Sendable, Equatable {
    public var name: String
    public var address: String?
    public var powered: Bool
    public var discovering: Bool
    /// Devices online through this adapter.
    public var connections: Int
    public var state: AdapterHealthMachine.State
    public var recoveries: Int
    public var lastError: String?

    var json: JSONValue {
        .object([
            ("name", .string(name)),
            ("address", address.map { .string($0) } ?? .null),
            ("powered", .bool(powered)),
            ("discovering", .bool(discovering)),
            ("connections", .int(connections)),
            ("state", .string(state.rawValue)),
            ("recoveries", .int(recoveries)),
            ("last_error", lastError.map { .string($0) } ?? .null),
        ])
    }

    package static func json(_ list: [AdapterStatus]) -> JSONValue { .array(list.map(\.json)) }

    /// `B/bridge/adapters`; `B/bridge/<id>/adapters` in a fleet. With the statuses, not with `AdapterFeature`: Home
    /// Assistant's bridge device names it too, and sits below `Features/`, where that feature goes
    /// (docs/dev/ARCHITECTURE.md#layers).
    package static func topic(_ topics: BridgeTopics) -> String { topics.bridgeOwn("adapters") }
}
