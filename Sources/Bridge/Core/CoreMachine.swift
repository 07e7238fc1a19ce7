import BlueZ
import Bluetooth
import BridgeAdapters
import BridgeFeatureHost
import BridgeModel
import Config
import Logging
import MQTT

/// A change of the running config: a reload read from the files, or one device added or removed over the bridge API.
enum ConfigChange: Sendable {
    /// `basedOn` is the core's config generation when the files were read (`BridgeCore.generation`); bridge API
    /// changes applied since are replayed on top, so a reload read before them does not undo them.
    case reload(BridgeConfig, basedOn: UInt64, mqttReplaced: Bool)
    case device(DeviceChange)
}

/// The core's decisions, as a value type: events in, actions out, no I/O, never suspending (the model is
/// `SessionMachine`); `BridgeCore` carries the actions out. By concern:
/// - config changes (this file): it keeps the running config and applies changes strictly one after another: a change
///   whose sessions are still stopping holds every later one in a queue, so a reload and a bridge API change never
///   interleave and neither computes from a config the other is about to replace;
/// - the fleet's view (`FleetView`: ownership and holds) and the commands that wait for a hold (CoreMachine+Fleet);
/// - adapters: placement, health, timers, recovery steps, broadcast discovery (CoreMachine+Adapters);
/// - BlueZ's facts as values: bluetoothd, adapters, devices seen and dropped (CoreMachine+BlueZ).
///
/// Invariants:
/// - at most one change is in flight; every change requested is answered exactly once (`finished`);
/// - `config` changes only by `install`, and the generation counts installs;
/// - `running` is the devices with a session: a session is started (`start`) only for a device of the config not
///   running, and a running device leaves it only with a `stop`.
struct CoreMachine: Sendable {
    typealias ChangeID = UInt64

    enum Input: Sendable {
        /// The core starts: what BlueZ knows then (adapters, devices with an RSSI, whether bluetoothd is there).
        case began(adapters: [AdapterInfo], sighted: [DeviceInfo], bluezAvailable: Bool)
        case requested(ChangeID, ConfigChange)
        /// The sessions a change stopped (`Action.stop`) have all ended.
        case stopped(ChangeID)
        /// Fleet: hold or release a device (`known`: it has a session).
        case hold(device: String, held: Bool, known: Bool)
        /// Fleet: the fleet feature decided; `running`: the device has a session.
        case ownership(device: String, owned: Bool, running: Bool)
        /// A device's session started (or a passive device was applied).
        case sessionStarted(device: String)
        case bluez(BlueZEvent)
        /// BlueZ's adapter list, read after `Action.readAdapters`.
        case adaptersRead([AdapterInfo])
        case adapter(AdapterMachine.AdapterInput)
    }

    enum Action: Sendable, Equatable {
        /// Stop these sessions, then feed `.stopped(id)`. Their retained topics are cleared at `install`.
        case stop(ChangeID, [DeviceConfig])
        /// Make `new` the running config: clean up after `diff.leaving` (the retained topics of those `fleetBefore`
        /// says were this bridge's), move bridge topics. When the config joined or left a fleet (`fleetBefore.isFleet`
        /// differs from `fleet.isFleet`), every session hears its new ownership. Sessions start after it (`start`),
        /// then `applied` says it.
        case install(old: BridgeConfig, new: BridgeConfig, diff: ConfigDiff, mqttReplaced: Bool, fleetBefore: FleetView)
        /// Start a device's session on `adapter`, owned or not (a fleet), knowing whether bluetoothd is there.
        case start(DeviceConfig, adapter: AdapterInfo?, owned: Bool, bluezAvailable: Bool)
        /// A config is running (`old` nil: the first): publish the routes, subscribe, tell the features.
        case applied(old: BridgeConfig?, new: BridgeConfig, diff: ConfigDiff?, mqttReplaced: Bool)
        /// The change's answer: the device added or removed (nil for a reload), or why it was refused.
        case finished(ChangeID, Result<DeviceConfig?, DeviceChangeError>)
        /// Fleet: start or end holding the device's values (`HoldingPublisher`); `deliver` publishes what was held.
        case holdValues(device: String)
        case releaseValues(device: String, deliver: Bool)
        /// Tell the features a hold began or ended.
        case announceHeld(device: String, Bool)
        /// Commands that waited for a hold, to be routed again in order.
        case replay([MQTTMessage])
        /// Fleet: a running device was taken or given up: tell its session, say so.
        case ownershipChanged(device: String, owned: Bool)
        /// Fleet: say a device's ownership (a passive device, or a session that started after it was decided).
        case announceOwnership(device: String)
        /// Fleet: a session started for a device another bridge owns: its release is already done.
        case released(DeviceConfig)

