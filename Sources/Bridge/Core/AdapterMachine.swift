import BlueZ
import BridgeAdapters
import BridgeAdverts
import BridgeModel
import Config
import Logging

/// The adapters' part of `CoreMachine` (docs/adapters.md), pure like it: where each device is placed (`Placement`),
/// each adapter's health (`AdapterHealthMachine`) with its timers and recovery steps, discovery kept on for passive
/// broadcasts, and the adapter list read from BlueZ, one read at a time. BlueZ's facts arrive here too
/// (AdapterMachine+BlueZ). What it needs of the rest of the machine (the config, the fleet's view, the running
/// sessions) it is handed with each input (`World`), never kept: the core machine holds the one copy.
///
/// Invariants:
/// - at most one adapter read is in flight; facts that arrive meanwhile ask for one more read after it, so the last
///   read always follows the last fact;
/// - a session hears its adapter only when the adapter or its power changed (`Placement`);
/// - at most one wake is armed per adapter, the earliest asked for.
struct AdapterMachine: Sendable {
    typealias Action = CoreMachine.Action

    /// The rest of the core machine's state, as placement reads it.
    struct World {
        let config: BridgeConfig
        let fleet: FleetView
        /// The devices with a session.
        let running: Set<String>
        /// Every device heard is told as `Action.advertisement` (the Bluetooth proxy's; `CoreMachine.rawAdvertisements`).
        var rawAdvertisements = false

        /// Discovery is kept on every powered adapter, every report asked for: one scan serves the adverts feature
        /// and the proxy alike.
        var scansContinuously: Bool { config.adverts.enabled || rawAdvertisements }
    }

    /// Adapter health and placement: what sessions report, discovery results, the machine's own timers and steps.
    enum AdapterInput: Sendable {
        /// A Connect or StartDiscovery through the adapter (its object path) finished; `error` nil when it worked.
        case operation(adapterPath: String, error: String?)
        case availability(device: String, online: Bool)
        case tick(adapter: String)
        case stepFinished(adapter: String, AdapterHealthMachine.Step, ok: Bool, error: String?)
        /// Connections others hold on each adapter (the Bluetooth proxy's), by adapter name.
        case external([String: Int])
    }

    /// Discovery as the machine asks for it (`DiscoveryPort`).
    enum DiscoveryEffect: Sendable, Equatable {
        /// Discovery that ran is gone: start again for whoever waits.
        case reset
        case reportRepeats(Bool)
        /// Keep discovery on through this adapter (its path) for passive broadcasts, or no longer.
        case want(adapterPath: String)
        case release(adapterPath: String)
        /// The adapters `adapter: any` devices are looked for through (`AnyAdapterDiscovery`).
        case anyAdapters(Set<String>)
    }

    /// The adapter list from BlueZ; where it is in flight.
    enum AdapterRead: Sendable, Equatable {
        case idle
        case reading(again: Bool, thenReset: Bool)
    }

    /// The discovery interest of the broadcast scan: not a device name (those never hold a NUL).
    static let broadcastScanner = "\u{0}adverts"

    var bluezAvailable = true
    /// Where each device is placed and who was told (`Placement`, with the `AdapterSet`).
    var placement: Placement
    /// BlueZ's adapter list as last read (the config's `bluetooth:` section picks from it).
    var adaptersKnown: [AdapterInfo] = []
    private(set) var adapterRead = AdapterRead.idle
    private(set) var armedWakes: [String: ContinuousClock.Instant] = [:]
    /// Passive broadcasts: the adapters discovery is kept on for them, and whether every report is asked for.
    var broadcastScan: (adapters: Set<String>, repeats: Bool) = ([], false)
    /// Fleet: the passive devices' RSSI reports the ownership machines were told (see `PassiveSightings`).
    var passiveSightings = PassiveSightings()

    init(settings: BluetoothSettings, wedgeWindow: Duration) {
        placement = Placement(set: AdapterSet(settings: settings, window: wedgeWindow))
    }

    var adapterSet: AdapterSet {
        get { placement.set }
        _modify { yield &placement.set }
    }

    /// The devices that take a connection (a passive one never does).
    static func connecting(_ world: World) -> [DeviceConfig] { world.config.devices.filter { !$0.isPassive } }

    /// In a fleet, the devices this bridge does not own: they listen, they do not connect (`AdapterSet.place`).
    static func listeningOnly(_ world: World) -> Set<String> {
        guard world.fleet.isFleet else { return [] }
        return Set(world.config.devices.map(\.name).filter { !world.fleet.owns($0) })
    }

    mutating func handle(_ input: AdapterInput, _ world: World, now: ContinuousClock.Instant, _ out: inout [Action]) {
        switch input {
        case .operation(let path, let error):
            feed(Self.name(ofAdapter: path), error.map { .operationFailed($0) } ?? .operationSucceeded, world, now: now, &out)
        case .availability(let device, let online):
            adapterSet.setOnline(device, online)
            if let adapter = adapterSet.placed[device] { feed(adapter, .tick, world, now: now, &out) }
            if !online { place(world, &out) } else { tell(placement.adapterList(), world, &out) }
        case .tick(let adapter):
            if let armed = armedWakes[adapter], armed <= now { armedWakes[adapter] = nil }
            feed(adapter, .tick, world, now: now, &out)
        case .stepFinished(let adapter, let step, let ok, let error):
            feed(adapter, .stepFinished(step, ok: ok, error: error), world, now: now, &out)
        case .external(let counts):
            guard adapterSet.external != counts else { return }
            adapterSet.external = counts
            place(world, &out)
        }
    }

    // MARK: - The adapter list

