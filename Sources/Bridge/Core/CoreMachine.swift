import Config
import MQTT

/// A change of the running config: a reload read from the files, or one device added or removed over the bridge API.
enum ConfigChange: Sendable {
    /// `basedOn` is the core's config generation when the files were read (`BridgeCore.generation`); bridge API
    /// changes applied since are replayed on top, so a reload read before them does not undo them.
    case reload(BridgeConfig, basedOn: UInt64, mqttReplaced: Bool)
    case device(DeviceChange)
}

/// The core's decisions, as a value type: events in, actions out, no I/O (the model is `SessionMachine`). It keeps
/// the running config and applies changes strictly one after another: a change whose sessions are still stopping
/// holds every later one in a queue, so a reload and a bridge API change never interleave and neither computes from
/// a config the other is about to replace. It also keeps the fleet's holds (which devices' commands wait while their
/// ownership is being confirmed, docs/fleet.md) and those commands.
///
/// Invariants:
/// - at most one change is in flight; every change requested is answered exactly once (`finished`);
/// - `config` changes only by `install`, and the generation counts installs;
/// - commands of a held device run in arrival order when the hold ends with the device still this bridge's, and are
///   dropped when another bridge took it (it received them too).
struct CoreMachine: Sendable {
    typealias ChangeID = UInt64

    enum Input: Sendable {
        case requested(ChangeID, ConfigChange)
        /// The sessions a change stopped (`Action.stop`) have all ended.
        case stopped(ChangeID)
        /// Fleet: hold or release a device (`known`: it has a session).
        case hold(device: String, held: Bool, known: Bool)
        case ownership(device: String, owned: Bool)
    }

    enum Action: Sendable, Equatable {
        /// Stop these sessions, then feed `.stopped(id)`. Their retained topics are cleared at `install`.
        case stop(ChangeID, [DeviceConfig])
        /// Make `new` the running config: clean up after `diff.leaving`, start `diff.starting`, move bridge topics.
        case install(old: BridgeConfig, new: BridgeConfig, diff: ConfigDiff, mqttReplaced: Bool)
        /// The change's answer: the device added or removed (nil for a reload), or why it was refused.
        case finished(ChangeID, Result<DeviceConfig?, DeviceChangeError>)
        /// Fleet: start or end holding the device's values (`HoldingPublisher`); `deliver` publishes what was held.
        case holdValues(device: String)
        case releaseValues(device: String, deliver: Bool)
        /// Tell the features a hold began or ended.
        case announceHeld(device: String, Bool)
        /// Commands that waited for a hold, to be routed again in order.
        case replay([MQTTMessage])
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
    private(set) var holding: Set<String> = []
    private var heldCommands: [String: [MQTTMessage]] = [:]

    init(config: BridgeConfig) {
        self.config = config
    }

    var isApplying: Bool { inFlight != nil }

    mutating func handle(_ input: Input) -> [Action] {
        var out: [Action] = []
        switch input {
        case .requested(let id, let change):
            queue.append((id, change))
            if inFlight == nil { startNext(&out) }
        case .stopped(let id):
            guard let flight = inFlight, flight.id == id else { break }
            install(flight.new, diff: flight.diff, mqttReplaced: flight.mqttReplaced, &out)
            inFlight = nil
            out.append(.finished(id, flight.answer))
            startNext(&out)
        case .hold(let device, let held, let known):
            guard known else { break }
            if held {
                guard holding.insert(device).inserted else { break }
                out += [.holdValues(device: device), .announceHeld(device: device, true)]
            } else {
                guard holding.remove(device) != nil else { break }
                out += [.releaseValues(device: device, deliver: true), .announceHeld(device: device, false)]
                if let waiting = heldCommands.removeValue(forKey: device) { out.append(.replay(waiting)) }
            }
        case .ownership(let device, let owned):
            let wasHeld = holding.remove(device) != nil
            if owned {
                // Owning it ends any hold: the values follow, the commands run.
                out.append(.releaseValues(device: device, deliver: true))
                if wasHeld, let waiting = heldCommands.removeValue(forKey: device) { out.append(.replay(waiting)) }
            } else {
                // Another bridge took the device: it ran these commands and publishes these notifications.
                heldCommands[device] = nil
                out.append(.releaseValues(device: device, deliver: false))
            }
        }
        return out
    }

    /// Whether a command for `device` waits for its hold to end. `accepted` false: it was refused (too many wait).
    mutating func holdCommand(_ message: MQTTMessage, device: String) -> (held: Bool, accepted: Bool) {
        guard holding.contains(device) else { return (false, true) }
        guard heldCommands[device, default: []].count < Self.maxHeldCommands else { return (true, false) }
        heldCommands[device, default: []].append(message)
        return (true, true)
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
                out.append(.stop(id, diff.leaving))
            }
        }
    }

    private mutating func install(_ new: BridgeConfig, diff: ConfigDiff, mqttReplaced: Bool, _ out: inout [Action]) {
        let old = config
        config = new
        generation += 1
        for device in diff.leaving {
            // A new session starts unheld; commands waiting for the old one go with it.
            holding.remove(device.name)
            heldCommands[device.name] = nil
        }
        out.append(.install(old: old, new: new, diff: diff, mqttReplaced: mqttReplaced))
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