        /// Read BlueZ's adapters and feed `.adaptersRead`.
        case readAdapters
        /// Tell a session its adapter (nil: none usable).
        case sessionAdapter(device: String, AdapterInfo?)
        /// A BlueZ fact about the device with this address, for its session.
        case sessionDevice(BluetoothAddress, BlueZEvent)
        /// bluetoothd left or came back: the sessions and the read model hear it.
        case bluezAvailable(Bool)
        case discovery(AdapterMachine.DiscoveryEffect)
        /// Feed `.adapter(.tick(adapter))` at `at`.
        case arm(adapter: String, at: ContinuousClock.Instant)
        /// Run a recovery step on the adapter (at `path`; nil: it is gone) and feed `.stepFinished`.
        case runStep(AdapterHealthMachine.Step, adapter: String, path: String?)
        /// The adapters' states or the placement changed (the read model, the features).
        case adapters([AdapterStatus], placement: [String: String])
        /// Fleet: whether this bridge has a connection slot for the device (`CoreEvent.room`).
        case room(DeviceConfig, Bool)
        case adapterRecovery(adapter: String, step: String, ok: Bool)
        /// What an adapter heard, for the adverts feature.
        case broadcast(HeardBroadcast)
        /// What an adapter heard, as raw AD structures, for the Bluetooth proxy.
        case advertisement(HeardAdvertisement)
        /// A device's link came or went, for the Bluetooth proxy.
        case link(address: BluetoothAddress, adapter: String, connected: Bool)
        /// A device object went, for the Bluetooth proxy.
        case unheard(BluetoothAddress)
        /// A passive device was heard (the read model's RSSI and last seen).
        case passiveHeard(device: String, rssi: Int?)
        /// Fleet: this bridge's sighting of a device (nil: unseen).
        case sighting(DeviceConfig, Int?)
        case log(Logger.Level, String, device: String? = nil)
    }

    /// A bounded history of bridge API changes, to replay on reloads read before them.
    static let historyLimit = 1024
    /// Commands kept per held device; a hold lasts the 2 s a bridge listens after a broker connect.
    static let maxHeldCommands = 64

    private(set) var config: BridgeConfig
    /// Counts installed changes (the initial config is 0).
    private(set) var generation: UInt64 = 0
    private(set) var inFlight: (id: ChangeID, new: BridgeConfig, diff: ConfigDiff, mqttReplaced: Bool,
                                answer: Result<DeviceConfig?, DeviceChangeError>)?
    private(set) var queue: [(id: ChangeID, change: ConfigChange)] = []
    private var history: [(generation: UInt64, change: DeviceChange)] = []
    var fleet: FleetView
    var heldCommands: [String: [MQTTMessage]] = [:]
    /// Fleet: ownership decided while the device had no session, to be said when it starts.
    var unannounced: Set<String> = []
    /// The devices with a session.
    private(set) var running: Set<String> = []
    /// Placement, adapter health, broadcast discovery and BlueZ's facts.
    private(set) var adapters: AdapterMachine
    /// A feature consumes raw advertisements (`BridgeFeature.wantsRawAdvertisements`): fixed for the core's life.
    let rawAdvertisementConsumer: Bool

