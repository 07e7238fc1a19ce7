import BlueZ
import Bluetooth
import Codecs
import Config
import Logging
import MQTT

/// The bridge API (docs/bridge-api.md): requests on `B/bridge/request/<verb>` answered on `B/bridge/response/<verb>` (and an
/// MQTT 5 Response Topic), the retained `B/bridge/devices` and `B/bridge/info`. Device changes go through the core
/// (`FeatureContext.updateDevices`) and are saved as drop-ins; `scan` and `inspect` take seconds, so they run in child
/// tasks of the feature while other requests are answered.
///
/// A device's `state` in `B/bridge/devices`: `online` while its availability is online; `offline` once it reported a
/// disconnection or error since it was last online; `connecting` before either (just started or added).
///
/// In a fleet (docs/fleet.md, config `bridge:`) every bridge receives every shared request and writes nothing shared
/// unless the `FleetDirectory` says it is the one: the shared requests get one answer, the shared retained topics
/// one writer. Each bridge also serves `B/bridge/<id>/request/<verb>` (answered on `B/bridge/<id>/response/<verb>`)
/// and keeps its own view on `B/bridge/<id>/devices` and `B/bridge/<id>/info`.
struct BridgeAPIFeature: BridgeFeature {
    let version: String
    let started: ContinuousClock.Instant
    /// BlueZ's adapters and the one-shot tools; the broker connection's health. Narrow, on purpose: the feature
    /// holds no `BlueZClient` or `MQTTLink`.
    let bluetooth: any BluetoothTools
    let broker: any BrokerStatus
    let logger: Logger
    /// What the passive half's bounds turned away (`health`).
    var adverts = AdvertCounts()
    /// At most this many scans and inspections at once; more are refused rather than queued without bound.
    static let maxLongRequests = 4
    static let inspectTimeout: Duration = .seconds(20)
    /// Fleet: after a broker (re)connect, how long the retained bridge states have to arrive before this bridge may
    /// take itself for the coordinator; the ownership machine waits as long before claiming, for the same reason.
    static let listenTime = OwnershipMachine.listenTime
    /// Fleet: shared requests that arrive before that are held, at most this many.
    static let maxHeld = 64
    /// Requests that may wait for the API's loop; beyond, a flood's requests are dropped (`RequestBacklog`).
    static let maxQueuedRequests = 256
    /// The shortest interval between two log lines about dropped requests.
    static let dropLogPeriod: Duration = .seconds(5)

    enum Input: Sendable {
        case event(CoreEvent)
        /// A scan or inspection finished.
        case longDone
        /// The listen time after a broker connect (or after joining a fleet) with this token ended.
        case settle(UInt64)
    }

    /// A scan or inspection to run on a child task, and where its answer goes.
    struct LongRequest: Sendable {
        let request: BridgeRequest
        let message: MQTTMessage
        let responseTopic: String
    }

