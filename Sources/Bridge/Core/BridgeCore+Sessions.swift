import BlueZ
import Bluetooth
import Config
import MQTT

/// The sessions' side of the core: starting one (its environment and what its reports become), what features ask
/// of them (republish, fleet ownership and holds), and the BlueZ facts they are told.
extension BridgeCore {
    func startSession(_ device: DeviceConfig, bluezAvailable: Bool) async {
        // A passive device never connects (docs/adverts.md): the adverts feature speaks for it.
        guard !device.isPassive else {
            passiveSightings.keep(Set(config.devices.filter(\.isPassive).map(\.name)))
            passiveSightings.restart(device.name)
            await run(machine.handle(.sessionStarted(device: device.name)))
            return
        }
        let host = self.host, store = self.store, router = self.router, sink = self.sink
        let holder = HoldingPublisher(link)
        holders[device.name] = holder
        let environment = SessionEnvironment(
            gatt: bluez, gate: gate, discovery: device.adapter == nil ? anyDiscovery : discovery, publisher: holder,
            topics: topics, logger: logger,
            agentReady: { [agentReadiness] needsKeyboard, limit in
                await agentReadiness?.wait(needsKeyboard: needsKeyboard, within: limit) ?? true
            },
            report: { report in
                switch report {
                case .availability(let online):
                    store.update { $0.setOnline(device.name, online) }
                    host.emit(.availability(device, online: online))
                    sink.yield(.adapter(.availability(device: device.name, online: online)))
                case .rssi(let rssi):
                    let fleet = router.fleet
                    if fleet.isFleet { host.emit(.sighting(device, rssi)) }
                    if fleet.owns(device.name) {
                        store.update { $0.updateDevice(device.name) { $0.rssi = rssi; $0.lastSeen = .now } }
                        host.emit(.rssi(device, rssi))
                    }
                case .event(let event):
                    switch event {
                    case .disconnected, .error: store.update { $0.updateDevice(device.name) { $0.link = .offline } }
                    case .connected, .reconnectAttempt: break
                    }
                    host.emit(.deviceEvent(device, event))
                case .rejected(let rejection): host.emit(.rejected(rejection))
                case .completed(let command): host.emit(.completed(command))
                case .identified(let identity):
                    store.update { $0.updateDevice(device.name) { $0.identity = identity } }
                    host.emit(.identified(device, identity))
                case .released: host.emit(.released(device))
                case .unseen: if router.fleet.isFleet { host.emit(.sighting(device, nil)) }
                case .adapterOperation(let adapter, let error):
                    sink.yield(.adapter(.operation(adapterPath: adapter, error: error)))
                }
            })
        let session = DeviceSession(config: device, environment: environment, adapter: initialAdapter(for: device),
                                    bluezAvailable: bluezAvailable, owned: machine.fleet.owns(device.name))
        sessions[device.name] = session
        byAddress[device.address] = session
        spawner.yield(session)
        await run(machine.handle(.sessionStarted(device: device.name)))
        // Fleet: a session that starts without the device (a reload replaced the one that was releasing it, and
        // stopped it disconnected) will never confirm that release; it is confirmed here, so the handover ends.
        if machine.fleet.isFleet && !machine.fleet.owns(device.name) { host.emit(.released(device)) }
    }

    func perform(_ request: CoreRequest) async {
        switch request {
        case .republish(let states):
            for session in sessions.values { session.send(.republish(states: states)) }
        case .availability(let name, let online):
            guard let device = config.devices.first(where: { $0.name == name }), device.isPassive else { break }
            store.update { $0.setOnline(name, online) }
            host.emit(.availability(device, online: online))
        case .hold(let name, let held):
            await run(machine.handle(.hold(device: name, held: held,
                                           known: sessions[name] != nil && holders[name] != nil)))
        case .ownership(let name, let owned):
            await run(machine.handle(.ownership(device: name, owned: owned, running: sessions[name] != nil)))
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

    // MARK: - BlueZ events

    func bluezEvent(_ event: BlueZEvent) async {
        switch event {
        case .bluezVanished:
            logger.warning("bluetoothd left the bus; waiting for it to return")
            placement.bluezGone()
            store.update { $0.bluezAvailable = false }
            for session in sessions.values { session.send(.bluez(available: false)) }
            publishAdapters()
        case .bluezAppeared:
            logger.notice("bluetoothd is on the bus; resyncing")
            store.update { $0.bluezAvailable = true }
            for session in sessions.values { session.send(.bluez(available: true)) }
            await adaptersChanged()
            discovery.reset()
        case .adapterAdded, .adapterRemoved, .adapterChanged:
            await adaptersChanged()
        case .deviceAdded(let info):
            byAddress[info.address]?.send(.device(event))
            noteSighting(info)
            heard(info, changed: nil)
        case .deviceChanged(let info, let changed):
            byAddress[info.address]?.send(.device(event))
            if changed.contains("RSSI") { noteSighting(info) }
            heard(info, changed: changed)
        case .deviceRemoved(let path, let address):
            byAddress[address]?.send(.device(event))
            let adapter = Self.adapterPath(ofDevice: path)
            adapterSet.lostSight(address, adapter: Self.name(ofAdapter: adapter))
            if machine.fleet.isFleet, adapterSet.uses(adapterPath: adapter), let device = passiveDevice(address),
               let tell = passiveSightings.lost(device.name, adapter: adapter, now: .now) {
                tellSighting(device, tell)
            }
        case .deviceDisconnected, .gattAdded, .gattRemoved:
            break
        }
    }

    /// Passive (docs/adverts.md): what an adapter heard goes to the adverts feature; a passive device's RSSI is the
    /// fleet's sighting, as a session's is for a connected device. Only the adapters the config uses count: with
    /// another adapter's reports, every bridge of a fleet on one host would claim with the best RSSI of them all.
    private func heard(_ info: DeviceInfo, changed: Set<String>?) {
        guard config.adverts.enabled, adapterSet.uses(adapterPath: info.adapterPath) else { return }
        if let changed, changed.isDisjoint(with: Self.broadcastProperties) { return }
        if let broadcast = HeardBroadcast(info) { host.emit(.broadcast(broadcast)) }
        if let device = passiveDevice(info.address) {
            store.update { $0.updateDevice(device.name) { $0.rssi = info.rssi ?? $0.rssi; $0.lastSeen = .now } }
        }
        if machine.fleet.isFleet, let rssi = info.rssi, let device = passiveDevice(info.address),
           let tell = passiveSightings.report(device.name, adapter: info.adapterPath, rssi: rssi, now: .now) {
            tellSighting(device, tell)
        }
    }

    private func tellSighting(_ device: DeviceConfig, _ tell: PassiveSightings.Tell) {
        switch tell {
        case .rssi(let rssi): host.emit(.sighting(device, rssi))
        case .unseen: host.emit(.sighting(device, nil))
        }
    }

    static let broadcastProperties: Set<String> = ["ServiceData", "ManufacturerData", "RSSI"]

    private func passiveDevice(_ address: BluetoothAddress) -> DeviceConfig? {
        config.devices.first { $0.address == address && $0.isPassive }
    }
}