    init(config: BridgeConfig, wedgeWindow: Duration = .seconds(60), rawAdvertisementConsumer: Bool = false) {
        self.config = config
        self.rawAdvertisementConsumer = rawAdvertisementConsumer
        fleet = FleetView(fleet: config.fleet != nil)
        adapters = AdapterMachine(settings: config.bluetooth, wedgeWindow: wedgeWindow)
    }

    /// What the adapters' part reads of the rest (`AdapterMachine.World`).
    var world: AdapterMachine.World {
        .init(config: config, fleet: fleet, running: running,
              rawAdvertisements: Self.rawAdvertisements(config, consumer: rawAdvertisementConsumer))
    }

    /// The Bluetooth proxy's switch (docs/home-assistant.md, "Bluetooth proxy"): raw advertisements are made, and
    /// discovery kept on for them, while the config enables the proxy and a feature consumes them.
    static func rawAdvertisements(_ config: BridgeConfig, consumer: Bool) -> Bool {
        consumer && config.esphomeProxy.enabled
    }

    var isApplying: Bool { inFlight != nil }

    mutating func handle(_ input: Input, now: ContinuousClock.Instant = .now) -> [Action] {
        var out: [Action] = []
        switch input {
        case .began(let adapters, let sighted, let available):
            begin(adapters: adapters, sighted: sighted, bluezAvailable: available, now: now, &out)
        case .bluez(let event):
            let world = world
            adapters.handle(event, world, now: now, &out)
        case .adaptersRead(let list):
            let world = world
            adapters.adaptersRead(list, world, &out)
        case .adapter(let adapterInput):
            let world = world
            adapters.handle(adapterInput, world, now: now, &out)
        case .requested(let id, let change):
            queue.append((id, change))
            if inFlight == nil { startNext(&out) }
        case .stopped(let id):
            guard let flight = inFlight, flight.id == id else { break }
            install(flight.new, diff: flight.diff, mqttReplaced: flight.mqttReplaced, &out)
            inFlight = nil
            out.append(.finished(id, flight.answer))
            startNext(&out)
        case .hold, .ownership, .sessionStarted:
            handleFleet(input, &out)
        }
        return out
    }

    // MARK: - Changes

    private mutating func startNext(_ out: inout [Action]) {
        while inFlight == nil, !queue.isEmpty {
            let (id, change) = queue.removeFirst()
            let new: BridgeConfig
            let answer: Result<DeviceConfig?, DeviceChangeError>
            let mqttReplaced: Bool
            switch change {
            case .reload(let loaded, let basedOn, let replaced):
                new = rebase(loaded, since: basedOn)
                answer = .success(nil)
                mqttReplaced = replaced
            case .device(let deviceChange):
                switch deviceChange.applied(to: config) {
                case .failure(let error):
                    out.append(.finished(id, .failure(error)))
                    continue
                case .success(let result) where result.config == config:
                    out.append(.finished(id, .success(result.device)))      // already so: nothing to install
                    continue
                case .success(let result):
                    new = result.config
                    answer = .success(result.device)
                    mqttReplaced = false
                    remember(deviceChange)
                }
            }
            let diff = ConfigDiff(old: config, new: new)
            if diff.leaving.isEmpty {
                install(new, diff: diff, mqttReplaced: mqttReplaced, &out)
                out.append(.finished(id, answer))
            } else {
                inFlight = (id, new, diff, mqttReplaced, answer)
                running.subtract(diff.leaving.map(\.name))
                out.append(.stop(id, diff.leaving))
            }
        }
    }

    private mutating func install(_ new: BridgeConfig, diff: ConfigDiff, mqttReplaced: Bool, _ out: inout [Action]) {
        let old = config, fleetBefore = fleet
        config = new
        generation += 1
        for device in diff.leaving {
            // A new session starts unheld; commands waiting for the old one go with it.
            fleet.holding.remove(device.name)
            heldCommands[device.name] = nil
        }
        _ = fleet.setFleet(new.fleet != nil)
        out.append(.install(old: old, new: new, diff: diff, mqttReplaced: mqttReplaced, fleetBefore: fleetBefore))
        for device in diff.leaving { adapters.placement.forget(device) }
        adapters.adapterSettings(new.bluetooth)
        for device in diff.starting where !running.contains(device.name) {
            start(device, &out)
            out.append(.log(.notice, "device \(device.name) started"))
        }
        out.append(.applied(old: old, new: new, diff: diff, mqttReplaced: mqttReplaced))
        place(&out)
    }