    func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        var state = APIState()
        var longRequests = 0
        var sequence = 0
        let (inputs, input) = AsyncStream.makeStream(of: Input.self)
        await withDiscardingTaskGroup { group in
            let backlog = RequestBacklog(limit: Self.maxQueuedRequests)
            let busy = BusyAnswers()
            let logger = logger
            group.addTask {
                var nextLog = ContinuousClock.now
                for await event in events {
                    if case .message(let message) = event, RequestBacklog.isRequest(message.topic) {
                        guard backlog.admit() else {
                            busy.answer(message, queued: Self.maxQueuedRequests, context: context)
                            if ContinuousClock.now >= nextLog {
                                nextLog = .now + Self.dropLogPeriod
                                logger.warning("bridge API busy: \(backlog.takeDropped()) request(s) turned away")
                            }
                            continue
                        }
                    }
                    input.yield(.event(event))
                }
                input.finish()
            }
            for await next in inputs {
                if case .event(.message(let message)) = next, RequestBacklog.isRequest(message.topic),
                   backlog.taken() == 0 {
                    let dropped = backlog.takeDropped()
                    if dropped > 0 { logger.warning("bridge API busy: \(dropped) request(s) turned away") }
                }
                var received: [(MQTTMessage, verb: String, shared: Bool)] = []
                var listen = false
                switch next {
                case .longDone:
                    longRequests -= 1
                case .settle(let token):
                    guard token == state.settleToken, state.fleet != nil else { break }
                    state.fleet?.settle()
                    await refreshShared(state: &state, context: context)
                    let held = state.held
                    state.held = []
                    for message in held {
                        if let (verb, shared) = state.verb(of: message.topic) { received.append((message, verb, shared)) }
                    }
                case .event(.configApplied(_, let config)):
                    listen = await configure(config, state: &state, context: context)
                case .event(.brokerConnected):
                    state.lastDevices = nil
                    state.lastOwnDevices = nil
                    if state.fleet != nil {
                        // The retained states come again; until they did, this bridge speaks only for itself.
                        state.fleet?.unsettle()
                        state.sharedPublished = false
                        listen = true
                    }
                    await publishInfo(state: state, context: context)
                    await publishDevices(state: &state, context: context)
                case .event(.availability(let device, let online)):
                    state.states[device.name] = online ? .online : (state.states[device.name] == .online ? .offline : state.states[device.name] ?? .connecting)
                    await publishDevices(state: &state, context: context)
                case .event(.deviceEvent(let device, let event)):
                    switch event {
                    case .disconnected, .error:
                        state.states[device.name] = .offline
                    case .connected, .reconnectAttempt:
                        break
                    }
                    await publishDevices(state: &state, context: context)
                case .event(.deviceRemoved(let device, _)):
                    state.states[device.name] = nil
                case .event(.ownership(let device, let owned)):
                    guard state.fleet != nil else { break }
                    state.fleet?.setOwned(device.topicLevel, owned)
                    await publishDevices(state: &state, context: context)
                case .event(.adapters(let statuses, let placement)):
                    let namesChanged = statuses.map(\.name) != state.adapters?.map(\.name)
                    state.adapters = statuses
                    state.placement = placement
                    if namesChanged { await publishInfo(state: state, context: context) }
                    await publishDevices(state: &state, context: context)
                case .event(.message(let message)):
                    if let (verb, shared) = state.verb(of: message.topic) {
                        received.append((message, verb, shared))
                    } else if await fleetFact(message, state: &state) {
                        await refreshShared(state: &state, context: context)
                        await publishDevices(state: &state, context: context)
                    }
                case .event(.stopping):
                    group.cancelAll()
                case .event:
                    break
                }
                if listen {
                    state.settleToken &+= 1
                    let token = state.settleToken
                    group.addTask {
                        try? await Task.sleep(for: Self.listenTime)
                        input.yield(.settle(token))
                    }
                }
                busy.update(state.config.map { config in
                    BusyAnswers.Routing(state: APIState.Topics(config: config), replies: ReplyTopicRule(config: config),
                                        answersShared: state.fleet == nil || state.sharedPublished)
                })
                for (message, verb, shared) in received {
                    guard let long = await receive(message, verb: verb, shared: shared, state: &state,
                                                   longRequests: longRequests, context: context) else { continue }
                    longRequests += 1
                    sequence += 1
                    let requester = "bridge-api/\(long.request.verb.rawValue)/\(sequence)"
                    let config = state.config
                    group.addTask {
                        let response = await self.long(long.request, requester: requester, config: config)
                        answer(long.message, on: long.responseTopic, response, context: context)
                        input.yield(.longDone)
                    }
                }
            }
        }
    }

    /// One request off the broker: held (a shared one in a fleet that has not settled), left to another bridge of
    /// the fleet, served and answered here, or returned to run on a child task.
    func receive(_ request: MQTTMessage, verb: String, shared: Bool, state: inout APIState,
                         longRequests: Int, context: FeatureContext) async -> LongRequest? {
        var message = request
        if let topic = message.responseTopic, let config = state.config, !ReplyTopicRule(config: config).allows(topic) {
            // Answered on B/bridge/response/<verb> only: the requester's topic is one the bridge does not answer on.
            logger.warning("response topic \(ReportText.escaped(topic, maxBytes: 128)) of a bridge request ignored")
            message.responseTopic = nil
        }
        if message.retain {
            // A retained request would run again at every restart and reconnect.
            logger.warning("retained bridge request on \(message.topic) ignored")
            return nil
        }
        guard let responseTopic = state.responseTopic(verb, shared: shared) else { return nil }
        let parsed = BridgeRequest.parse(verb: verb, payload: message.payload)
        var route = FleetDirectory.Route.answer
        if shared, let fleet = state.fleet {
            guard fleet.settled else {
                if state.held.count < Self.maxHeld {
                    state.held.append(message)
                } else {
                    logger.warning("bridge request on \(message.topic) dropped: the fleet's bridge states have not arrived yet")
                }
                return nil
            }
            let request = try? parsed.get()
            var level: String?
            if case .address(let address)? = request?.parameters {
                level = state.config?.devices.first(where: { $0.address == address })?.topicLevel
            }
            route = fleet.route(request?.verb, inspecting: level)
        }
        switch (parsed, route) {
        case (_, .ignore):
            return nil
        case (.failure(let failure), _):
            if route == .answer {
                answer(message, on: responseTopic, BridgeResponse.error(failure.message, transaction: failure.transaction),
                       context: context)
            }
            return nil
        case (.success(let request), _):
            switch request.parameters {
            case .scan, .address:
                guard longRequests < Self.maxLongRequests else {
                    answer(message, on: responseTopic, BridgeResponse.error("busy: \(Self.maxLongRequests) scans or inspections are running", transaction: request.transaction), context: context)
                    return nil
                }
                return LongRequest(request: request, message: message, responseTopic: responseTopic)
            default:
                let response = await serve(request, state: &state, context: context)
                if route == .answer {
                    answer(message, on: responseTopic, response, context: context)
                } else {
                    // Another bridge of the fleet answers; this one's outcome goes to its log.
                    let outcome = try? JSONValue.parse(response)
                    logger.notice("fleet request \(request.verb.rawValue) applied here: \(outcome?["error"]?.stringValue ?? "ok")")
                }
                return nil
            }
        }
    }

    // MARK: - Requests

    func serve(_ request: BridgeRequest, state: inout APIState, context: FeatureContext) async -> String {
        let transaction = request.transaction
        switch request.parameters {
        case .none where request.verb == .devices:
            return BridgeResponse.ok(await devicesJSON(state), transaction: transaction)
        case .none:
            return BridgeResponse.ok(await health(state), transaction: transaction)
        case .device(let object):
            return await add(object, transaction: transaction, state: &state, context: context)
        case .name(let name) where request.verb == .deviceRearm:
            return await rearm(name, transaction: transaction, context: context)
        case .name(let name):
            return await remove(name, transaction: transaction, context: context)
        case .scan, .address:
            return BridgeResponse.error("internal: long request served inline", transaction: transaction)
        }
    }

    /// The drop-in goes first, then the device: a reload between the two reads the files without it and stops the
    /// device itself, and the core's answer to the change that follows is then "unknown device", which is this
    /// removal done. A drop-in that cannot be deleted leaves the device running.
    func remove(_ name: String, transaction: JSONValue?, context: FeatureContext) async -> String {
        guard let config = await context.currentConfig() else {
            return BridgeResponse.error("the bridge is stopping", transaction: transaction)
        }
        if case .failure(let error) = DeviceChange.remove(name: name).applied(to: config) {
            return BridgeResponse.error(error.description, transaction: transaction)
        }
        guard let device = config.devices.first(where: { $0.name == name }) else {
            return BridgeResponse.error(DeviceChangeError.unknownDevice(name).description, transaction: transaction)
        }
        do throws(DropInStore.Failure) {
            // An auto device (docs/adverts.md) was never saved: nothing to delete.
            if device.source.kind != .advert { try DropInStore.delete(device.source.file) }
        } catch {
            logger.error("device \(device.name) not removed: its drop-in stays: \(error)")
            return BridgeResponse.error("device \(device.name) not removed: \(error)", transaction: transaction)
        }
        switch await context.updateDevices(.remove(name: name)) {
        case nil:
            return BridgeResponse.error("the bridge is stopping", transaction: transaction)
        case .failure(.unknownDevice)?, .success?:
            logger.notice("device \(device.name) removed over the bridge API")
            return BridgeResponse.ok(.object([]), transaction: transaction)
        case .failure(let error)?:
            return BridgeResponse.error(error.description, transaction: transaction)
        }
    }

    /// A passive device whose encryption counter went back (a new battery): its next counter is believed
    /// (docs/adverts.md, "Re-arming"). The adverts feature does it; any device that decodes broadcasts may be named.
    func rearm(_ name: String, transaction: JSONValue?, context: FeatureContext) async -> String {
        guard let config = await context.currentConfig() else {
            return BridgeResponse.error("the bridge is stopping", transaction: transaction)
        }
        guard let device = config.devices.first(where: { $0.name == name }) else {
            return BridgeResponse.error(DeviceChangeError.unknownDevice(name).description, transaction: transaction)
        }
        guard device.advert != nil else {
            return BridgeResponse.error("device \(device.name) has no advert: it has no broadcasts to re-arm",
                                        transaction: transaction)
        }
        context.rearm(device)
        logger.notice("device \(device.name) re-armed over the bridge API")
        return BridgeResponse.ok(.object([]), transaction: transaction)
    }

    func add(_ object: JSONValue, transaction: JSONValue?, state: inout APIState,
                     context: FeatureContext) async -> String {
        guard let config = await context.currentConfig() else {
            return BridgeResponse.error("the bridge is stopping", transaction: transaction)
        }
        let name = object["name"]?.stringValue ?? ""
        let path = DropInStore.path(for: name.isEmpty ? "device" : name, stateDir: config.stateDir)
        let device: DeviceConfig
        do throws(ConfigErrors) {
            // An auto device (docs/adverts.md) is adopted by a device/add of its address: it is not in the way.
            let existing = config.devices.filter { $0.source.kind != .advert }
            device = try ConfigLoader.validateDevice(json: object, file: path, existing: existing,
                                                     adapters: config.bluetooth.adapters, secretsDir: config.secretsDir)
        } catch {
            return BridgeResponse.error(error.issues.map(\.description).joined(separator: "; "), transaction: transaction)
        }
        do throws(DropInStore.Failure) {
            try DropInStore.save(DropInStore.text(of: object), to: path)
        } catch {
            return BridgeResponse.error("cannot save the device: \(error)", transaction: transaction)
        }
        guard let result = await context.updateDevices(.add(device)) else {
            try? DropInStore.delete(path)
            return BridgeResponse.error("the bridge is stopping", transaction: transaction)
        }
        if case .failure(let error) = result {
            try? DropInStore.delete(path)
            return BridgeResponse.error(error.description, transaction: transaction)
        }
        logger.notice("device \(device.name) added over the bridge API", metadata: ["file": "\(path)"])
        return BridgeResponse.ok(object.secretsRedacted, transaction: transaction)
    }

    func long(_ request: BridgeRequest, requester: String, config: BridgeConfig?) async -> String {
        let transaction = request.transaction
        guard let adapter = await bluetooth.poweredAdapter(config?.bluetooth.adapter) else {
            return BridgeResponse.error("no powered Bluetooth adapter", transaction: transaction)
        }
        switch request.parameters {
        case .scan(let duration, let services):
            let results = await bluetooth.scan(adapter: adapter, services: services, duration: duration,
                                               requester: requester)
            return BridgeResponse.ok(results.json, transaction: transaction)
        case .address(let address):
            do throws(DeviceTools.InspectFailure) {
                let report = try await bluetooth.inspect(adapter: adapter, address: address,
                                                         timeout: Self.inspectTimeout, requester: requester)
                return BridgeResponse.ok(report.json, transaction: transaction)
            } catch {
                switch error {
                case .notFound(let message), .failed(let message):
                    return BridgeResponse.error(message, transaction: transaction)
                }
            }
        default:
            return BridgeResponse.error("internal: not a long request", transaction: transaction)
        }
    }

    /// On `responseTopic` (`B/bridge/response/<verb>`, or this bridge's own in a fleet), and on the request's MQTT 5
    /// Response Topic with its Correlation Data.
    func answer(_ request: MQTTMessage, on responseTopic: String, _ payload: String, context: FeatureContext) {
        context.publish(responseTopic, payload, qos: 1, retain: false)
        if let topic = request.responseTopic, ReplyTopicRule.isPublishable(topic) {
            var reply = MQTTMessage(topic: topic, string: payload, qos: .atLeastOnce, retain: false)
            reply.correlationData = request.correlationData
            context.publish(reply)
        }
    }

}

