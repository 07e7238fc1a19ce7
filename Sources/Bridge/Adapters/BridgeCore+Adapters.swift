import BlueZ
import Bluetooth
import Config
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// What the adapter side of the core reacts to: session reports, discovery results, its own timers and recovery
/// steps. Posted to the core's inbox (`CoreInput.adapter`).
enum AdapterInput: Sendable {
    /// A Connect or StartDiscovery through the adapter (its object path) finished; `error` nil when it worked.
    case operation(adapterPath: String, error: String?)
    case availability(device: String, online: Bool)
    case tick(adapter: String)
    case stepFinished(adapter: String, AdapterHealthMachine.Step, ok: Bool, error: String?)
}

/// Several adapters (docs/adapters.md): the core places each device on an adapter (`AdapterSet`, `AdapterChoice`), tells its
/// session through the same `.adapter(...)` input a single-adapter bridge used, watches each adapter's health
/// (`AdapterHealthMachine`) and runs the recovery steps it asks for.
extension BridgeCore {
    /// The wedge rule's window: 60 s (docs/adapters.md). `GATTBRIDGE_WEDGE_WINDOW` (seconds) shortens it for the bench.
    public static func wedgeWindow(_ text: String? = getenv("GATTBRIDGE_WEDGE_WINDOW").map { String(cString: $0) }) -> Duration {
        if let text, let seconds = Double(text), seconds > 0, seconds <= 600 {
            return .milliseconds(Int64(seconds * 1000))
        }
        return .seconds(60)
    }

