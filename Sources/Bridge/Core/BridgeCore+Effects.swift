import BlueZ
import BridgeModel
import Config
import Logging

/// The interpreter: carries out `CoreMachine`'s actions, in order, without awaiting. Work that takes time (stopping
/// sessions, reading adapters, a recovery step, a timer) goes to `CoreJobs`, whose results come back as inputs.
extension BridgeCore {
    func run(_ actions: [CoreMachine.Action]) {
        // The router sees the machine's fleet view first: a command replayed below must not find its device still
        // held in the router's table.
        if router.fleet != machine.fleet { publishRoutes() }
        for action in actions {
            switch action {
            case .stop(let id, let devices):
                let leaving = devices.compactMap { sessions.remove($0) }
                publishRoutes()     // their commands are refused from now on
                jobs.stop(leaving, change: id)
            case .install(let old, let new, let diff, _, let fleetBefore):
                install(old: old, new: new, diff: diff, fleetBefore: fleetBefore)
            case .start(let device, let adapter, let owned, let available):
                startSession(device, adapter: adapter, owned: owned, bluezAvailable: available)
            case .applied(let old, let new, let diff, let mqttReplaced):
                applied(old: old, new: new, diff: diff, mqttReplaced: mqttReplaced)
            case .finished(let id, let result):
                replies.answer(id, result)
            case .holdValues(let device):
                _ = sessions.holders[device]?.hold()
            case .releaseValues(let device, let deliver):
                sessions.holders[device]?.release(deliver: deliver)
            case .announceHeld(let device, let held):
                if let session = sessions[device] { host.emit(.held(session.config, held)) }
            case .replay(let messages):
                for message in messages { router.route(message) }
            case .ownershipChanged(let device, let owned):
                guard let session = sessions[device] else { break }
                session.send(.machine(.ownership(owned)))
                announceOwnership(session.config)
            case .announceOwnership(let device):
                if let device = config.devices.first(where: { $0.name == device }) { announceOwnership(device) }
            case .released(let device):
                host.emit(.released(device))
            default:
                adapterEffect(action)
            }
        }
    }

    /// The adapters' and BlueZ's actions (CoreMachine+Adapters, CoreMachine+BlueZ).
    private func adapterEffect(_ action: CoreMachine.Action) {
        switch action {
        case .readAdapters:
            jobs.readAdapters()
        case .sessionAdapter(let device, let info):
            sessions[device]?.send(.adapter(info))
        case .sessionDevice(let address, let event):
            sessions.byAddress[address]?.send(.device(event))
        case .bluezAvailable(let available):
            store.update { $0.bluezAvailable = available }
            for session in sessions.all { session.send(.bluez(available: available)) }
        case .discovery(let effect):
            switch effect {
            case .reset: discovery.reset()
            case .reportRepeats(let on): discovery.reportRepeats(on)
            case .want(let path): discovery.want(AdapterMachine.broadcastScanner, adapter: path)
            case .release(let path): discovery.release(AdapterMachine.broadcastScanner, adapter: path)
            case .anyAdapters(let adapters): factory.anyDiscovery.setAdapters(adapters)
            }
        case .arm(let adapter, let instant):
            jobs.wake(adapter, at: instant)
        case .runStep(let step, let adapter, let path):
            jobs.recover(step, adapter: adapter, path: path)
        case .adapters(let statuses, let placed):
            store.update { $0.placed(statuses, placement: placed) }
            host.emit(.adapters(statuses, placement: placed))
        case .room(let device, let room):
            host.emit(.room(device, room))
        case .adapterRecovery(let adapter, let step, let ok):
            host.emit(.adapterRecovery(adapter: adapter, step: step, ok: ok))
        case .broadcast(let broadcast):
            host.emit(.broadcast(broadcast))
        case .advertisement(let advertisement):
            host.emit(.advertisement(advertisement))
        case .link(let address, let adapter, let connected):
            host.emit(.link(address: address, adapter: adapter, connected: connected))
        case .unheard(let address):
            host.emit(.unheard(address))
        case .passiveHeard(let device, let rssi):
            store.update { $0.updateDevice(device) { $0.rssi = rssi ?? $0.rssi; $0.lastSeen = .now } }
        case .sighting(let device, let rssi):
            host.emit(.sighting(device, rssi))
        case .log(let level, let message, let device):
            logger.log(level: level, "\(message)", metadata: device.map { ["device": "\($0)"] })
        default:
            break
        }
    }

    /// A new config is the machine's: clean up after the devices that left, and tell the sessions when the bridge
    /// joined or left a fleet. Sessions start next (`.start`), then `applied`.
    private func install(old: BridgeConfig, new: BridgeConfig, diff: ConfigDiff, fleetBefore: FleetView) {
        let oldTopics = BridgeTopics(settings: old.mqtt)
        for device in diff.leaving {
            sessions.forget(device.name)
            logger.notice("device \(device.name) stopped (removed or changed)")
            // Fleet: the retained topics of a device another bridge owns are that bridge's (docs/fleet.md).
            guard fleetBefore.owns(device.name) else { continue }
            for channel in device.channels where channel.retain {
                link.publish(oldTopics.state(device, channel), "", qos: 1, retain: true)
            }
            host.emit(.deviceRemoved(device, topics: oldTopics))
        }
        if fleetBefore.isFleet != machine.fleet.isFleet {
            // Joining a fleet gives every device up until the fleet says otherwise; leaving takes them all.
            for session in sessions.all { session.send(.machine(.ownership(new.fleet == nil))) }
        }
        store.update { state in
            state.install(new, generation: machine.generation)
            state.fleet(machine.fleet)
        }
    }

    /// The config runs: the routes, the subscriptions and the bridge's state topic follow it; the features hear it.
    private func applied(old: BridgeConfig?, new: BridgeConfig, diff: ConfigDiff?, mqttReplaced: Bool) {
        publishRoutes()
        guard let old, let diff else {
            subscribeCommands()
            host.emit(.configApplied(old: nil, new: new))
            return
        }
        let oldTopics = BridgeTopics(settings: old.mqtt)
        // A new client gets its subscriptions from `clientReplaced`; an unchanged one keeps them (subscribing again
        // would replay retained messages).
        if diff.baseChanged && !mqttReplaced {
            for filter in oldTopics.commandFilters { link.unsubscribe(filter) }
            subscribeCommands()
        }
        if diff.bridgeStateMoved {
            link.publish(oldTopics.bridgeState, "", qos: 1, retain: true)
            link.publish(topics.bridgeState, "online", qos: 1, retain: true)
        }
        host.emit(.configApplied(old: old, new: new))
    }
}