/// What the API feature knows between events.
struct APIState: Sendable {
    var config: BridgeConfig?
    var states: [String: DeviceLinkState] = [:]
    /// The shared `B/bridge/devices` as last written; in a fleet nil while this bridge is not the coordinator.
    var lastDevices: String?
    /// Fleet: this bridge's own `B/bridge/<id>/devices` as last written.
    var lastOwnDevices: String?
    /// The adapters as the core last reported them (docs/adapters.md), and where each device is placed.
    var adapters: [AdapterStatus]?
    var placement: [String: String] = [:]
    var filters: [(filter: String, retained: Bool)] = []
    /// Fleet (config `bridge:`): who answers and who writes the shared topics; nil for a lone bridge.
    var fleet: FleetDirectory?
    /// Fleet: whether this bridge writes the shared topics now (it is the coordinator).
    var sharedPublished = false
    /// Fleet: shared requests received before the bridge states arrived.
    var held: [MQTTMessage] = []
    var settleToken: UInt64 = 0

    /// The verb of a request topic and whether it is shared (see `Topics.verb(of:)`); nil before the config.
    func verb(of topic: String) -> (verb: String, shared: Bool)? {
        config.flatMap { Topics(config: $0).verb(of: topic) }
    }

    /// Where the answer to `verb` goes (see `Topics.responseTopic`).
    func responseTopic(_ verb: String, shared: Bool) -> String? {
        config.map { Topics(config: $0).responseTopic(verb, shared: shared) }
    }