    /// Forwards discovery results to the inbox, and runs the timers, recovery steps and session stops the loop hands
    /// it, until `shutdown()` finishes the job stream; then cancels what still waits.
    func adapterLoops() async {
        let jobs = adapterJobs.stream, outcomes = discovery.outcomes, sink = self.sink
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await outcome in outcomes {
                    sink.yield(.adapter(.operation(adapterPath: outcome.adapter, error: outcome.error)))
                }
            }
            for await job in jobs { group.addTask(operation: job) }
            group.cancelAll()
        }
    }

    func finishAdapterLoops() {
        adapterJobs.continuation.finish()
    }

    // MARK: - Placement

    /// BlueZ's adapters appeared, went or changed: refresh, re-place, tell sessions, republish.
    func adaptersChanged() async {
        let before = adapterSet.present
        adapterSet.update(await bluez.adapters())
        for (name, adapter) in adapterSet.present where before[name]?.powered != adapter.powered || before[name] == nil {
            logger.notice("adapter \(name) \(before[name] == nil ? "present, " : "")powered \(adapter.powered)")
        }
        for name in before.keys where adapterSet.present[name] == nil {
            logger.notice("adapter \(name) gone")
        }
        let poweredOn = adapterSet.present.contains { name, adapter in adapter.powered && before[name]?.powered != true }
        placeDevices()
        if poweredOn { discovery.reset() }
    }

    /// Places every device and tells whoever must hear of a change (`Placement`).
    func placeDevices() {
        tell(placement.place(connecting, sessions: sessions.keys, fleet: machine.fleet.isFleet,
                             listeningOnly: listeningOnly))
        anyDiscovery.setAdapters(adapterSet.listening)
        scanForBroadcasts()
    }

    /// The devices that take a connection (a passive one never does).
    var connecting: [DeviceConfig] { config.devices.filter { !$0.isPassive } }

    /// Passive broadcasts (docs/adverts.md): while `adverts.enabled`, discovery stays on every powered adapter,
    /// reporting every advertisement; the sessions' own discovery requests come and go beside it.
    func scanForBroadcasts() {
        let enabled = config.adverts.enabled
        let wanted: Set<String> = enabled ? Set(adapterSet.present.values.filter(\.powered).map(\.path)) : []
        if enabled != broadcastScan.repeats {
            discovery.reportRepeats(enabled)
            broadcastScan.repeats = enabled
        }
        for path in wanted.subtracting(broadcastScan.adapters) { discovery.want(Self.broadcastScanner, adapter: path) }
        for path in broadcastScan.adapters.subtracting(wanted) { discovery.release(Self.broadcastScanner, adapter: path) }
        broadcastScan.adapters = wanted
    }

    /// The discovery interest of the broadcast scan: not a device name (those never hold a NUL).
    static let broadcastScanner = "\u{0}adverts"

    func tell(_ notices: [Placement.Notice]) {
        for notice in notices {
            switch notice {
            case .moved(let name, let to):
                logger.info("device placed on adapter \(to ?? "none")", metadata: ["device": "\(name)"])
            case .adapter(let name, let info):
                sessions[name]?.send(.adapter(info))
            case .room(let name, let room):
                if let device = config.devices.first(where: { $0.name == name }) { host.emit(.room(device, room)) }
            case .adapters(let statuses, let placed):
                store.update { $0.placed(statuses, placement: placed) }
                host.emit(.adapters(statuses, placement: placed))
            }
        }
    }

    /// In a fleet, the devices this bridge does not own: they listen, they do not connect (`AdapterSet.place`).
    var listeningOnly: Set<String> {
        guard machine.fleet.isFleet else { return [] }
        return Set(config.devices.map(\.name).filter { !machine.fleet.owns($0) })
    }

    /// Where a new session starts; remembered as told.
    func initialAdapter(for device: DeviceConfig) -> AdapterInfo? {
        placement.initialAdapter(for: device.name, connecting, listeningOnly: listeningOnly)
    }

    /// A device object under some adapter appeared or changed: that adapter sees the device.
    /// Also proof that the adapter's radio receives: it counts as a working operation for its health.
    func noteSighting(_ info: DeviceInfo) {
        let adapter = Self.name(ofAdapter: info.adapterPath)
        adapterSet.saw(info.address, adapter: adapter, rssi: info.rssi, at: .now)
        feed(adapter, .operationSucceeded)
        guard let device = config.devices.first(where: { $0.address == info.address }),
              !adapterSet.online.contains(device.name), device.adapter == nil else { return }
        placeDevices()
    }

    /// "/org/bluez/hci0" of "/org/bluez/hci0/dev_…".
    static func adapterPath(ofDevice path: String) -> String {
        let components = path.split(separator: "/")
        return "/" + components.prefix { !$0.hasPrefix("dev_") }.joined(separator: "/")
    }

    static func name(ofAdapter path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    // MARK: - Health

    func adapterInput(_ input: AdapterInput) {
        switch input {
        case .operation(let path, let error):
            let name = Self.name(ofAdapter: path)
            feed(name, error.map { .operationFailed($0) } ?? .operationSucceeded)
        case .availability(let device, let online):
            adapterSet.setOnline(device, online)
            if let adapter = adapterSet.placed[device] { feed(adapter, .tick) }
            if !online { placeDevices() } else { publishAdapters() }
        case .tick(let adapter):
            if let armed = armedWakes[adapter], armed <= .now { armedWakes[adapter] = nil }
            feed(adapter, .tick)
        case .stepFinished(let adapter, let step, let ok, let error):
            feed(adapter, .stepFinished(step, ok: ok, error: error))
        }
    }

    func feed(_ adapter: String, _ input: AdapterHealthMachine.Input) {
        let before = adapterSet.health[adapter]?.state
        let actions = adapterSet.feed(adapter, input, now: .now)
        var changed = false
        for action in actions {
            switch action {
            case .run(let step): runStep(step, adapter: adapter)
            case .announce(let step, let ok):
                let message = "adapter \(adapter) recovery step \(step.rawValue): \(ok ? "ok" : "failed")"
                if ok { logger.notice("\(message)") } else { logger.warning("\(message)") }
                host.emit(.adapterRecovery(adapter: adapter, step: step.rawValue, ok: ok))
            case .wake(let at): arm(adapter, at: at)
            case .changed: changed = true
            }
        }
        if changed {
            if let state = adapterSet.health[adapter]?.state, state != before {
                logger.notice("adapter \(adapter) state \(state.rawValue)")
            }
            placeDevices()      // health decides where `any` devices go
        }
    }

    private func arm(_ adapter: String, at instant: ContinuousClock.Instant) {
        if let armed = armedWakes[adapter], armed <= instant { return }
        armedWakes[adapter] = instant
        let sink = self.sink
        adapterJobs.continuation.yield {
            try? await Task.sleep(until: instant, clock: .continuous)
            if !Task.isCancelled { sink.yield(.adapter(.tick(adapter: adapter))) }
        }
    }

    private func runStep(_ step: AdapterHealthMachine.Step, adapter: String) {
        guard let path = adapterSet.present[adapter]?.path else {
            sink.yield(.adapter(.stepFinished(adapter: adapter, step, ok: false, error: "adapter gone")))
            return
        }
        logger.warning("adapter \(adapter) wedged; recovery step \(step.rawValue)")
        let sink = self.sink, bluez = self.bluez, discovery = self.discovery
        adapterJobs.continuation.yield {
            var error: String?
            switch step {
            case .restartDiscovery:
                error = await discovery.restart(adapter: path)
            case .powerCycle:
                do throws(BlueZError) {
                    try await bluez.setPowered(false, adapter: path, timeout: .seconds(10))
                    try await bluez.setPowered(true, adapter: path, timeout: .seconds(10))
                } catch let failure {
                    error = "power cycle: \(failure)"
                }
            }
            sink.yield(.adapter(.stepFinished(adapter: adapter, step, ok: error == nil, error: error)))
        }
    }

    /// Tells the features when the adapter list (or where devices are) changed.
    func publishAdapters() {
        tell(placement.adapterList())
    }
}
