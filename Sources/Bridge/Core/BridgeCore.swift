import BlueZ
import Bluetooth
import BridgeAdapters
import BridgeCommands
import BridgeFeatureHost
import BridgeModel
import BridgePairing
import BridgeSession
import Config
import Logging
import MQTT
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Owns the device sessions and the features. `run()` consumes one inbox (`CoreInput`: BlueZ facts, broker state,
/// feature requests, adapter health, config changes) in order; every decision is the pure `CoreMachine`'s, and this
/// type only carries its actions out (BridgeCore+Effects.swift) over narrow ports (`CorePorts`). Commands do not pass
/// through here: the `CommandRouter` takes them to their session on the thread that received them, from the table
/// this publishes after each change. Nothing the sessions and features start outlives `run()`.
///
/// Every entry point only posts to the inbox, and the loop awaits nothing but its next input (and, once, the
/// sessions' end at shutdown): BlueZ reads and recovery steps run as jobs that post their results back, so no input
/// can see or change the core's state half way.
public actor BridgeCore {
    var machine: CoreMachine
    /// The running sessions, by name and address, each with the gate its values pass (fleet holds).
    var sessions = SessionTable()
    /// Answers owed to the changes requested.
    var replies = PendingReplies()

    let bluez: any BluetoothPort
    let link: any BrokerLink
    let discovery: any DiscoveryPort
    let logger: Logger
    let host: FeatureHost
    /// Attached at init, so events emitted before `run()` (a fast first broker connect) wait in their streams.
    private let features: [(feature: any BridgeFeature, events: FeatureEvents, context: FeatureContext)]
    let inbox: AsyncStream<CoreInput>
    let sink: AsyncStream<CoreInput>.Continuation
    /// Timers, BlueZ reads, recovery steps and session stops, run beside the loop; their results come back as inputs.
    let jobs: CoreJobs
    private let jobQueue: AsyncStream<Job>
    let factory: SessionFactory
    /// The read model: what the bridge knows, for readers outside the loop.
    let store: StateStore
    private let spawns: AsyncStream<DeviceSession>
    let spawner: AsyncStream<DeviceSession>.Continuation
    /// The running config and its generation, for readers outside the loop (the reload, the bridge API).
    let published: Mutex<(config: BridgeConfig, generation: UInt64)>
    let router: CommandRouter

    public init(config: BridgeConfig, bluez: any BluetoothPort, link: any BrokerLink, discovery: any DiscoveryPort,
                features: [any BridgeFeature], logger: Logger, agentReadiness: AgentReadiness? = nil,
                wedgeWindow: Duration = BridgeCore.wedgeWindow(), statusChanged: @escaping @Sendable () -> Void = {}) {
        self.machine = CoreMachine(config: config, wedgeWindow: wedgeWindow,
                                   rawAdvertisementConsumer: features.contains { $0.wantsRawAdvertisements })
        self.published = Mutex((config, 0))
        self.bluez = bluez
        self.link = link
        self.logger = logger
        self.discovery = discovery
        let (inbox, sink) = AsyncStream.makeStream(of: CoreInput.self)
        (self.inbox, self.sink) = (inbox, sink)
        let (jobQueue, queue) = AsyncStream.makeStream(of: Job.self)
        self.jobQueue = jobQueue
        jobs = CoreJobs(queue: queue, sink: sink, bluez: bluez, discovery: discovery, logger: logger)
        let gate = ConnectGate<String>()
        let host = FeatureHost(link: link, peripherals: PeripheralAccess(gatt: bluez, gate: gate))
        self.host = host
        self.features = features.map { feature in
            let (events, context) = host.attach(broadcasts: feature.wantsBroadcasts,
                                                rawAdvertisements: feature.wantsRawAdvertisements)
            return (feature, events, context)
        }
        let store = StateStore(countsChanged: statusChanged)
        self.store = store
        (spawns, spawner) = AsyncStream.makeStream(of: DeviceSession.self)
        let router = CommandRouter(routes: .init(table: CommandTable(config: config, running: []), targets: [:],
                                                 fleet: FleetView(fleet: config.fleet != nil)),
                                   host: host,
                                   held: { device, message in sink.yield(.heldCommand(device: device, message)) })
        self.router = router
        let anyDiscovery = AnyAdapterDiscovery(inner: discovery, schedule: { delay, body in
            queue.yield {
                try? await Task.sleep(for: delay)
                if !Task.isCancelled { body() }
            }
        })
        factory = SessionFactory(bluez: bluez, link: link, discovery: discovery, anyDiscovery: anyDiscovery,
                                 gate: gate, logger: logger, agentReadiness: agentReadiness, host: host, store: store,
                                 router: router, sink: sink)
    }

    var config: BridgeConfig { machine.config }
    var topics: BridgeTopics { BridgeTopics(settings: config.mqtt) }

    /// The wedge rule's window: 60 s (docs/adapters.md). `GATTBRIDGE_WEDGE_WINDOW` (seconds) shortens it for the bench.
    public static func wedgeWindow(_ text: String? = getenv("GATTBRIDGE_WEDGE_WINDOW").map { String(cString: $0) }) -> Duration {
        if let text, let seconds = Double(text), seconds > 0, seconds <= 600 {
            return .milliseconds(Int64(seconds * 1000))
        }
        return .seconds(60)
    }

    // MARK: - Life

    /// Runs the features, the sessions, the jobs and the loop until `shutdown()`. Sessions for the configured devices
    /// start at once; devices run independently: one that never shows up delays nobody.
    public func run() async {
        let requests = host.requestStream, sink = self.sink, jobs = self.jobQueue, outcomes = discovery.outcomes
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
            group.addTask {
                await withDiscardingTaskGroup { jobGroup in
                    jobGroup.addTask {
                        for await outcome in outcomes {
                            sink.yield(.adapter(.operation(adapterPath: outcome.adapter, error: outcome.error)))
                        }
                    }
                    for await job in jobs { jobGroup.addTask(operation: job) }
                    jobGroup.cancelAll()
                }
            }
            group.addTask { await self.loop() }
            for await session in spawns {
                group.addTask { await session.run() }
            }
        }
    }

    private func loop() async {
        // Before the loop: what BlueZ knows at start, so the first sessions start on their adapters.
        let adapters = await bluez.adapters(), sighted = await bluez.devices(adapter: nil)
        let available = await bluez.isAvailable
        store.update { state in
            state.install(config, generation: machine.generation)
            state.bluezAvailable = available
        }
        run(machine.handle(.began(adapters: adapters, sighted: sighted, bluezAvailable: available)))
        var inputs = inbox.makeAsyncIterator()
        var stopped = false
        while !stopped, let input = await inputs.next() {
            stopped = await handle(input)
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

    /// One input; true once the core has stopped.
    private func handle(_ input: CoreInput) async -> Bool {
        switch input {
        case .bluez(let event): run(machine.handle(.bluez(event)))
        case .adaptersRead(let list): run(machine.handle(.adaptersRead(list)))
        case .adapter(let input): run(machine.handle(.adapter(input)))
        case .broker(let connected):
            if connected { link.publish(topics.bridgeState, "online", qos: 1, retain: true) }
            store.update { $0.brokerConnected = connected }
        case .dropped(let report): host.emit(.messagesDropped(report))
        case .clientReplaced(let client, let done):
            for filter in topics.commandFilters { client.subscribe(filter, qos: .atLeastOnce, retainHandling: .doNotSend) }
            host.resubscribe(on: client)
            done()
        case .request(let request): perform(request)
        case .change(let change, let reply):
            run(machine.handle(.requested(replies.add(reply), change)))
        case .sessionsStopped(let id): run(machine.handle(.stopped(id)))
        case .heldCommand(let device, let message): holdCommand(message, device: device)
        case .ping(let answer): answer()
        case .shutdown(let done):
            await stopAll()
            done()
            return true
        }
        return false
    }

    /// Stops every session (offline, disconnect; bounded, since bluetoothd may not answer), tells the features, and
    /// lets `run()` return once they are done. Changes still waiting are answered "stopping".
    private func stopAll() async {
        let all = sessions.removeAll()
        publishRoutes()
        let finished = await finish(within: .seconds(3)) {
            await withDiscardingTaskGroup { group in
                for session in all { group.addTask { await session.stop() } }
            }
        }
        if !finished { logger.warning("devices did not disconnect in time") }
        sink.finish()
        replies.answerAll(nil)
        host.emit(.stopping)
        host.finish()
        store.finish()
        jobs.queue.finish()
        spawner.finish()
    }

    /// With MQTT 5 the broker sends no retained message on these (retain handling 2); on 3.1.1 the router drops them.
    func subscribeCommands() {
        for filter in topics.commandFilters { link.subscribe(filter, retainHandling: .doNotSend) }
    }

    /// After every change of the config or the sessions: what the router and outside readers see.
    func publishRoutes() {
        router.publish(.init(table: CommandTable(config: config, running: Set(sessions.byName.keys)),
                             targets: sessions.byName, fleet: machine.fleet))
        if store.current.fleetView != machine.fleet { store.update { $0.fleet(machine.fleet) } }
        published.withLock { $0 = (config, machine.generation) }
    }
}