    /// The API's topics as the config names them: what the loop and `BusyAnswers` both route by.
    struct Topics: Sendable, Equatable {
        var base: String
        var fleetID: String?
        var enabled: Bool

        init(config: BridgeConfig) {
            base = config.mqtt.baseTopic
            fleetID = config.fleet?.id
            enabled = config.bridgeAPI
        }

        /// The verb of a request topic: shared `B/bridge/request/<verb>`, or in a fleet this bridge's own
        /// `B/bridge/<id>/request/<verb>` (checked first: an id such as `request` must not read as a shared verb); nil
        /// for anything else.
        func verb(of topic: String) -> (verb: String, shared: Bool)? {
            guard enabled else { return nil }
            if let fleetID {
                let own = BridgeTopics(base: base, bridgeID: fleetID).bridgeOwn("request") + "/"
                if topic.hasPrefix(own) { return (String(topic.dropFirst(own.count)), false) }
            }
            let prefix = base + "/bridge/request/"
            guard topic.hasPrefix(prefix) else { return nil }
            return (String(topic.dropFirst(prefix.count)), true)
        }

        /// Where the answer to `verb` goes: `B/bridge/response/<verb>`, or this bridge's own for its own requests.
        func responseTopic(_ verb: String, shared: Bool) -> String {
            guard !shared, let fleetID else { return base + "/bridge/response/" + verb }
            return BridgeTopics(base: base, bridgeID: fleetID).bridgeOwn("response") + "/" + verb
        }
    }
}
