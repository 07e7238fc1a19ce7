import BlueZ
import Bluetooth
import Codecs
import Config
import Logging

/// What every device session shares: the BlueZ client, the broker link and the per-adapter coordination.
struct SessionContext: Sendable {
    let bluez: BlueZClient
    let mqtt: MQTTLink
    let topics: BridgeTopics
    let gate: ConnectGate<String>
    let discovery: DiscoveryCoordinator
    let events: EventPublisher
    let logger: Logger
    /// Called whenever a device's availability changes, so the systemd STATUS line stays current.
    let availabilityChanged: @Sendable () -> Void
    /// Called once per session with what GATT Device Information (0x180A) says, for Home Assistant's device block.
    let deviceIdentified: @Sendable (String, DeviceIdentity) -> Void
}

/// One saved device: drives its `SessionMachine` with BlueZ events and performs the actions it returns. All I/O
/// runs in child tasks whose results come back as machine events tagged with the attempt's generation, so a late
/// answer from an abandoned attempt cannot disturb the current one.
actor DeviceSession {
    let config: DeviceConfig
    private let ctx: SessionContext
    private var logger: Logger
    private var machine = SessionMachine()
    private var adapterPath: String?
    private let publishers: [String: ChannelPublisher]

    /// Characteristics of the configured channels, found when services resolved (channel name → characteristic).
    private var resolved: [String: GattCharacteristicInfo] = [:]
    private var subscriptions: [NotificationSubscription] = []
    private var pumps: [Task<Void, Never>] = []
    private var pollers: [Task<Void, Never>] = []
    private var backoffTimer: Task<Void, Never>?
    /// Child tasks still running, so `stop()` can cancel work in flight; each removes itself when it ends.
    private var linkTasks: [UInt64: Task<Void, Never>] = [:]
    private var nextLinkTaskID: UInt64 = 0
    /// The last Disconnect / RemoveDevice asked for, chained in order. Anything that looks the device up or
    /// connects waits for it first: a Connect that overtakes the Disconnect or removal meant to precede it would be
    /// cancelled by it, or sit unanswered on an object that is being removed.
    private var linkCleanup: Task<Void, Never>?
    private var lastRSSI: Int?
    private var identity: DeviceIdentity?

    private var commands = CommandQueue()
    /// A command whose write failed because the link dropped: it goes first once the device is back.
    private var retryHead: PendingCommand?
    /// Set when a write failed because the link went, until the next reconnection: the machine may not have seen the
    /// drop yet, and writing again at once would only fail again, as fast as BlueZ answers.
    private var writesHeld = false
    /// Counts the times the device came online, so a write that fails late (after a reconnection already happened)
    /// does not hold the queue until yet another one.
    private var onlineEpoch = 0
    private var commandWriter: Task<Void, Never>?
    private var expiryTimer: Task<Void, Never>?

    init(config: DeviceConfig, context: SessionContext) {
        self.config = config
        self.ctx = context
        var logger = context.logger
        logger[metadataKey: "device"] = "\(config.name)"
        self.logger = logger
        var publishers: [String: ChannelPublisher] = [:]
        for channel in config.channels {
            publishers[channel.name] = ChannelPublisher(channel: channel, topic: context.topics.state(config, channel),
                                                        mqtt: context.mqtt, logger: logger)
        }
        self.publishers = publishers
    }

    var isOnline: Bool { machine.isOnline }
    var availabilityPayload: String { machine.isOnline ? "online" : "offline" }

    private var devicePath: String? {
        adapterPath.map { $0 + "/dev_" + String(config.address.description.map { $0 == ":" ? "_" : $0 }) }
    }

    // MARK: - Lifecycle

    /// Starts the session against the current adapter (nil: none yet) and bluetoothd presence.
    func start(adapter: AdapterInfo?, bluezAvailable: Bool) async {
        send(.start)
        if !bluezAvailable {
            send(.bluezGone)
            return
        }
        await adapterChanged(adapter)
    }

    /// Stops the session: publishes offline, disconnects, and drops queued commands with an error each.
    func stop() async {
        send(.stop)
        for command in (retryHead.map { [$0] } ?? []) + commands.removeAll() {
            reject(command, "device \(config.name) was removed or the bridge is stopping; command dropped")
        }
        retryHead = nil
        expiryTimer?.cancel()
        commandWriter?.cancel()
        for task in linkTasks.values { task.cancel() }
        if let linkCleanup { await linkCleanup.value }
    }

    /// The bridge's adapter appeared, changed power, or went away.
    func adapterChanged(_ adapter: AdapterInfo?) async {
        guard let adapter else {
            adapterPath = nil
            send(.adapterGone)
            return
        }
        adapterPath = adapter.path
        if let known = await ctx.bluez.device(address: config.address, adapter: adapter.path) {
            send(.deviceFound)
            // A device BlueZ already knows sends no DeviceAdded: take its RSSI from here, or a session restarted by a
            // reload (which cleared the retained rssi topic) never announces one.
            noteRSSI(known.rssi)
        }
        send(.adapterAvailable(powered: adapter.powered))
    }

    func bluezVanished() {
        send(.bluezGone)
    }

    func bluezAppeared() {
        send(.bluezAvailable)
    }

    /// A device event from BlueZ that concerns this device (the bridge routes by address).
    func deviceEvent(_ event: BlueZEvent) {
        switch event {
        case .deviceAdded(let info) where info.adapterPath == adapterPath:
            send(.deviceFound)
            if info.connected { send(.connected) }
            noteRSSI(info.rssi)
        case .deviceRemoved(let path, _) where path == devicePath:
            send(.deviceGone)
        case .deviceChanged(let info, let changed) where info.adapterPath == adapterPath:
            if changed.contains("Connected") { send(info.connected ? .connected : .disconnected) }
            if changed.contains("RSSI") { noteRSSI(info.rssi) }
        default:
            break
        }
    }

    /// Republishes what a broker that lost its retained messages (a restart without persistence) needs.
    func republishRetained() {
        ctx.mqtt.publish(ctx.topics.availability(config), availabilityPayload, qos: 1, retain: true)
        if let lastRSSI { ctx.mqtt.publish(ctx.topics.rssi(config), String(lastRSSI), qos: 1, retain: true) }
    }

    /// Availability and the last value of every channel again: Home Assistant restarted and wants current states.
    func republishStates() {
        republishRetained()
        for publisher in publishers.values { publisher.republish() }
    }

    private func noteRSSI(_ rssi: Int?) {
        guard let rssi, rssi != lastRSSI else { return }
        lastRSSI = rssi
        ctx.mqtt.publish(ctx.topics.rssi(config), String(rssi), qos: 0, retain: true)
    }

    // MARK: - Machine

    private func send(_ event: SessionEvent) {
        let actions = machine.handle(event)
        for action in actions { perform(action) }
        if machine.state != .subscribing && machine.state != .online { dropSubscriptions() }
    }

    private func perform(_ action: SessionAction) {
        switch action {
        case .startDiscovery:
            guard let adapterPath else { return }
            ctx.discovery.want(config.name, adapter: adapterPath)
            let generation = machine.generation
            let cleanup = linkCleanup
            spawn { session in
                // The object may already exist (BlueZ keeps devices it has seen): no need to wait for discovery.
                // Not while it is being removed, though.
                await cleanup?.value
                if await session.ctx.bluez.device(address: session.config.address, adapter: adapterPath) != nil {
                    await session.deviceFoundIfStill(generation)
                }
            }
        case .stopDiscovery:
            if let adapterPath { ctx.discovery.release(config.name, adapter: adapterPath) }
        case .requestConnectSlot(let generation):
            let key = gateKey(generation)
            spawn { session in
                do {
                    try await session.ctx.gate.acquire(key)
                    await session.deliver(.connectSlotGranted(generation))
                } catch {}
            }
        case .releaseConnectSlot(let generation):
            let key = gateKey(generation)
            Task { await ctx.gate.release(key) }
        case .connect(let generation, let timeout):
            connect(generation, timeout: timeout)
        case .disconnect:
            guard let path = devicePath else { return }
            let bluez = ctx.bluez
            afterCleanup { try? await bluez.disconnect(device: path, timeout: .seconds(3)) }
        case .resolveServices(let generation, let timeout):
            resolve(generation, timeout: timeout)
        case .subscribeChannels(let generation):
            subscribe(generation)
        case .readChannelsOnce:
            for channel in config.channels where resolved[channel.name] != nil && mode(of: channel) == .read {
                spawn { session in await session.readAndPublish(channel, replyTopic: nil) }
            }
        case .startPolling:
            startPolling()
        case .stopPolling:
            for task in pollers { task.cancel() }
            pollers = []
        case .publishAvailability(let online):
            ctx.mqtt.publish(ctx.topics.availability(config), online ? "online" : "offline", qos: 1, retain: true)
            logger.info("availability \(online ? "online" : "offline")")
            ctx.availabilityChanged()
        case .scheduleBackoff(let delay, let generation):
            backoffTimer?.cancel()
            backoffTimer = spawn { session in
                try? await Task.sleep(for: delay)
                if !Task.isCancelled { await session.deliver(.backoffElapsed(generation)) }
            }
        case .cancelBackoff:
            backoffTimer?.cancel()
            backoffTimer = nil
        case .emitEvent(let event):
            ctx.events.emit(event, device: config.name)
        case .flushPendingCommands:
            onlineEpoch += 1
            writesHeld = false
            pumpCommands()
        case .removeDevice:
            guard let path = devicePath else { return }
            let bluez = ctx.bluez
            afterCleanup { try? await bluez.removeDevice(path) }
        }
    }

    /// Runs `work` after the cleanup already asked for, and makes it the one later operations wait for.
    private func afterCleanup(_ work: @escaping @Sendable () async -> Void) {
        let previous = linkCleanup
        linkCleanup = Task {
            await previous?.value
            await work()
        }
    }

    /// Delivers the result of a child task; the machine ignores it if its generation is stale.
    private func deliver(_ event: SessionEvent) {
        send(event)
    }

    private func deviceFoundIfStill(_ generation: SessionGeneration) {
        if machine.generation == generation { send(.deviceFound) }
    }

    /// Runs `body` in a child task holding the session; remembered until it ends so `stop()` can cancel it.
    @discardableResult
    private func spawn(_ body: @escaping @Sendable (DeviceSession) async -> Void) -> Task<Void, Never> {
        nextLinkTaskID += 1
        let id = nextLinkTaskID
        // The task is isolated to this actor: its removal cannot run before the insertion below.
        let task = Task {
            await body(self)
            self.linkTaskEnded(id)
        }
        linkTasks[id] = task
        return task
    }

    private func linkTaskEnded(_ id: UInt64) { linkTasks[id] = nil }

    private func gateKey(_ generation: SessionGeneration) -> String {
        "\(config.address)#\(generation)"
    }

    // MARK: - Connect, resolve, subscribe

    private func connect(_ generation: SessionGeneration, timeout: Duration) {
        guard let path = devicePath else {
            send(.failure(.adapterMissing, generation))
            return
        }
        logger.debug("connecting")
        let cleanup = linkCleanup
        spawn { session in
            await cleanup?.value
            do throws(BlueZError) {
                try await session.ctx.bluez.connect(device: path, timeout: timeout)
                await session.deliver(.connectSucceeded(generation))
            } catch .alreadyConnected {
                await session.deliver(.connectSucceeded(generation))
            } catch {
                await session.deliver(.failure(FailureKind(error, stage: .connect), generation))
            }
        }
    }

    private func resolve(_ generation: SessionGeneration, timeout: Duration) {
        guard let path = devicePath else { return }
        spawn { session in
            do throws(BlueZError) {
                let tree = try await session.ctx.bluez.waitUntilServicesResolved(device: path, timeout: timeout)
                await session.resolved(tree, generation)
            } catch {
                await session.deliver(.failure(FailureKind(error, stage: .resolve), generation))
            }
        }
    }

    private func resolved(_ tree: GattTree, _ generation: SessionGeneration) {
        guard machine.generation == generation else { return }
        var found: [String: GattCharacteristicInfo] = [:]
        for channel in config.channels {
            guard let info = tree.characteristic(channel.characteristic, service: channel.service) else {
                let where_ = channel.service.map { "\($0)/" } ?? ""
                logger.warning("characteristic \(where_)\(channel.characteristic) of channel \(channel.name) not found")
                send(.failure(.characteristicMissing("\(channel.name) (\(where_)\(channel.characteristic))"), generation))
                return
            }
            found[channel.name] = info
        }
        resolved = found
        send(.servicesResolved(generation))
        if identity == nil { readIdentity(tree) }
    }

    /// Model and manufacturer from Device Information, read once per session; absent characteristics are fine.
    private func readIdentity(_ tree: GattTree) {
        let deviceInformation = BluetoothUUID("180a")
        let model = tree.characteristic(BluetoothUUID("2a24")!, service: deviceInformation)
        let manufacturer = tree.characteristic(BluetoothUUID("2a29")!, service: deviceInformation)
        guard model != nil || manufacturer != nil else { return }
        spawn { session in
            func text(_ info: GattCharacteristicInfo?) async -> String? {
                guard let info, let bytes = try? await session.ctx.bluez.readValue(characteristic: info.path) else { return nil }
                let value = String(decoding: bytes, as: UTF8.self).trimmingPrefix(while: \.isWhitespace)
                return value.isEmpty ? nil : String(value)
            }
            let identity = DeviceIdentity(model: await text(model), manufacturer: await text(manufacturer))
            await session.identified(identity)
        }
    }

    private func identified(_ identity: DeviceIdentity) {
        guard self.identity != identity else { return }
        self.identity = identity
        ctx.deviceIdentified(config.name, identity)
    }

    private func mode(of channel: ChannelConfig) -> ChannelMode {
        if let mode = channel.mode { return mode }
        guard let info = resolved[channel.name] else { return .read }
        return info.canNotify ? .notify : .read
    }

    private func subscribe(_ generation: SessionGeneration) {
        let notifyChannels = config.channels.filter { mode(of: $0) == .notify }
        let targets = notifyChannels.compactMap { channel -> (ChannelConfig, String, NotificationGate)? in
            guard let info = resolved[channel.name], let publisher = publishers[channel.name] else { return nil }
            return (channel, info.path, NotificationGate(publisher: publisher))
        }
        spawn { session in
            var subscribed: [(ChannelConfig, NotificationSubscription, NotificationGate)] = []
            do throws(BlueZError) {
                for (channel, path, gate) in targets {
                    // The hot path: each value (fd or signal path) is decoded and published on the D-Bus loop thread
                    // that received it (one decode, one publish), instead of crossing to a Swift executor thread.
                    let subscription = try await session.ctx.bluez.subscribe(characteristic: path,
                                                                             onValue: { gate.deliver($0) })
                    subscribed.append((channel, subscription, gate))
                }
                await session.subscribed(subscribed, generation)
            } catch {
                for (_, subscription, gate) in subscribed {
                    gate.close()
                    await subscription.stop()
                }
                await session.deliver(.failure(FailureKind(error, stage: .subscribe), generation))
            }
        }
    }

    private func subscribed(_ list: [(ChannelConfig, NotificationSubscription, NotificationGate)],
                            _ generation: SessionGeneration) {
        guard machine.generation == generation, machine.state == .subscribing else {
            for (_, subscription, gate) in list {
                gate.close()
                Task { await subscription.stop() }
            }
            return
        }
        for (channel, subscription, gate) in list {
            logger.debug("channel \(channel.name) subscribed via \(subscription.delivery.rawValue)")
            subscriptions.append(subscription)
            gate.open()
            guard let publisher = publishers[channel.name] else { continue }
            // On the fd path the values already went to the gate and the stream only ends; on the signal path it
            // carries them (off the actor, one decode and one publish each). Either way its end is the session's cue.
            pumps.append(Task.detached {
                for await value in subscription.values { gate.deliver(value) }
                publisher.flush()
                await self.subscriptionEnded(generation, channel: channel.name)
            })
        }
        send(.subscribed(generation))
    }

    /// A notification stream ended while the session still believes it is up: the link or the characteristic went.
    private func subscriptionEnded(_ generation: SessionGeneration, channel: String) {
        guard machine.generation == generation, machine.isOnline else { return }
        send(.failure(.subscribeFailed("notifications of \(channel) stopped"), generation))
    }

    private func dropSubscriptions() {
        guard !subscriptions.isEmpty || !pumps.isEmpty else { return }
        let list = subscriptions
        subscriptions = []
        pumps = []
        Task { for subscription in list { await subscription.stop() } }
    }

    // MARK: - Reads

    private func startPolling() {
        for task in pollers { task.cancel() }
        pollers = config.channels.filter { resolved[$0.name] != nil && mode(of: $0) == .read }.map { channel in
            Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: channel.interval)
                    guard !Task.isCancelled, let self else { return }
                    await self.readAndPublish(channel, replyTopic: nil)
                }
            }
        }
    }

    /// Reads a channel and publishes it; `replyTopic` is the `get` topic to blame in `B/bridge/log` on failure.
    private func readAndPublish(_ channel: ChannelConfig, replyTopic: String?) async {
        guard let info = resolved[channel.name], let publisher = publishers[channel.name] else { return }
        do throws(BlueZError) {
            let value = try await ctx.bluez.readValue(characteristic: info.path)
            publisher.publish(value)
        } catch {
            logger.warning("read of \(channel.name) failed: \(error)")
            if let replyTopic { ctx.events.reject(topic: replyTopic, message: "read of \(config.name)/\(channel.name) failed: \(error)") }
        }
    }

    // MARK: - Commands

    /// `B/D/C/get`: read now and publish.
    func get(_ channel: ChannelConfig, topic: String) {
        guard machine.isOnline, resolved[channel.name] != nil else {
            ctx.events.reject(topic: topic, message: "device \(config.name) is offline")
            return
        }
        spawn { session in await session.readAndPublish(channel, replyTopic: topic) }
    }

    /// `B/D/C/set`: encode now (a bad payload is rejected at once), then write in arrival order, waiting for the device
    /// up to the channel's `command_ttl`.
    func set(_ channel: ChannelConfig, payload: [UInt8], topic: String) {
        let bytes: [UInt8]
        do {
            bytes = try CommandEncoding.encode(payload, for: channel)
        } catch {
            ctx.events.reject(topic: topic, message: "\(error)")
            return
        }
        let command = PendingCommand(channel: channel.name, payload: bytes, arrival: .now, ttl: channel.commandTTL)
        if let dropped = commands.enqueue(command) {
            reject(dropped, "too many commands waiting for \(config.name); oldest dropped")
        }
        pumpCommands()
    }

    private func reject(_ command: PendingCommand, _ message: String) {
        guard let channel = config.channels.first(where: { $0.name == command.channel }) else { return }
        ctx.events.reject(topic: ctx.topics.set(config, channel), message: message)
    }

    /// Writes the next command if the device is online and no write is in flight; otherwise arms the expiry timer.
    private func pumpCommands() {
        let now = ContinuousClock.now
        if let head = retryHead, head.isExpired(at: now) {
            retryHead = nil
            reject(head, "device \(config.name) stayed offline for command_ttl; command dropped")
        }
        for expired in commands.expire(now: now) {
            reject(expired, "device \(config.name) stayed offline for command_ttl; command dropped")
        }
        guard commandWriter == nil else { return }
        guard machine.isOnline, !writesHeld else { armExpiry(); return }
        let next: PendingCommand
        if let head = retryHead {
            retryHead = nil
            next = head
        } else if let popped = commands.popReady() {
            next = popped
        } else {
            expiryTimer?.cancel()
            return
        }
        guard let channel = config.channels.first(where: { $0.name == next.channel }),
              let info = resolved[next.channel] else {
            reject(next, "channel \(next.channel) is not available on \(config.name)")
            pumpCommands()
            return
        }
        let bluez = ctx.bluez
        let epoch = onlineEpoch
        commandWriter = Task {
            let result: BlueZError?
            do throws(BlueZError) {
                try await CommandEncoding.write(next.payload, channel: channel, characteristic: info, bluez: bluez)
                result = nil
            } catch {
                result = error
            }
            self.commandFinished(next, error: result, epoch: epoch)
        }
    }

    private func commandFinished(_ command: PendingCommand, error: BlueZError?, epoch: Int) {
        commandWriter = nil
        if let error {
            switch FailureKind(error, stage: .operation) {
            case .notConnected, .deviceGone, .serviceUnknown, .bluezGone, .linkLost:
                retryHead = command        // the link went: write it after the reconnection, within its ttl
                writesHeld = epoch == onlineEpoch
            default:
                reject(command, "write to \(config.name)/\(command.channel) failed: \(error)")
            }
        } else {
            logger.debug("wrote command to \(command.channel)")
            // A read-mode channel has no notification to show the new state: read it back, so a Home Assistant
            // switch does not flip back until the next poll.
            if let channel = config.channels.first(where: { $0.name == command.channel }), mode(of: channel) == .read {
                spawn { session in await session.readAndPublish(channel, replyTopic: nil) }
            }
        }
        pumpCommands()
    }

    private func armExpiry() {
        expiryTimer?.cancel()
        guard let deadline = [commands.nextDeadline, retryHead?.deadline].compactMap({ $0 }).min() else { return }
        expiryTimer = Task { [weak self] in
            try? await Task.sleep(until: deadline, clock: .continuous)
            guard !Task.isCancelled, let self else { return }
            await self.pumpCommands()
        }
    }
}
