import BlueZ
import Bluetooth
import Config
import Logging
import MQTT
import Synchronization

/// Owns the device sessions and the features. It routes BlueZ events to sessions by device address and MQTT
/// commands to sessions by topic (straight, no feature in between), turns what sessions report into `CoreEvent`s for
/// the features, and applies config changes. `run()` is where sessions and features live: nothing they start
/// outlives it.
public actor BridgeCore {
    public private(set) var config: BridgeConfig
    let bluez: BlueZClient
    private let link: MQTTLink
    let logger: Logger
    let host: FeatureHost
    /// Attached at init, so events emitted before `run()` (a fast first broker connect) wait in their streams.
    private let features: [(feature: any BridgeFeature, events: AsyncStream<CoreEvent>, context: FeatureContext)]
    private let gate = ConnectGate<String>()
    let discovery: DiscoveryCoordinator
    /// Discovery for `adapter: any` devices: through every usable adapter (see `AnyAdapterDiscovery`).
    let anyDiscovery: AnyAdapterDiscovery
    var sessions: [String: DeviceSession] = [:]            // by device name
    private var byAddress: [BluetoothAddress: DeviceSession] = [:]
    // Adapters (docs/adapters.md): see BridgeCore+Adapters.swift.
    var adapterSet: AdapterSet
    /// What each session was last told about its adapter (absent: nothing yet).
    var toldAdapter: [String: AdapterInfo?] = [:]
    /// Fleet: what the `FleetFeature` was last told about each device's room (`CoreEvent.room`).
    var toldRoom: [String: Bool] = [:]
    var armedWakes: [String: ContinuousClock.Instant] = [:]
    var lastAdapterStatuses: [AdapterStatus]?
    var lastPlacement: [String: String] = [:]
    let adapterInputs = AsyncStream.makeStream(of: AdapterInput.self)
    let adapterJobs: (stream: AsyncStream<Job>, continuation: AsyncStream<Job>.Continuation)
    private let board: AvailabilityBoard
    private let spawns: AsyncStream<DeviceSession>
    private let spawner: AsyncStream<DeviceSession>.Continuation
    /// Retained command topics already reported, so a retained command is reported once, not at every reconnect.
    private var reportedRetained: Set<String> = []
    /// Fleet (docs/fleet.md): the devices this bridge owns, as the `FleetFeature` decides.
    let ownership: OwnershipBoard
    /// Sessions pair only once the pairing agent is registered (nil: no agent feature, pair at once).
    private let agentReadiness: AgentReadiness?
    /// Fleet: commands for held devices (`OwnershipAction.hold`), in arrival order.
    private var heldCommands: [String: [MQTTMessage]] = [:]
    /// Fleet: each session's values go through one of these, which also keeps whether the device is held (by name).
    private var holders: [String: HoldingPublisher] = [:]
    static let maxHeldCommands = 64

    public init(config: BridgeConfig, bluez: BlueZClient, link: MQTTLink, discovery: DiscoveryCoordinator,
                features: [any BridgeFeature], logger: Logger, agentReadiness: AgentReadiness? = nil,
                statusChanged: @escaping @Sendable () -> Void = {}) {
        self.config = config
        self.agentReadiness = agentReadiness
        self.bluez = bluez
        self.link = link
        self.logger = logger
        self.discovery = discovery
        let jobs = AsyncStream.makeStream(of: Job.self)
        self.adapterJobs = jobs
        self.anyDiscovery = AnyAdapterDiscovery(inner: discovery, schedule: { delay, body in
            jobs.continuation.yield {
                try? await Task.sleep(for: delay)
                if !Task.isCancelled { body() }
            }
        })
        self.adapterSet = AdapterSet(settings: config.bluetooth, window: Self.wedgeWindow())
        let host = FeatureHost(link: link)
        self.host = host
        self.features = features.map { feature in
            let (events, context) = host.attach()
            return (feature, events, context)
        }
        self.board = AvailabilityBoard(changed: statusChanged)
        self.ownership = OwnershipBoard(fleet: config.fleet != nil)
        (spawns, spawner) = AsyncStream.makeStream(of: DeviceSession.self)
    }

    var topics: BridgeTopics { BridgeTopics(settings: config.mqtt) }

    // MARK: - Life

    /// Runs the features and the sessions until `shutdown()`. Sessions for the configured devices start at once;
    /// devices run independently: one that never shows up delays nobody.
    public func run() async {
        let requests = host.requestStream
        host.core.set(self)
        await withDiscardingTaskGroup { group in
            for (feature, events, context) in features {
                group.addTask { await feature.run(events, context) }
            }
            group.addTask { [weak self] in
                for await request in requests { await self?.perform(request) }
            }
            group.addTask { await self.adapterLoops() }
            await start()
            for await session in spawns {
                group.addTask { await session.run() }
            }
        }
    }

    private func start() async {
        adapterSet.update(await bluez.adapters())
        adapterSet.watch(config.devices)
        for device in await bluez.devices() where device.rssi != nil { noteSighting(device) }
        if adapterSet.present.isEmpty { logger.warning("no Bluetooth adapter yet; waiting for one") }
        let available = await bluez.isAvailable
        for device in config.devices { startSession(device, bluezAvailable: available) }
        subscribeCommands()
        host.emit(.configApplied(old: nil, new: config))
        placeDevices()
        board.touch()
    }

    /// Stops every session (offline, disconnect; bounded, since bluetoothd may not answer), tells the features, and
    /// lets `run()` return once they are done.
    public func shutdown() async {
        let all = Array(sessions.values)
        sessions = [:]
        byAddress = [:]
        let stopped = await finish(within: .seconds(3)) {
            await withDiscardingTaskGroup { group in
                for session in all { group.addTask { await session.stop() } }
            }
        }
        if !stopped { logger.warning("devices did not disconnect in time") }
        host.emit(.stopping)
        host.finish()
        finishAdapterLoops()
        spawner.finish()
    }

    private func startSession(_ device: DeviceConfig, bluezAvailable: Bool) {
        let host = self.host, board = self.board, ownership = self.ownership, adapters = adapterInputs.continuation
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
                    board.set(device.name, online: online)
                    host.emit(.availability(device, online: online))
                case .rssi(let rssi):
                    if ownership.isFleet { host.emit(.sighting(device, rssi)) }
                    if ownership.owns(device.name) { host.emit(.rssi(device, rssi)) }
                case .event(let event): host.emit(.deviceEvent(device, event))
                case .rejected(let rejection): host.emit(.rejected(rejection))
                case .completed(let command): host.emit(.completed(command))
                case .identified(let identity): host.emit(.identified(device, identity))
                case .released: host.emit(.released(device))
                case .unseen: if ownership.isFleet { host.emit(.sighting(device, nil)) }
                case .adapterOperation(let adapter, let error):
                    adapters.yield(.operation(adapterPath: adapter, error: error))
                }
                if case .availability(let online) = report { adapters.yield(.availability(device: device.name, online: online)) }
            })
        let session = DeviceSession(config: device, environment: environment, adapter: initialAdapter(for: device),
                                    bluezAvailable: bluezAvailable, owned: ownership.owns(device.name))
        sessions[device.name] = session
        byAddress[device.address] = session
        board.register(device.name)
        spawner.yield(session)
        // Fleet: a session that starts without the device (a reload replaced the one that was releasing it, and
        // stopped it disconnected) will never confirm that release; it is confirmed here, so the handover ends.
        if ownership.isFleet && !ownership.owns(device.name) { host.emit(.released(device)) }
    }

    /// With MQTT 5 the broker sends no retained message on these (retain handling 2); on 3.1.1 `handle` drops them.
    private func subscribeCommands() {
        for filter in topics.commandFilters { link.client.subscribe(filter, qos: .atLeastOnce, retainHandling: .doNotSend) }
    }

    private func perform(_ request: CoreRequest) {
        switch request {
        case .republish(let states):
            for session in sessions.values { session.send(.republish(states: states)) }
        case .hold(let name, let held):
            guard let holder = holders[name], let session = sessions[name],
                  held ? holder.hold() : holder.release(deliver: true) else { break }
            host.emit(.held(session.config, held))
            if !held, let waiting = heldCommands.removeValue(forKey: name) {
                for message in waiting { handle(message) }
            }
        case .ownership(let name, let owned):
            if !owned {
                // Another bridge took the device: it ran these commands and publishes these notifications.
                heldCommands[name] = nil
                holders[name]?.release(deliver: false)
            } else {
                holders[name]?.release(deliver: true)      // owning it ends any hold (a no-op without one)
            }
            guard ownership.set(name, owned: owned), let session = sessions[name] else { break }
            logger.notice("\(owned ? "owning" : "giving up") device \(name)")
            session.send(.machine(.ownership(owned)))
            host.emit(.ownership(session.config, owned: owned))
            board.touch()       // the STATUS= line counts owned devices
            placeDevices()      // an owned device takes a connection slot; one given up frees it
        }
    }

    // MARK: - Status

    public struct Snapshot: Sendable {
        public var devicesOnline: Int
        public var devices: Int
        /// In a fleet, the devices this bridge owns (the others are online, if at all, through another bridge).
        public var owned: Int? = nil
    }

    public nonisolated func snapshot() -> Snapshot {
        board.snapshot(ownership: ownership)
    }

    /// A turn of the core's executor, for the watchdog: if this returns, the actor is not stuck.
    public func ping() -> Bool { true }

    // MARK: - BlueZ events

    public func handle(_ event: BlueZEvent) async {
        switch event {
        case .bluezVanished:
            logger.warning("bluetoothd left the bus; waiting for it to return")
            adapterSet.update([])
            toldAdapter = toldAdapter.mapValues { _ in nil }
            for session in sessions.values { session.send(.bluez(available: false)) }
            publishAdapters()
        case .bluezAppeared:
            logger.notice("bluetoothd is on the bus; resyncing")
            for session in sessions.values { session.send(.bluez(available: true)) }
            await adaptersChanged()
            discovery.reset()
        case .adapterAdded, .adapterRemoved, .adapterChanged:
            await adaptersChanged()
        case .deviceAdded(let info):
            byAddress[info.address]?.send(.device(event))
            noteSighting(info)
        case .deviceChanged(let info, let changed):
            byAddress[info.address]?.send(.device(event))
            if changed.contains("RSSI") { noteSighting(info) }
        case .deviceRemoved(let path, let address):
            byAddress[address]?.send(.device(event))
            adapterSet.lostSight(address, adapter: Self.name(ofAdapter: Self.adapterPath(ofDevice: path)))
        case .deviceDisconnected, .gattAdded, .gattRemoved:
            break
        }
    }

    // MARK: - MQTT

    /// The broker (re)connected: what it may have lost (retained state, after a restart without persistence) is sent again.
    public func brokerConnected() {
        link.publish(topics.bridgeState, "online", qos: 1, retain: true)
        host.emit(.brokerConnected)
    }

    public func brokerDisconnected() {
        host.emit(.brokerDisconnected)
    }

    /// The MQTT client lost messages for good (docs/bridge-api.md `health`, issue: no silent loss).
    public func messagesDropped(_ report: MQTTDropReport) {
        host.emit(.messagesDropped(report))
    }

    /// A reload swapped in a new client: it starts without subscriptions.
    public func clientReplaced(_ client: MQTTClient) {
        for filter in topics.commandFilters { client.subscribe(filter, qos: .atLeastOnce, retainHandling: .doNotSend) }
        host.resubscribe(on: client)
    }

    public func handle(_ message: MQTTMessage) {
        guard let (deviceLevel, channelLevel, verb) = topics.parseCommand(message.topic) else {
            _ = host.route(message)
            return
        }
        if message.retain {
            // A retained command would run again at every restart, reconnect and reload (docs/security.md).
            if reportedRetained.count < 1024, reportedRetained.insert(message.topic).inserted {
                reject(message, "retained command ignored (commands must not be published with the retain flag)")
            }
            return
        }
        guard let device = config.devices.first(where: { $0.topicLevel == deviceLevel }),
              let session = sessions[device.name] else {
            return reject(message, "unknown device \(deviceLevel)")
        }
        // Fleet: the owner executes it (docs/fleet.md); every bridge receives it, so the others stay silent.
        guard ownership.owns(device.name) else { return }
        if holders[device.name]?.isHolding == true {
            // Run once the hold ends if the device is still ours; dropped if another bridge took it (it got the
            // command too). Bounded: a hold lasts the 2 s a bridge listens after a broker connect.
            if heldCommands[device.name, default: []].count < Self.maxHeldCommands {
                heldCommands[device.name, default: []].append(message)
            } else {
                reject(message, "device \(device.name): too many commands while its ownership is being confirmed")
            }
            return
        }
        guard let channel = device.channels.first(where: { $0.topicLevel == channelLevel }) else {
            return reject(message, "unknown channel \(channelLevel) on device \(device.name)")
        }
        if verb == .set {
            guard channel.writable else {
                return reject(message, "channel \(device.name)/\(channel.name) is not writable", payload: true)
            }
            guard !message.payload.isEmpty else {
                return reject(message, "empty payload for \(device.name)/\(channel.name); nothing written")
            }
            guard message.payload.count <= Self.maxCommandBytes else {
                return reject(message, "payload of \(message.payload.count) bytes is over the \(Self.maxCommandBytes)-byte limit for a command")
            }
        }
        session.send(.command(CommandRequest(channel: channel, verb: verb, payload: message.payload,
                                             topic: message.topic, replies: replies(of: message))))
    }

    private func reject(_ message: MQTTMessage, _ reason: String, payload: Bool = false) {
        host.emit(.rejected(CommandRejection(topic: message.topic, reason: reason,
                                             payload: payload ? message.payload : nil,
                                             replies: replies(of: message))))
    }

    /// An MQTT 5 request/response command: the result goes to its Response Topic, if `ReplyTopicRule` allows it
    /// (never the bridge's own topics or the discovery prefix).
    func replies(of message: MQTTMessage) -> [ReplyTarget] {
        ReplyTopicRule(config: config).replies(of: message)
    }

    /// A characteristic value is at most 512 bytes; a text command is written in MTU-sized chunks, one GATT
    /// operation each. Far larger payloads would hold the device's command queue (and memory) for many seconds.
    static let maxCommandBytes = 16 * 1024

    // MARK: - Reload

    /// Applies a new config. Sessions of devices that were removed or changed stop first (so no command reaches a
    /// session being torn down), their retained topics are cleared, then the new config is installed and new
    /// sessions start; devices whose config did not change keep their session and connection.
    public func apply(_ new: BridgeConfig, mqttReplaced: Bool = false) async {
        let old = config
        let oldTopics = BridgeTopics(settings: old.mqtt)
        let newByName = Dictionary(new.devices.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let baseChanged = old.mqtt.baseTopic != new.mqtt.baseTopic
        let leaving = old.devices.filter { baseChanged || newByName[$0.name] != $0 }
        await withDiscardingTaskGroup { group in
            for device in leaving {
                guard let session = sessions.removeValue(forKey: device.name) else { continue }
                byAddress[device.address] = nil
                group.addTask { await session.stop() }
            }
        }
        for device in leaving {
            board.remove(device.name)
            adapterSet.forget(device)
            toldAdapter[device.name] = nil
            toldRoom[device.name] = nil
            logger.notice("device \(device.name) stopped (removed or changed)")
            // Fleet: the retained topics of a device another bridge owns are that bridge's (docs/fleet.md).
            guard ownership.owns(device.name) else { continue }
            for channel in device.channels where channel.retain {
                link.publish(oldTopics.state(device, channel), "", qos: 1, retain: true)
            }
            host.emit(.deviceRemoved(device, topics: oldTopics))
        }
        config = new
        if ownership.setFleet(new.fleet != nil) {
            // Joining a fleet gives every device up until the fleet says otherwise; leaving takes them all.
            for session in sessions.values { session.send(.machine(.ownership(new.fleet == nil))) }
        }
        if adapterSet.settings != new.bluetooth {
            adapterSet.settings = new.bluetooth
            adapterSet.update(await bluez.adapters())
        }
        let available = await bluez.isAvailable
        for device in new.devices where sessions[device.name] == nil {
            startSession(device, bluezAvailable: available)
            logger.notice("device \(device.name) started")
        }
        if baseChanged && !mqttReplaced {
            for filter in oldTopics.commandFilters { link.client.unsubscribe(filter) }
        }
        // A new client gets its subscriptions from `clientReplaced`; an unchanged one keeps them (subscribing again
        // would replay retained messages).
        if baseChanged && !mqttReplaced { subscribeCommands() }
        if baseChanged || oldTopics.bridgeState != topics.bridgeState {
            link.publish(oldTopics.bridgeState, "", qos: 1, retain: true)
            link.publish(topics.bridgeState, "online", qos: 1, retain: true)
        }
        host.emit(.configApplied(old: old, new: new))
        placeDevices()
        board.touch()
    }
}

/// Which devices are online, updated synchronously from the session loops, so the STATUS line and the watchdog do
/// not need a turn of the core's actor to know.
final class AvailabilityBoard: Sendable {
    private let online = Mutex<[String: Bool]>([:])
    private let changed: @Sendable () -> Void

    init(changed: @escaping @Sendable () -> Void) {
        self.changed = changed
    }

    func set(_ device: String, online value: Bool) {
        online.withLock { $0[device] = value }
        changed()
    }

    func register(_ device: String) {
        online.withLock { map in if map[device] == nil { map[device] = false } }
    }

    func remove(_ device: String) {
        online.withLock { $0[device] = nil }
    }

    func touch() { changed() }

    /// In a fleet, `owned` counts the saved devices this bridge owns.
    func snapshot(ownership: OwnershipBoard) -> BridgeCore.Snapshot {
        online.withLock { map in
            BridgeCore.Snapshot(devicesOnline: map.values.filter { $0 }.count, devices: map.count,
                                owned: ownership.isFleet ? map.keys.filter(ownership.owns).count : nil)
        }
    }
}
