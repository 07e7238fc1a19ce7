import BlueZ
import Bluetooth
import BridgeFeatureHost
import Config
import Logging

/// Keeps the daemon's `org.bluez.Agent1` (docs/pairing.md) in step with the config and with bluetoothd: the policy follows
/// every applied config (reloads and the bridge API's `device/add`/`device/remove` included), and the registration
/// with `AgentManager1` is redone whenever bluetoothd comes back (a restarted bluetoothd forgets its agents) or the
/// capability must change (BlueZ fixes it at registration).
package struct PairingAgentFeature: BridgeFeature {
    package init(bus: any AgentBus, logger: Logger, readiness: AgentReadiness = AgentReadiness()) {
        self.bus = bus
        self.logger = logger
        self.readiness = readiness
    }

    let bus: any AgentBus
    let logger: Logger
    /// Told what bluetoothd has registered, so sessions pair only through the agent (`AgentReadiness`).
    let readiness: AgentReadiness

    package func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        let agent = await bus.exportAgent(logger: logger)
        let registrar = AgentRegistrar(bus: bus, agent: agent, logger: logger, readiness: readiness)
        // Subscribed before anything is registered, so a bluetoothd restart from now on is seen.
        let bluezEvents = bus.events()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in bluezEvents {
                    switch event {
                    case .bluezAppeared: await registrar.bluezAppeared()
                    // bluetoothd owns its bus name before AgentManager1 is exported, so a registration at
                    // `bluezAppeared` can fail; by the time an adapter appears the manager is there.
                    case .adapterAdded: await registrar.retry()
                    default: break
                    }
                }
            }
            for await event in events {
                if case .configApplied(_, let config) = event { await registrar.apply(config) }
            }
            group.cancelAll()
        }
    }
}

/// What the agent should be for a config: which devices it answers for, and whether it is registered at all.
struct AgentRegistration: Sendable, Equatable {
    var policy: AgentPolicy
    var makeDefault: Bool

    init(_ config: BridgeConfig) {
        var devices: [BluetoothAddress: AgentPolicy.Entry] = [:]
        for device in config.devices {
            switch device.pairing.mode {
            case .none: continue
            case .justWorks: devices[device.address] = .justWorks
            case .passkey:
                // The validator guarantees six digits for `passkey`; a device without them cannot pair.
                guard let passkey = device.pairing.passkeyNumber else { continue }
                devices[device.address] = .passkey(passkey)
            }
        }
        // The Bluetooth proxy's passkeys (docs/home-assistant.md, "Bluetooth proxy"): Home Assistant pairs a device
        // through the proxy, and the API has no way to carry a passkey; a device of the config keeps its own.
        if config.esphomeProxy.enabled {
            for (address, entry) in config.esphomeProxy.passkeys where devices[address] == nil {
                guard let passkey = entry.number else { continue }
                devices[address] = .passkey(passkey)
            }
        }
        policy = AgentPolicy(devices: devices)
        makeDefault = config.bluetooth.defaultAgent
    }

    /// Registered only when some device pairs, or when asked to be the default agent: an agent that would refuse
    /// everything has no business in bluetoothd's list.
    var wanted: Bool { !policy.devices.isEmpty || makeDefault }

    var capability: String { policy.capability }
}

/// The registration state, one call at a time.
actor AgentRegistrar {
    let bus: any AgentBus
    let agent: PairingAgent
    let logger: Logger
    let readiness: AgentReadiness
    private var desired: AgentRegistration?
    /// What bluetoothd has now (nil: nothing registered).
    private var registered: (capability: String, makeDefault: Bool)? {
        didSet { readiness.set(capability: registered?.capability) }
    }

    init(bus: any AgentBus, agent: PairingAgent, logger: Logger, readiness: AgentReadiness = AgentReadiness()) {
        self.bus = bus
        self.agent = agent
        self.logger = logger
        self.readiness = readiness
    }

    func apply(_ config: BridgeConfig) async {
        let registration = AgentRegistration(config)
        desired = registration
        agent.policy = registration.policy
        await reconcile()
    }

    func bluezAppeared() async {
        registered = nil
        await reconcile()
    }

    /// Registers if an earlier attempt failed; a no-op when registered.
    func retry() async {
        await reconcile()
    }

    private func reconcile() async {
        guard let desired else { return }
        let target = desired.wanted ? (capability: desired.capability, makeDefault: desired.makeDefault) : nil
        if let registered, let target, registered == target { return }
        if registered == nil && target == nil { return }
        if registered != nil {
            do throws(BlueZError) {
                try await bus.unregisterAgent(path: agent.path)
            } catch {
                logger.warning("cannot unregister the pairing agent: \(error)")
            }
            registered = nil
        }
        guard let target else {
            logger.info("pairing agent unregistered (no device pairs)")
            return
        }
        guard await bus.isAvailable else { return }      // registered when bluetoothd appears
        do throws(BlueZError) {
            try await bus.registerAgent(path: agent.path, capability: target.capability, makeDefault: target.makeDefault)
            registered = target
            logger.info("pairing agent registered", metadata: [
                "capability": "\(target.capability)", "default": "\(target.makeDefault)",
                "devices": "\(desired.policy.devices.count)"])
        } catch .alreadyExists {
            // A registration that overlapped this one (an adapter appeared meanwhile) got there first.
            registered = target
        } catch {
            logger.warning("cannot register the pairing agent with bluetoothd: \(error)")
        }
    }
}