    /// Something about the adapters changed: read the list again (after the read in flight, if any).
    mutating func readAdapters(resetDiscovery: Bool = false, _ out: inout [Action]) {
        switch adapterRead {
        case .idle:
            adapterRead = .reading(again: false, thenReset: resetDiscovery)
            out.append(.readAdapters)
        case .reading(_, let reset):
            adapterRead = .reading(again: true, thenReset: reset || resetDiscovery)
        }
    }

    /// BlueZ's adapters as read: refresh, re-place, tell sessions, republish; read again if facts came meanwhile.
    mutating func adaptersRead(_ list: [AdapterInfo], _ world: World, _ out: inout [Action]) {
        var reset = false
        if case .reading(let again, let thenReset) = adapterRead {
            adapterRead = .idle
            if again { readAdapters(resetDiscovery: thenReset, &out) } else { reset = thenReset }
        }
        adaptersKnown = list
        let before = adapterSet.present
        adapterSet.update(list)
        for (name, adapter) in adapterSet.present.sorted(by: { $0.key < $1.key })
        where before[name]?.powered != adapter.powered || before[name] == nil {
            out.append(.log(.notice, "adapter \(name) \(before[name] == nil ? "present, " : "")powered \(adapter.powered)"))
        }
        for name in before.keys.sorted() where adapterSet.present[name] == nil {
            out.append(.log(.notice, "adapter \(name) gone"))
        }
        let poweredOn = adapterSet.present.contains { name, adapter in adapter.powered && before[name]?.powered != true }
        place(world, &out)
        if poweredOn || reset { out.append(.discovery(.reset)) }
    }

    /// The config's `bluetooth:` section changed: the adapters it uses are taken again from the list last read.
    mutating func adapterSettings(_ settings: BluetoothSettings) {
        guard adapterSet.settings != settings else { return }
        adapterSet.settings = settings
        adapterSet.update(adaptersKnown)
    }

    // MARK: - Placement

    /// Places every device and tells whoever must hear of a change (`Placement`).
    mutating func place(_ world: World, _ out: inout [Action]) {
        tell(placement.place(Self.connecting(world), sessions: world.running.sorted(), fleet: world.fleet.isFleet,
                             listeningOnly: Self.listeningOnly(world)), world, &out)
        out.append(.discovery(.anyAdapters(adapterSet.listening)))
        scanForBroadcasts(world, &out)
    }

    /// Passive broadcasts (docs/adverts.md): while `adverts.enabled` or the Bluetooth proxy wants raw
    /// advertisements, discovery stays on every powered adapter, reporting every advertisement; the sessions' own
    /// discovery requests come and go beside it.
    mutating func scanForBroadcasts(_ world: World, _ out: inout [Action]) {
        let enabled = world.scansContinuously
        let wanted: Set<String> = enabled ? Set(adapterSet.present.values.filter(\.powered).map(\.path)) : []
        if enabled != broadcastScan.repeats {
            out.append(.discovery(.reportRepeats(enabled)))
            broadcastScan.repeats = enabled
        }
        for path in wanted.subtracting(broadcastScan.adapters).sorted() { out.append(.discovery(.want(adapterPath: path))) }
        for path in broadcastScan.adapters.subtracting(wanted).sorted() { out.append(.discovery(.release(adapterPath: path))) }
        broadcastScan.adapters = wanted
    }

    mutating func tell(_ notices: [Placement.Notice], _ world: World, _ out: inout [Action]) {
        for notice in notices {
            switch notice {
            case .moved(let name, let to):
                out.append(.log(.info, "device placed on adapter \(to ?? "none")", device: name))
            case .adapter(let name, let info):
                out.append(.sessionAdapter(device: name, info))
            case .room(let name, let room):
                if let device = world.config.devices.first(where: { $0.name == name }) { out.append(.room(device, room)) }
            case .adapters(let statuses, let placed):
                out.append(.adapters(statuses, placement: placed))
            }
        }
    }

    /// Where a new session starts; remembered as told.
    mutating func initialAdapter(for device: DeviceConfig, _ world: World) -> AdapterInfo? {
        placement.initialAdapter(for: device.name, Self.connecting(world), listeningOnly: Self.listeningOnly(world))
    }

    // MARK: - Health

    mutating func feed(_ adapter: String, _ input: AdapterHealthMachine.Input, _ world: World,
                       now: ContinuousClock.Instant, _ out: inout [Action]) {
        let before = adapterSet.health[adapter]?.state
        var changed = false
        for action in adapterSet.feed(adapter, input, now: now) {
            switch action {
            case .run(let step):
                out.append(.runStep(step, adapter: adapter, path: adapterSet.present[adapter]?.path))
            case .announce(let step, let ok):
                out.append(.log(ok ? .notice : .warning, "adapter \(adapter) recovery step \(step.rawValue): \(ok ? "ok" : "failed")"))
                out.append(.adapterRecovery(adapter: adapter, step: step.rawValue, ok: ok))
            case .wake(let at):
                if let armed = armedWakes[adapter], armed <= at { break }
                armedWakes[adapter] = at
                out.append(.arm(adapter: adapter, at: at))
            case .changed:
                changed = true
            }
        }
        if changed {
            if let state = adapterSet.health[adapter]?.state, state != before {
                out.append(.log(.notice, "adapter \(adapter) state \(state.rawValue)"))
            }
            place(world, &out)      // health decides where `any` devices go
        }
    }

    /// "/org/bluez/hci0" of "/org/bluez/hci0/dev_…".
    static func adapterPath(ofDevice path: String) -> String {
        let components = path.split(separator: "/")
        return "/" + components.prefix { !$0.hasPrefix("dev_") }.joined(separator: "/")
    }

    static func name(ofAdapter path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