    /// The first config: what BlueZ knows, every device started, then placed.
    private mutating func begin(adapters known: [AdapterInfo], sighted: [DeviceInfo], bluezAvailable: Bool,
                                now: ContinuousClock.Instant, _ out: inout [Action]) {
        let world = world
        adapters.adaptersKnown = known
        adapters.adapterSet.update(known)
        adapters.adapterSet.watch(AdapterMachine.connecting(world))
        for device in sighted where device.rssi != nil {
            adapters.sighted(device, world, now: now, &out)
            // The Bluetooth proxy learns what BlueZ already holds: a still device is reported again only when it changes.
            adapters.advertised(device, changed: nil, world, &out)
        }
        if adapters.adapterSet.present.isEmpty { out.append(.log(.warning, "no Bluetooth adapter yet; waiting for one")) }
        adapters.bluezAvailable = bluezAvailable
        for device in config.devices { start(device, &out) }
        out.append(.applied(old: nil, new: config, diff: nil, mqttReplaced: false))
        place(&out)
    }

    /// A device's session, or for a passive device (which never connects: the adverts feature speaks for it) its
    /// sightings afresh.
    private mutating func start(_ device: DeviceConfig, _ out: inout [Action]) {
        if device.isPassive {
            adapters.passiveSightings.keep(Set(config.devices.filter(\.isPassive).map(\.name)))
            adapters.passiveSightings.restart(device.name)
        } else {
            running.insert(device.name)
            let world = world
            out.append(.start(device, adapter: adapters.initialAdapter(for: device, world), owned: fleet.owns(device.name),
                              bluezAvailable: adapters.bluezAvailable))
        }
        handleFleet(.sessionStarted(device: device.name), &out)
        // Fleet: a session that starts without the device (a reload replaced the one that was releasing it, and
        // stopped it disconnected) will never confirm that release; it is confirmed here, so the handover ends.
        if !device.isPassive && fleet.isFleet && !fleet.owns(device.name) { out.append(.released(device)) }
    }

    /// Bridge API changes installed after `generation` (the reload's files were read before them), replayed onto the
    /// reload's config. One that no longer applies (the reload already has the device, or no longer has it, or it is
    /// now a main-file device) is skipped: the files decide.
    private func rebase(_ loaded: BridgeConfig, since generation: UInt64) -> BridgeConfig {
        var config = loaded
        for entry in history where entry.generation > generation {
            if case .success(let result) = entry.change.applied(to: config) { config = result.config }
        }
        return Self.keepingAutoDevices(of: self.config, in: config)
    }

    /// The files never hold auto devices (docs/adverts.md: heard, not saved): a reload keeps those still allowed by
    /// the new `adverts:` section, unless the files now save a device with that address or name.
    static func keepingAutoDevices(of running: BridgeConfig, in loaded: BridgeConfig) -> BridgeConfig {
        var config = loaded
        guard config.adverts.enabled else { return config }
        var kept = 0
        for device in running.devices where device.source.kind == .advert {
            guard kept < config.adverts.autoLimit, case .format(let format)? = device.advert,
                  config.adverts.auto.contains(format),
                  !config.devices.contains(where: { $0.address == device.address || $0.topicLevel == device.topicLevel })
            else { continue }
            config.devices.append(device)
            kept += 1
        }
        return config
    }

    /// Recorded with the generation its install will have.
    private mutating func remember(_ change: DeviceChange) {
        history.append((generation + 1, change))
        if history.count > Self.historyLimit { history.removeFirst(history.count - Self.historyLimit) }
    }
}

extension CoreMachine {
    /// Places every device and tells whoever must hear of a change (`AdapterMachine.place`).
    mutating func place(_ out: inout [Action]) {
        let world = world
        adapters.place(world, &out)
    }
}
