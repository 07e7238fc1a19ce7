import BlueZ
import Bluetooth
import Config
import Logging
import MQTT
import Synchronization

/// Owns the device sessions and the features. `run()` consumes one inbox (`CoreInput`: BlueZ facts, broker state,
/// feature requests, adapter health, config changes) in order; the decisions about config changes and the fleet's
/// holds are the pure `CoreMachine`'s, which this turns into effects. Commands do not pass through here: the
/// `CommandRouter` takes them to their session on the thread that received them, from the table this publishes after
/// each change. Nothing the sessions and features start outlives `run()`.
///
/// Every entry point only posts to the inbox, so while the loop awaits (a session stopping, a BlueZ read) no other
/// input can see or change the core's state half way: a reload and a bridge API change are applied one after the
/// other, never interleaved.
public actor BridgeCore {
    var machine: CoreMachine
    let bluez: any BluetoothPort
    let link: any BrokerLink
    let logger: Logger
    let host: FeatureHost
    /// Attached at init, so events emitted before `run()` (a fast first broker connect) wait in their streams.
    private let features: [(feature: any BridgeFeature, events: FeatureEvents, context: FeatureContext)]
    let gate = ConnectGate<String>()
    let discovery: any DiscoveryPort
    /// Discovery for `adapter: any` devices: through every usable adapter (see `AnyAdapterDiscovery`).
    let anyDiscovery: AnyAdapterDiscovery
    var sessions: [String: DeviceSession] = [:]            // by device name
    var byAddress: [BluetoothAddress: DeviceSession] = [:]
    // Adapters (docs/adapters.md): see BridgeCore+Adapters.swift.
    /// Where each device is placed and who was told (pure; `Adapters/Placement`).
    var placement: Placement
    var adapterSet: AdapterSet {
        get { placement.set }
        _modify { yield &placement.set }
    }
    var armedWakes: [String: ContinuousClock.Instant] = [:]
    /// Passive broadcasts: the adapters discovery is kept on for them, and whether every report is asked for.
    var broadcastScan: (adapters: Set<String>, repeats: Bool) = ([], false)
    /// Fleet: the passive devices' RSSI reports the ownership machines were told (see `PassiveSightings`).
    var passiveSightings = PassiveSightings()
    let inbox: AsyncStream<CoreInput>
    let sink: AsyncStream<CoreInput>.Continuation
    let adapterJobs: (stream: AsyncStream<Job>, continuation: AsyncStream<Job>.Continuation)
    /// The read model: what the bridge knows, for readers outside the loop.
    let store: StateStore
    private let spawns: AsyncStream<DeviceSession>
    let spawner: AsyncStream<DeviceSession>.Continuation
    /// Sessions pair only once the pairing agent is registered (nil: no agent feature, pair at once).
    let agentReadiness: AgentReadiness?
    /// Fleet: each session's values go through one of these; it carries the machine's holds to the value hot path.
    var holders: [String: HoldingPublisher] = [:]
    /// The running config and its generation, for readers outside the loop (the reload, the bridge API).
    let published: Mutex<(config: BridgeConfig, generation: UInt64)>
    let router: CommandRouter
    /// Answers owed to the changes requested, by change.
    var replies: [CoreMachine.ChangeID: @Sendable (Result<DeviceConfig?, DeviceChangeError>?) -> Void] = [:]
    var nextChange: CoreMachine.ChangeID = 0
    var stopped = false

    public init(config: BridgeConfig, bluez: any BluetoothPort, link: any BrokerLink, discovery: any DiscoveryPort,
                features: [any BridgeFeature], logger: Logger, agentReadiness: AgentReadiness? = nil,
                wedgeWindow: Duration = BridgeCore.wedgeWindow(), statusChanged: @escaping @Sendable () -> Void = {}) {
        self.machine = CoreMachine(config: config)
        self.published = Mutex((config, 0))
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
        self.placement = Placement(set: AdapterSet(settings: config.bluetooth, window: wedgeWindow))
        let host = FeatureHost(link: link)
        self.host = host
        self.features = features.map { feature in
            let (events, context) = host.attach(broadcasts: feature.wantsBroadcasts)
            return (feature, events, context)
        }
        self.store = StateStore(countsChanged: statusChanged)
        (spawns, spawner) = AsyncStream.makeStream(of: DeviceSession.self)
        let (inbox, sink) = AsyncStream.makeStream(of: CoreInput.self)
        (self.inbox, self.sink) = (inbox, sink)
        router = CommandRouter(routes: .init(table: CommandTable(config: config, running: []), targets: [:],
                                             fleet: FleetView(fleet: config.fleet != nil)),
                               host: host,
                               held: { device, message in sink.yield(.heldCommand(device: device, message)) })
    }

    var config: BridgeConfig { machine.config }

    /// The running config and how many changes made it (a reload that read its files at generation `g` has the
    /// bridge API changes after `g` replayed on top, `CoreMachine`), for readers outside the loop.
    public nonisolated var running: (config: BridgeConfig, generation: UInt64) { published.withLock { $0 } }
    var topics: BridgeTopics { BridgeTopics(settings: config.mqtt) }

    // MARK: - Life

    /// Runs the features, the sessions and the loop until `shutdown()`. Sessions for the configured devices start at
    /// once; devices run independently: one that never shows up delays nobody.
    public func run() async {
        let requests = host.requestStream, sink = self.sink
        host.core.set(self)
        await withDiscardingTaskGroup { group in
            for (feature, events, context) in features {
                group.addTask { [host] in
                    await feature.run(events, context)
                    // A feature that ended takes nothing more, and what it left counts no more against the backlog
                    // the MQTT pump waits on (`FeatureBacklog`).
                    host.detach(context)
                    for await delivery in events.deliveries { host.backlog.release(delivery.bytes) }
                }
            }
            group.addTask {
                for await request in requests { sink.yield(.request(request)) }
            }
            group.addTask { await self.adapterLoops() }
            group.addTask { await self.loop() }
            for await session in spawns {
                group.addTask { await session.run() }
            }
        }
    }

    private func loop() async {
        await start()
        var inputs = inbox.makeAsyncIterator()
        while !stopped, let input = await inputs.next() {
            await handle(input)
        }
        // The inbox is finished; what was posted before that still gets its answer, so no caller waits for good.
        while let input = await inputs.next() {
            switch input {
            case .change(_, let reply): reply(nil)
            case .clientReplaced(_, let done), .shutdown(let done): done()
            case .ping(let answer): answer()
            default: break
            }
        }
    }

    private func start() async {
        adapterSet.update(await bluez.adapters())
        adapterSet.watch(connecting)
        for device in await bluez.devices(adapter: nil) where device.rssi != nil { noteSighting(device) }
        if adapterSet.present.isEmpty { logger.warning("no Bluetooth adapter yet; waiting for one") }
        let available = await bluez.isAvailable
        store.update { state in
            state.install(config, generation: machine.generation)
            state.bluezAvailable = available
        }
        for device in config.devices { await startSession(device, bluezAvailable: available) }
        publishRoutes()
        subscribeCommands()
        host.emit(.configApplied(old: nil, new: config))
        placeDevices()
    }

    private func handle(_ input: CoreInput) async {
        switch input {
        case .bluez(let event): await bluezEvent(event)
        case .broker(let connected):
            if connected { link.publish(topics.bridgeState, "online", qos: 1, retain: true) }
            store.update { $0.brokerConnected = connected }
        case .dropped(let report): host.emit(.messagesDropped(report))
        case .clientReplaced(let client, let done):
            for filter in topics.commandFilters { client.subscribe(filter, qos: .atLeastOnce, retainHandling: .doNotSend) }
            host.resubscribe(on: client)
            done()
        case .request(let request): await perform(request)
        case .adapter(let input): adapterInput(input)
        case .change(let change, let reply):
            let id = nextChange
            nextChange += 1
            replies[id] = reply
            await run(machine.handle(.requested(id, change)))
        case .sessionsStopped(let id): await run(machine.handle(.stopped(id)))
        case .heldCommand(let device, let message): holdCommand(message, device: device)
        case .ping(let answer): answer()
        case .shutdown(let done):
            await stopAll()
            done()
        }
    }

    /// Stops every session (offline, disconnect; bounded, since bluetoothd may not answer), tells the features, and
    /// lets `run()` return once they are done. Changes still waiting are answered "stopping".
    private func stopAll() async {
        let all = Array(sessions.values)
        sessions = [:]
        byAddress = [:]
        publishRoutes()
        let finished = await finish(within: .seconds(3)) {
            await withDiscardingTaskGroup { group in
                for session in all { group.addTask { await session.stop() } }
            }
        }
        if !finished { logger.warning("devices did not disconnect in time") }
        stopped = true
        sink.finish()
        for reply in replies.values { reply(nil) }
        replies = [:]
        host.emit(.stopping)
        host.finish()
        store.finish()
        finishAdapterLoops()
        spawner.finish()
    }

    /// With MQTT 5 the broker sends no retained message on these (retain handling 2); on 3.1.1 the router drops them.
    func subscribeCommands() {
        for filter in topics.commandFilters { link.subscribe(filter, retainHandling: .doNotSend) }
    }

    /// After every change of the config or the sessions: what the router and outside readers see.
    func publishRoutes() {
        router.publish(.init(table: CommandTable(config: config, running: Set(sessions.keys)), targets: sessions,
                             fleet: machine.fleet))
        if store.current.fleetView != machine.fleet { store.update { $0.fleet(machine.fleet) } }
        published.withLock { $0 = (config, machine.generation) }
    }

    // MARK: - Entry points (any thread; they only post to the inbox)

    public nonisolated func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if case .terminated = sink.yield(.shutdown(done: { continuation.resume() })) { continuation.resume() }
        }
    }

    public nonisolated func handle(_ event: BlueZEvent) {
        sink.yield(.bluez(event))
    }

    /// The broker (re)connected: what it may have lost (retained state, after a restart without persistence) is sent again.
    /// The features hear of it at once, from the caller's task: the caller (`MQTTService`) hands on the messages
    /// of the connection after this, and a feature must see them after the connect, not before (see `FeatureHost`).
    public nonisolated func brokerConnected() {
        host.emit(.brokerConnected)
        sink.yield(.broker(connected: true))
    }

    public nonisolated func brokerDisconnected() {
        host.emit(.brokerDisconnected)
        sink.yield(.broker(connected: false))
    }

    /// The MQTT client lost messages for good (docs/bridge-api.md `health`, issue: no silent loss).
    public nonisolated func messagesDropped(_ report: MQTTDropReport) {
        sink.yield(.dropped(report))
    }

    /// A reload swapped in a new client: it starts without subscriptions.
    public nonisolated func clientReplaced(_ client: MQTTClient) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if case .terminated = sink.yield(.clientReplaced(client, done: { continuation.resume() })) {
                continuation.resume()
            }
        }
    }

    /// Commands go to their session through the router; everything else to the features.
    public nonisolated func handle(_ message: MQTTMessage) {
        router.route(message)
    }

    /// Returns once the features have handled all but `FeatureHost.backlogLimit` bytes of the broker messages routed
    /// to them; the MQTT pump waits on it, so a flood waits (and is dropped) in the client's bounded inbox.
    public nonisolated func featuresCaughtUp() async {
        await host.backlog.belowLimit()
    }

    /// A turn of the core's loop, for the watchdog: if this returns, the loop is not stuck.
    public nonisolated func ping() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            if case .terminated = sink.yield(.ping({ continuation.resume(returning: true) })) {
                continuation.resume(returning: true)
            }
        }
    }

    // MARK: - Status

    public struct Snapshot: Sendable, Equatable {
        public var devicesOnline: Int
        public var devices: Int
        /// In a fleet, the devices this bridge owns (the others are online, if at all, through another bridge).
        public var owned: Int? = nil
    }

    public nonisolated func snapshot() -> Snapshot {
        store.current.counts
    }

    /// What the bridge knows now (docs/dev/ARCHITECTURE.md, "The read model").
    public nonisolated var state: BridgeState { store.current }

    /// A running device's last published values, by channel in config order; nil when it has no session (unknown,
    /// or passive: a broadcaster's readings are published by the adverts feature and retained on the broker).
    public nonisolated func latestValues(of device: String) -> [(channel: String, payload: String)]? {
        router.session(device)?.latestValues()
    }

    /// The state now, then after every change (a slow reader gets only the newest); ends when the bridge stops.
    public nonisolated func stateChanges() -> AsyncStream<BridgeState> { store.changes() }
}
