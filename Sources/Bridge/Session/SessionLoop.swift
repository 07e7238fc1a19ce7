import BlueZ
import Bluetooth
import BridgeChannels
import BridgeModel
import Codecs
import Config
import Logging

/// The state of one device session, touched only by `DeviceSession.run()`: it feeds inputs to the `SessionMachine`
/// and the `CommandScheduler` and turns their decisions into jobs (child tasks) whose results come back as inputs.
struct SessionLoop {
    let config: DeviceConfig
    let env: SessionEnvironment
    let inbox: AsyncStream<SessionInput>.Continuation
    let cleanupQueue: AsyncStream<(UInt64, Job)>.Continuation
    var logger: Logger
    var machine: SessionMachine
    var scheduler = CommandScheduler()
    let publishers: [String: ChannelPublisher]
    let channels: [String: ChannelConfig]
    /// The jobs this loop hands to child tasks (`SessionWork`).
    let work: SessionWork

    private(set) var isFinished = false
    var adapterPath: String?
    /// Counts adapter facts, so the lookup of an older one cannot apply after a newer one.
    var adapterSequence: UInt64 = 0
    /// Characteristics of the configured channels, found when services resolved (channel name → characteristic).
    var resolved: [String: GattCharacteristicInfo] = [:]
    var subscriptions: [ActiveSubscription] = []
    var lastRSSI: Int?
    var identity: DeviceIdentity?
    var nextCommandID: UInt64 = 0
    /// Bumped whenever polling stops, so a poll timer of an earlier online period is ignored when it fires.
    var pollEpoch = 0
    /// The expiry timer armed for the earliest command deadline, so a flood of commands arms one timer, not many.
    var armedExpiry: ContinuousClock.Instant?
    /// A Connect or device lookup waits for every Disconnect/RemoveDevice asked for before it.
    var cleanups = CleanupOrder()
    /// Only in the final stop: the session ends once the cleanups asked for so far are done.
    var stopping = false

