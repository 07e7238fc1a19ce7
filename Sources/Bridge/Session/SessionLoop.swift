import BlueZ
import Bluetooth
import Codecs
import Config
import Logging

/// The state of one device session, touched only by `DeviceSession.run()`: it feeds inputs to the `SessionMachine`
/// and the `CommandScheduler` and turns their decisions into jobs (child tasks) whose results come back as inputs.
struct SessionLoop {
    let config: DeviceConfig
    private let env: SessionEnvironment
    private let inbox: AsyncStream<SessionInput>.Continuation
    private let cleanups: AsyncStream<(UInt64, Job)>.Continuation
    private var logger: Logger
    private var machine: SessionMachine
    private var scheduler = CommandScheduler()
    private let publishers: [String: ChannelPublisher]
    private let channels: [String: ChannelConfig]

    private(set) var isFinished = false
    private var adapterPath: String?
    /// Counts adapter facts, so the lookup of an older one cannot apply after a newer one.
    private var adapterSequence: UInt64 = 0
    /// Characteristics of the configured channels, found when services resolved (channel name → characteristic).
    private var resolved: [String: GattCharacteristicInfo] = [:]
    private var subscriptions: [ActiveSubscription] = []
    private var lastRSSI: Int?
    private var identity: DeviceIdentity?
    private var nextCommandID: UInt64 = 0
    /// Bumped whenever polling stops, so a poll timer of an earlier online period is ignored when it fires.
    private var pollEpoch = 0
    /// The expiry timer armed for the earliest command deadline, so a flood of commands arms one timer, not many.
    private var armedExpiry: ContinuousClock.Instant?
    /// Cleanup tickets: Disconnect/RemoveDevice asked for, and done. A Connect or device lookup waits for every
    /// cleanup asked for before it: one that overtook a Disconnect would be cancelled by it.
    private var cleanupsAsked: UInt64 = 0
    private var cleanupsDone: UInt64 = 0
    private var afterCleanup: [(ticket: UInt64, job: Job)] = []
    /// Only in the final stop: the session ends once the cleanups asked for so far are done.
    private var stopping = false

