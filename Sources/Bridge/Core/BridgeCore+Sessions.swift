import BlueZ
import Bluetooth
import BridgeFeatureHost
import Config
import MQTT

/// The sessions' side of the core: starting one (`SessionFactory`), and what features ask of them (republish, fleet
/// ownership and holds).
extension BridgeCore {
    func startSession(_ device: DeviceConfig, adapter: AdapterInfo?, owned: Bool, bluezAvailable: Bool) {
        let (session, holder) = factory.make(device, topics: topics, adapter: adapter, owned: owned,
                                             bluezAvailable: bluezAvailable)
        sessions.add(session, holder: holder)
        spawner.yield(session)
    }

    func perform(_ request: CoreRequest) {
        switch request {
        case .republish(let states):
            for session in sessions.all { session.send(.republish(states: states)) }
        case .availability(let name, let online):
            guard let device = config.devices.first(where: { $0.name == name }), device.isPassive else { break }
            store.update { $0.setOnline(name, online) }
            host.emit(.availability(device, online: online))
        case .hold(let name, let held):
            run(machine.handle(.hold(device: name, held: held, known: sessions[name] != nil)))
        case .ownership(let name, let owned):
            run(machine.handle(.ownership(device: name, owned: owned, running: sessions[name] != nil)))
        case .externalLinks(let counts):
            run(machine.handle(.adapter(.external(counts))))
        }
    }

    /// Fleet: says in the log and to the features whether this bridge owns the device now. A passive device has no
    /// connection to take or drop, so its release is done as soon as it is decided (a session confirms its own).
    func announceOwnership(_ device: DeviceConfig) {
        let owned = machine.fleet.owns(device.name)
        logger.notice("\(owned ? "owning" : "giving up") device \(device.name)")
        host.emit(.ownership(device, owned: owned))
        if !owned && device.isPassive { host.emit(.released(device)) }
    }

    /// A command that found its device held: kept until the hold ends (bounded), or routed again if it has already.
    func holdCommand(_ message: MQTTMessage, device: String) {
        let outcome = machine.holdCommand(message, device: device)
        if !outcome.held {
            router.route(message)
        } else if !outcome.accepted {
            router.reject(message, "device \(device): too many commands while its ownership is being confirmed")
        }
    }
}