    init(config: DeviceConfig, environment: SessionEnvironment, publishers: [String: ChannelPublisher],
         inbox: AsyncStream<SessionInput>.Continuation, cleanups: AsyncStream<(UInt64, Job)>.Continuation) {
        self.config = config
        self.env = environment
        self.inbox = inbox
        self.cleanupQueue = cleanups
        self.logger = Self.logger(config, environment)
        self.work = SessionWork(config: config, env: environment, inbox: inbox, logger: logger)
        self.machine = SessionMachine(policy: environment.policy, pairing: config.pairing.mode != .none,
                                      jitter: environment.jitter)
        self.publishers = publishers
        self.channels = Dictionary(config.channels.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    static func logger(_ config: DeviceConfig, _ environment: SessionEnvironment) -> Logger {
        var logger = environment.logger
        logger[metadataKey: "device"] = "\(config.name)"
        return logger
    }

    /// One per channel, made with the session: the loop publishes through them, the read model reads their last
    /// values (`DeviceSession.latestValues`).
    static func publishers(_ config: DeviceConfig, _ environment: SessionEnvironment) -> [String: ChannelPublisher] {
        let logger = logger(config, environment)
        var publishers: [String: ChannelPublisher] = [:]
        for channel in config.channels {
            publishers[channel.name] = ChannelPublisher(channel: channel, topic: environment.topics.state(config, channel),
                                                        publisher: environment.publisher, logger: logger)
        }
        return publishers
    }

    var devicePath: String? {
        if let reportedPath, let adapterPath, reportedPath.hasPrefix(adapterPath + "/") { return reportedPath }
        return adapterPath.map { ObjectPath.device(adapter: $0, address: config.address) }
    }
    /// The object BlueZ reported for the device's address. Usually the path the address gives, but a device bonded
    /// while it used a resolvable private address keeps that object (named after the private address) with its
    /// `Address` changed to the identity address the config holds, until bluetoothd restarts (docs/pairing.md).
    var reportedPath: String?

    // MARK: - Inputs

    mutating func handle(_ input: SessionInput) -> [Job] {
        var jobs: [Job] = []
        switch input {
        case .machine(let event):
            drive(event, &jobs)
        case .adapter(let adapter):
            adapterChanged(adapter, &jobs)
        case .adapterLooked(let known, let adapter, let sequence):
            // Lookups run concurrently; only the latest adapter fact counts (powered off then on must end on).
            guard sequence == adapterSequence else { break }
            if let known {
                reportedPath = known.path
                drive(.paired(known.paired), &jobs)
                drive(.deviceFound, &jobs)
                // A device BlueZ already knows sends no DeviceAdded: its RSSI comes from here.
                noteRSSI(known.rssi)
            }
            drive(.adapterAvailable(powered: adapter.powered), &jobs)
        case .bluez(let available):
            drive(available ? .bluezAvailable : .bluezGone, &jobs)
        case .device(let event):
            deviceEvent(event, &jobs)
        case .command(let request):
            command(request, &jobs)
        case .republish(let states):
            guard machine.connectAllowed else { break }    // fleet: the owner speaks for the device
            env.report(.availability(machine.isOnline))
            if let lastRSSI { env.report(.rssi(lastRSSI)) }
            if states { for publisher in publishers.values { publisher.republish() } }
        case .stop:
            stop(&jobs)
        case .foundIfStill(let generation):
            if machine.generation == generation { drive(.deviceFound, &jobs) }
        case .resolved(let tree, let generation):
            resolved(tree, generation, &jobs)
        case .subscribed(let list, let generation):
            subscribed(list, generation, &jobs)
        case .subscriptionEnded(let generation, let channel):
            if machine.generation == generation, machine.isOnline {
                drive(.failure(.subscribeFailed("notifications of \(channel) stopped"), generation), &jobs)
            }
        case .cleanupDone(let ticket):
            jobs += cleanups.done(ticket)
            if stopping && cleanups.allDone { isFinished = true }
        case .commandFinished(let id, let outcome):
            report(scheduler.finish(id, outcome))
            pumpCommands(&jobs)
        case .pollDue(let channel, let epoch):
            guard epoch == pollEpoch, machine.isOnline, let config = channels[channel],
                  let job = readJob(config) else { break }
            let inbox = self.inbox
            jobs.append {
                await job()
                inbox.yield(.pollFinished(channel: channel, epoch: epoch))
            }
        case .pollFinished(let channel, let epoch):
            guard epoch == pollEpoch, machine.isOnline, let config = channels[channel] else { break }
            jobs.append(work.pollTimer(config, epoch: epoch))
        case .expiryDue:
            armedExpiry = nil
            pumpCommands(&jobs)
        case .identified(let identity):
            guard self.identity != identity else { break }
            self.identity = identity
            env.report(.identified(identity))
        }
        return jobs
    }

    mutating func stop(_ jobs: inout [Job]) {
        drive(.stop, &jobs)
        report(scheduler.drain(reason: "device \(config.name) was removed or the bridge is stopping; command dropped"))
        for publisher in publishers.values { publisher.flush() }
        stopping = true
        if cleanups.allDone { isFinished = true }
    }

    mutating func adapterChanged(_ adapter: AdapterInfo?, _ jobs: inout [Job]) {
        adapterSequence += 1
        guard let adapter else {
            drive(.adapterGone, &jobs)      // with the old path still set, so its discovery is released
            adapterPath = nil
            return
        }
        // Moved to another adapter (docs/adapters.md failover): end what runs on the old one, then start over on the new.
        if let adapterPath, adapterPath != adapter.path {
            drive(.adapterGone, &jobs)
            // A Connect still pending through the old adapter would leave a second link: cancel it there first.
            let gatt = env.gatt, old = ObjectPath.device(adapter: adapterPath, address: config.address)
            cleanup { try? await gatt.disconnect(device: old, timeout: .seconds(3)) }
        }
        adapterPath = adapter.path
        // The device's presence is looked up first, so it is known before the power state is applied.
        jobs.append(work.lookUp(adapter: adapter, sequence: adapterSequence))
    }

    mutating func deviceEvent(_ event: BlueZEvent, _ jobs: inout [Job]) {
        switch event {
        case .deviceAdded(let info) where info.adapterPath == adapterPath:
            logger.debug("found by BlueZ", metadata: ["rssi": "\(info.rssi.map(String.init) ?? "none")"])
            reportedPath = info.path
            drive(.paired(info.paired), &jobs)
            drive(.deviceFound, &jobs)
            if info.connected { drive(.connected, &jobs) }
            noteRSSI(info.rssi)
        case .deviceRemoved(let path, _) where path == devicePath:
            reportedPath = nil
            drive(.deviceGone, &jobs)
            if lastRSSI != nil {
                // Fleet: no longer a sighting. The next DeviceAdded is a new one, even with the same RSSI (a fixed
                // value, as BlueZoo's, or a radio that reports whole steps).
                lastRSSI = nil
                env.report(.unseen)
            }
        case .deviceChanged(let info, let changed) where info.adapterPath == adapterPath:
            reportedPath = info.path
            if changed.contains("Paired") { drive(.paired(info.paired), &jobs) }
            if changed.contains("Connected") { drive(info.connected ? .connected : .disconnected, &jobs) }
            if changed.contains("RSSI") { noteRSSI(info.rssi) }
        default:
            break
        }
    }

    mutating func noteRSSI(_ rssi: Int?) {
        guard let rssi, rssi != lastRSSI else { return }
        lastRSSI = rssi
        env.report(.rssi(rssi))
    }

    // MARK: - The machine's actions

    mutating func drive(_ event: SessionEvent, _ jobs: inout [Job]) {
        for action in machine.handle(event) { perform(action, &jobs) }
        if machine.state != .subscribing && machine.state != .online { dropSubscriptions(&jobs) }
    }

    mutating func perform(_ action: SessionAction, _ jobs: inout [Job]) {
        let gatt = env.gatt
        switch action {
        case .startDiscovery:
            guard let adapterPath else { return }
            env.discovery.want(config.name, adapter: adapterPath)
            afterCleanups(&jobs, work.findIfKnown(adapter: adapterPath, generation: machine.generation))
        case .stopDiscovery:
            if let adapterPath { env.discovery.release(config.name, adapter: adapterPath) }
        case .requestConnectSlot(let generation):
            jobs.append(work.acquireSlot(gateKey(generation), lane: adapterPath ?? "", generation: generation))
        case .releaseConnectSlot(let generation):
            jobs.append(work.releaseSlot(gateKey(generation)))
        case .connect(let generation, let timeout):
            guard let path = devicePath else {
                drive(.failure(.adapterMissing, generation), &jobs)
                return
            }
            logger.debug("connecting")
            afterCleanups(&jobs, work.connect(path, adapter: adapterPath ?? "", generation: generation, timeout: timeout))
        case .pair(let generation, let timeout):
            guard let path = devicePath else {
                drive(.failure(.adapterMissing, generation), &jobs)
                return
            }
            logger.info("pairing (pairing: \(config.pairing.mode.rawValue))")
            afterCleanups(&jobs, work.pair(path, generation: generation, timeout: timeout))
        case .disconnect:
            guard let path = devicePath else { return }
            cleanup { try? await gatt.disconnect(device: path, timeout: .seconds(3)) }
        case .removeDevice:
            guard let path = devicePath else { return }
            cleanup { try? await gatt.removeDevice(path) }
        case .resolveServices(let generation, let timeout):
            guard let path = devicePath else { return }
            jobs.append(work.resolve(path, generation: generation, timeout: timeout))
        case .subscribeChannels(let generation):
            jobs.append(subscribeJob(generation))
        case .readChannelsOnce:
            for channel in config.channels where resolved[channel.name] != nil && mode(of: channel) == .read {
                if let job = readJob(channel) { jobs.append(job) }
            }
        case .startPolling:
            pollEpoch += 1
            for channel in config.channels where resolved[channel.name] != nil && mode(of: channel) == .read {
                jobs.append(work.pollTimer(channel, epoch: pollEpoch))
            }
        case .stopPolling:
            pollEpoch += 1
        case .publishAvailability(let online):
            logger.info("availability \(online ? "online" : "offline")")
            env.report(.availability(online))
        case .scheduleBackoff(let delay, let generation):
            jobs.append(work.backoff(delay, generation: generation))
        case .cancelBackoff:
            break       // the timer's generation is stale now: its firing is ignored
        case .emitEvent(let event):
            env.report(.event(event))
        case .confirmRelease:
            let report = env.report
            afterCleanups(&jobs) { report(.released) }
        case .flushPendingCommands:
            scheduler.linkUp()
            pumpCommands(&jobs)
        }
    }

    /// Queues a Disconnect or RemoveDevice behind the ones asked for before.
    mutating func cleanup(_ work: @escaping Job) {
        cleanupQueue.yield((cleanups.ask(), work))
    }

    /// Runs `job` once every cleanup asked for so far is done.
    mutating func afterCleanups(_ jobs: inout [Job], _ job: @escaping Job) {
        if let now = cleanups.after(job) { jobs.append(now) }
    }

    func gateKey(_ generation: SessionGeneration) -> String {
        "\(config.address)#\(generation)"
    }

}