    init(config: DeviceConfig, environment: SessionEnvironment, inbox: AsyncStream<SessionInput>.Continuation,
         cleanups: AsyncStream<(UInt64, Job)>.Continuation) {
        self.config = config
        self.env = environment
        self.inbox = inbox
        self.cleanups = cleanups
        var logger = environment.logger
        logger[metadataKey: "device"] = "\(config.name)"
        self.logger = logger
        self.machine = SessionMachine(policy: environment.policy, pairing: config.pairing.mode != .none,
                                      jitter: environment.jitter)
        var publishers: [String: ChannelPublisher] = [:]
        for channel in config.channels {
            publishers[channel.name] = ChannelPublisher(channel: channel, topic: environment.topics.state(config, channel),
                                                        publisher: environment.publisher, logger: logger)
        }
        self.publishers = publishers
        self.channels = Dictionary(config.channels.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    private var devicePath: String? {
        if let reportedPath, let adapterPath, reportedPath.hasPrefix(adapterPath + "/") { return reportedPath }
        return adapterPath.map { ObjectPath.device(adapter: $0, address: config.address) }
    }
    /// The object BlueZ reported for the device's address. Usually the path the address gives, but a device bonded
    /// while it used a resolvable private address keeps that object (named after the private address) with its
    /// `Address` changed to the identity address the config holds, until bluetoothd restarts (docs/pairing.md).
    private var reportedPath: String?

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
            cleanupsDone = ticket
            let ready = afterCleanup.filter { $0.ticket <= ticket }
            afterCleanup.removeAll { $0.ticket <= ticket }
            jobs += ready.map(\.job)
            if stopping && cleanupsDone == cleanupsAsked { isFinished = true }
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
            jobs.append(pollTimer(config, epoch: epoch))
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

    private mutating func stop(_ jobs: inout [Job]) {
        drive(.stop, &jobs)
        report(scheduler.drain(reason: "device \(config.name) was removed or the bridge is stopping; command dropped"))
        for publisher in publishers.values { publisher.flush() }
        stopping = true
        if cleanupsDone == cleanupsAsked { isFinished = true }
    }

    private mutating func adapterChanged(_ adapter: AdapterInfo?, _ jobs: inout [Job]) {
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
        let gatt = env.gatt, inbox = self.inbox, address = config.address, sequence = adapterSequence
        // The device's presence is looked up first, so it is known before the power state is applied.
        jobs.append {
            let known = await gatt.device(address: address, adapter: adapter.path)
            inbox.yield(.adapterLooked(known, adapter: adapter, sequence: sequence))
        }
    }

    private mutating func deviceEvent(_ event: BlueZEvent, _ jobs: inout [Job]) {
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

    private mutating func noteRSSI(_ rssi: Int?) {
        guard let rssi, rssi != lastRSSI else { return }
        lastRSSI = rssi
        env.report(.rssi(rssi))
    }

    // MARK: - The machine's actions

    private mutating func drive(_ event: SessionEvent, _ jobs: inout [Job]) {
        for action in machine.handle(event) { perform(action, &jobs) }
        if machine.state != .subscribing && machine.state != .online { dropSubscriptions(&jobs) }
    }

    private mutating func perform(_ action: SessionAction, _ jobs: inout [Job]) {
        let gatt = env.gatt, inbox = self.inbox
        switch action {
        case .startDiscovery:
            guard let adapterPath else { return }
            env.discovery.want(config.name, adapter: adapterPath)
            // The object may already exist (BlueZ keeps devices it has seen): no need to wait for discovery.
            let generation = machine.generation, address = config.address
            afterCleanups(&jobs) {
                if await gatt.device(address: address, adapter: adapterPath) != nil {
                    inbox.yield(.foundIfStill(generation))
                }
            }
        case .stopDiscovery:
            if let adapterPath { env.discovery.release(config.name, adapter: adapterPath) }
        case .requestConnectSlot(let generation):
            let gate = env.gate, key = gateKey(generation), lane = adapterPath ?? ""
            jobs.append {
                do {
                    try await gate.acquire(key, lane: lane)
                    inbox.yield(.machine(.connectSlotGranted(generation)))
                } catch {}
            }
        case .releaseConnectSlot(let generation):
            let gate = env.gate, key = gateKey(generation)
            jobs.append { await gate.release(key) }
        case .connect(let generation, let timeout):
            guard let path = devicePath else {
                drive(.failure(.adapterMissing, generation), &jobs)
                return
            }
            logger.debug("connecting")
            let report = env.report, adapter = adapterPath ?? "", suspect = env.policy.adapterFailures
            afterCleanups(&jobs) {
                do throws(BlueZError) {
                    try await gatt.connect(device: path, timeout: timeout)
                    report(.adapterOperation(adapter: adapter, error: nil))
                    inbox.yield(.machine(.connectSucceeded(generation)))
                } catch .alreadyConnected {
                    inbox.yield(.machine(.connectSucceeded(generation)))
                } catch {
                    let kind = FailureKind(error, stage: .connect)
                    if suspect.contains(kind.category) { report(.adapterOperation(adapter: adapter, error: "Connect: \(error)")) }
                    inbox.yield(.machine(.failure(kind, generation)))
                }
            }
        case .pair(let generation, let timeout):
            guard let path = devicePath else {
                drive(.failure(.adapterMissing, generation), &jobs)
                return
            }
            logger.info("pairing (pairing: \(config.pairing.mode.rawValue))")
            let agentReady = env.agentReady, needsKeyboard = config.pairing.mode == .passkey, logger = self.logger
            afterCleanups(&jobs) {
                guard await agentReady(needsKeyboard, .seconds(10)) else {
                    logger.warning("the pairing agent is not registered with bluetoothd; pairing later")
                    inbox.yield(.machine(.failure(.other("the pairing agent is not registered with bluetoothd"),
                                                  generation)))
                    return
                }
                do throws(BlueZError) {
                    try await gatt.pair(device: path, timeout: timeout)
                    inbox.yield(.machine(.pairSucceeded(generation)))
                } catch {
                    inbox.yield(.machine(.failure(FailureKind(error, stage: .connect), generation)))
                }
            }
        case .disconnect:
            guard let path = devicePath else { return }
            cleanup { try? await gatt.disconnect(device: path, timeout: .seconds(3)) }
        case .removeDevice:
            guard let path = devicePath else { return }
            cleanup { try? await gatt.removeDevice(path) }
        case .resolveServices(let generation, let timeout):
            guard let path = devicePath else { return }
            jobs.append {
                do throws(BlueZError) {
                    let tree = try await gatt.waitUntilServicesResolved(device: path, timeout: timeout)
                    inbox.yield(.resolved(tree, generation))
                } catch {
                    inbox.yield(.machine(.failure(FailureKind(error, stage: .resolve), generation)))
                }
            }
        case .subscribeChannels(let generation):
            jobs.append(subscribeJob(generation))
        case .readChannelsOnce:
            for channel in config.channels where resolved[channel.name] != nil && mode(of: channel) == .read {
                if let job = readJob(channel) { jobs.append(job) }
            }
        case .startPolling:
            pollEpoch += 1
            for channel in config.channels where resolved[channel.name] != nil && mode(of: channel) == .read {
                jobs.append(pollTimer(channel, epoch: pollEpoch))
            }
        case .stopPolling:
            pollEpoch += 1
        case .publishAvailability(let online):
            logger.info("availability \(online ? "online" : "offline")")
            env.report(.availability(online))
        case .scheduleBackoff(let delay, let generation):
            jobs.append {
                try? await Task.sleep(for: delay)
                if !Task.isCancelled { inbox.yield(.machine(.backoffElapsed(generation))) }
            }
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
    private mutating func cleanup(_ work: @escaping Job) {
        cleanupsAsked += 1
        cleanups.yield((cleanupsAsked, work))
    }

    /// Runs `job` once every cleanup asked for so far is done.
    private mutating func afterCleanups(_ jobs: inout [Job], _ job: @escaping Job) {
        if cleanupsDone >= cleanupsAsked {
            jobs.append(job)
        } else {
            afterCleanup.append((cleanupsAsked, job))
        }
    }

    private func gateKey(_ generation: SessionGeneration) -> String {
        "\(config.address)#\(generation)"
    }

    // MARK: - Resolve and subscribe

    private mutating func resolved(_ tree: GattTree, _ generation: SessionGeneration, _ jobs: inout [Job]) {
        guard machine.generation == generation else { return }
        var found: [String: GattCharacteristicInfo] = [:]
        for channel in config.channels {
            guard let info = tree.characteristic(channel.characteristic, service: channel.service) else {
                let where_ = channel.service.map { "\($0)/" } ?? ""
                logger.warning("characteristic \(where_)\(channel.characteristic) of channel \(channel.name) not found")
                drive(.failure(.characteristicMissing("\(channel.name) (\(where_)\(channel.characteristic))"), generation),
                      &jobs)
                return
            }
            found[channel.name] = info
        }
        resolved = found
        drive(.servicesResolved(generation), &jobs)
        if identity == nil, let job = identityJob(tree) { jobs.append(job) }
    }

    /// Model and manufacturer from Device Information, read once per session; absent characteristics are fine.
    private func identityJob(_ tree: GattTree) -> Job? {
        let deviceInformation = BluetoothUUID("180a")
        let model = tree.characteristic(BluetoothUUID("2a24")!, service: deviceInformation)
        let manufacturer = tree.characteristic(BluetoothUUID("2a29")!, service: deviceInformation)
        guard model != nil || manufacturer != nil else { return nil }
        let gatt = env.gatt, inbox = self.inbox
        return {
            func text(_ info: GattCharacteristicInfo?) async -> String? {
                guard let info, let bytes = try? await gatt.read(characteristic: info.path) else { return nil }
                let value = String(decoding: bytes, as: UTF8.self).trimmingPrefix(while: \.isWhitespace)
                return value.isEmpty ? nil : String(value)
            }
            inbox.yield(.identified(DeviceIdentity(model: await text(model), manufacturer: await text(manufacturer))))
        }
    }

    private func mode(of channel: ChannelConfig) -> ChannelMode {
        if let mode = channel.mode { return mode }
        guard let info = resolved[channel.name] else { return .read }
        return info.canNotify ? .notify : .read
    }

    private func subscribeJob(_ generation: SessionGeneration) -> Job {
        let targets = config.channels.filter { mode(of: $0) == .notify }.compactMap {
            channel -> (ChannelConfig, String, NotificationGate)? in
            guard let info = resolved[channel.name], let publisher = publishers[channel.name] else { return nil }
            return (channel, info.path, NotificationGate(publisher: publisher))
        }
        let gatt = env.gatt, inbox = self.inbox, hint = securityHint
        // BlueZ 5.47–5.83 never answers an AcquireNotify whose enabling of notifications fails (the link drops, or
        // the CCC write is refused) and keeps the characteristic acquired until bluetoothd restarts: every later
        // subscription gets "Notify acquired", and removing the device then crashes bluetoothd (fixed in 5.84). A
        // bonded link is the one likely to drop just then (encryption starts with the stored key, or fails because
        // the peripheral lost its bond), so a device that pairs, or that BlueZ lists as paired, uses StartNotify,
        // whose failure is answered and cleaned up; such devices (locks, thermostats) are not the fast ones.
        let preferAcquire = !(machine.pairingRequired || machine.devicePaired)
        return {
            var done: [ActiveSubscription] = []
            do throws(BlueZError) {
                for (channel, path, gate) in targets {
                    // The hot path: each value (fd or signal path) is decoded and published on the D-Bus loop thread
                    // that received it (one decode, one publish), never crossing to a Swift executor thread.
                    let subscription = try await gatt.notifications(of: path, preferAcquire: preferAcquire,
                                                                        onValue: { gate.deliver($0) })
                    done.append(ActiveSubscription(channel: channel, subscription: subscription, gate: gate))
                }
                inbox.yield(.subscribed(done, generation))
            } catch {
                for active in done {
                    active.gate.close()
                    await active.subscription.stop()
                }
                let kind = hint(error).map { FailureKind.subscribeFailed("\(error); \($0)") }
                inbox.yield(.machine(.failure(kind ?? FailureKind(error, stage: .subscribe), generation)))
            }
        }
    }

    private mutating func subscribed(_ list: [ActiveSubscription], _ generation: SessionGeneration, _ jobs: inout [Job]) {
        guard machine.generation == generation, machine.state == .subscribing else {
            for active in list { active.gate.close() }
            jobs.append { for active in list { await active.subscription.stop() } }
            return
        }
        let inbox = self.inbox
        for active in list {
            logger.debug("channel \(active.channel.name) subscribed via \(active.subscription.deliveryName)")
            subscriptions.append(active)
            active.gate.open()
            let publisher = publishers[active.channel.name]
            // The stream carries no values (they go to the gate); its end is the cue that the link or the
            // characteristic went.
            jobs.append {
                for await _ in active.subscription.ended {}
                publisher?.flush()
                inbox.yield(.subscriptionEnded(generation, channel: active.channel.name))
            }
        }
        drive(.subscribed(generation), &jobs)
    }

    private mutating func dropSubscriptions(_ jobs: inout [Job]) {
        guard !subscriptions.isEmpty else { return }
        let list = subscriptions
        subscriptions = []
        for active in list { active.gate.close() }
        jobs.append { for active in list { await active.subscription.stop() } }
    }

    // MARK: - Reads

    private func pollTimer(_ channel: ChannelConfig, epoch: Int) -> Job {
        let inbox = self.inbox, interval = channel.interval, name = channel.name
        return {
            try? await Task.sleep(for: interval)
            if !Task.isCancelled { inbox.yield(.pollDue(channel: name, epoch: epoch)) }
        }
    }

    /// Reads a channel and publishes the value as a whole (reads bypass a text channel's line framer).
    private func readJob(_ channel: ChannelConfig) -> Job? {
        guard let info = resolved[channel.name], let publisher = publishers[channel.name] else { return nil }
        let gatt = env.gatt, logger = self.logger, hint = securityHint, report = env.report
        return {
            do throws(BlueZError) {
                publisher.publishRead(try await gatt.read(characteristic: info.path))
            } catch {
                if let hint = hint(error) {
                    logger.warning("read of \(channel.name) failed: \(error); \(hint)")
                    report(.event(.error(message: "read of \(channel.name) failed: \(error); \(hint)")))
                } else {
                    logger.warning("read of \(channel.name) failed: \(error)")
                }
            }
        }
    }

    // MARK: - Commands

    private mutating func command(_ request: CommandRequest, _ jobs: inout [Job]) {
        let channel = request.channel
        let kind: DeviceCommand.Kind
        switch request.verb {
        case .get:
            guard !channel.homeassistant.isEvent else {
                reject(request, "channel \(config.name)/\(channel.name) carries events (button presses); it has no state to read")
                return
            }
            guard machine.isOnline, resolved[channel.name] != nil else {
                reject(request, "device \(config.name) is offline")
                return
            }
            kind = .get
        case .set:
            do {
                kind = .set(try CommandEncoding.encode(request.payload, for: channel))
            } catch {
                reject(request, "\(error)")      // the codec's message quotes the payload (cut, escaped)
                return
            }
        }
        nextCommandID += 1
        let command = DeviceCommand(id: nextCommandID, channel: channel.name, kind: kind, topic: request.topic,
                                    payload: request.payload, arrival: .now, ttl: channel.commandTTL,
                                    replies: request.replies)
        report(scheduler.submit(command))
        pumpCommands(&jobs)
    }

    private func reject(_ request: CommandRequest, _ reason: String, payload: [UInt8]? = nil) {
        env.report(.rejected(CommandRejection(topic: request.topic, reason: reason, payload: payload,
                                              replies: request.replies)))
    }

    private func report(_ verdicts: [CommandScheduler.Verdict]) {
        for verdict in verdicts {
            switch verdict {
            case .completed(let command):
                if !command.replies.isEmpty { env.report(.completed(command)) }
            case .rejected(let command, let reason):
                let payload: [UInt8]? = command.isGet ? nil : command.payload
                env.report(.rejected(CommandRejection(topic: command.topic, reason: "\(config.name)/\(command.channel): \(reason)",
                                                      payload: payload, replies: command.replies)))
            }
        }
    }

    /// Runs the next command if the device can take it, and keeps one expiry timer armed for the earliest deadline.
    private mutating func pumpCommands(_ jobs: inout [Job]) {
        let (next, expired) = scheduler.next(now: .now, online: machine.isOnline)
        report(expired)
        if let next {
            jobs.append(executeJob(next))
        }
        if let deadline = scheduler.nextDeadline, armedExpiry.map({ deadline < $0 }) ?? true {
            armedExpiry = deadline
            let inbox = self.inbox
            jobs.append {
                try? await Task.sleep(until: deadline, clock: .continuous)
                if !Task.isCancelled { inbox.yield(.expiryDue) }
            }
        }
    }

    private func executeJob(_ command: DeviceCommand) -> Job {
        let inbox = self.inbox, gatt = env.gatt, id = command.id, hint = securityHint
        guard let channel = channels[command.channel], let info = resolved[command.channel],
              let publisher = publishers[command.channel] else {
            return { inbox.yield(.commandFinished(id, .failed("channel \(command.channel) is not available"))) }
        }
        switch command.kind {
        case .get:
            return {
                do throws(BlueZError) {
                    publisher.publishRead(try await gatt.read(characteristic: info.path))
                    inbox.yield(.commandFinished(id, .done))
                } catch {
                    inbox.yield(.commandFinished(id, Self.outcome(of: error, written: 0, what: "read", hint: hint(error))))
                }
            }
        case .set(let bytes):
            let chunks = CommandEncoding.chunks(bytes, channel: channel, mtu: info.mtu)
            let type = CommandEncoding.writeType(channel, info)
            // A read-mode channel has no notification to show the new state: it is read back, so a Home Assistant
            // switch does not flip back until the next poll. Inside the command's own job, so the next command
            // waits for it and read-backs are published in command order (a read-back beside the next write could
            // publish the older value last).
            let readBack = mode(of: channel) == .read ? readJob(channel) : nil
            return {
                var written = 0
                do throws(BlueZError) {
                    for chunk in chunks {
                        try await gatt.write(characteristic: info.path, chunk, type: type)
                        written += 1
                    }
                    if let readBack { await readBack() }
                    inbox.yield(.commandFinished(id, .done))
                } catch {
                    inbox.yield(.commandFinished(id, Self.outcome(of: error, written: written, what: "write",
                                                                 hint: hint(error))))
                }
            }
        }
    }

    /// A link that went is retried after the reconnection (unless part of a text was already written); anything
    /// else is the command's own failure.
    private static func outcome(of error: BlueZError, written: Int, what: String,
                                hint: String? = nil) -> CommandScheduler.Outcome {
        switch FailureKind(error, stage: .operation) {
        case .notConnected, .deviceGone, .serviceUnknown, .bluezGone, .linkLost:
            return .linkLost(partial: written > 0)
        default:
            return .failed("\(what) failed: \(error)" + (hint.map { "; \($0)" } ?? ""))
        }
    }

    /// docs/pairing.md: a device configured without pairing whose operation failed for lack of authentication or
    /// encryption gets told how to fix it; a device that pairs already does what it can.
    private var securityHint: @Sendable (BlueZError) -> String? {
        guard config.pairing.mode == .none else { return { _ in nil } }
        let name = config.name
        return { error in
            if error.suggestsPairing {
                return "device \(name) seems to need pairing (insufficient authentication or encryption): set pairing: just_works or pairing: passkey in its config"
            }
            // What an unpaired subscription to a protected characteristic leaves on BlueZ 5.66: the AcquireNotify that
            // met the refusal is never answered, and every later subscription gets this (see BlueZError.notifyAcquired).
            if error == .notifyAcquired {
                return "BlueZ holds the notifications of device \(name) as acquired: by another program, or by an AcquireNotify that BlueZ before 5.84 never released after enabling notifications failed (as when the device refuses an unencrypted link; restarting bluetoothd clears it); if the device needs pairing, set pairing: just_works or pairing: passkey in its config"
            }
            return nil
        }
    }
}
