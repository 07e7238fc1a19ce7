import BlueZ
import Bluetooth
import Codecs
import Config
import Logging
import MQTT

/// The bridge API (SPEC §7): requests on `B/bridge/request/<verb>` answered on `B/bridge/response/<verb>` (and an
/// MQTT 5 Response Topic), the retained `B/bridge/devices` and `B/bridge/info`. Device changes go through the core
/// (`FeatureContext.updateDevices`) and are saved as drop-ins; `scan` and `inspect` take seconds, so they run in child
/// tasks of the feature while other requests are answered.
///
/// A device's `state` in `B/bridge/devices`: `online` while its availability is online; `offline` once it reported a
/// disconnection or error since it was last online; `connecting` before either (just started or added).
struct BridgeAPIFeature: BridgeFeature {
    let version: String
    let started: ContinuousClock.Instant
    let bluez: BlueZClient
    let link: MQTTLink
    let discovery: any DiscoveryControl
    let logger: Logger
    /// At most this many scans and inspections at once; more are refused rather than queued without bound.
    static let maxLongRequests = 4
    static let inspectTimeout: Duration = .seconds(20)

    func run(_ events: AsyncStream<CoreEvent>, _ context: FeatureContext) async {
        var state = APIState()
        var longRequests = 0
        var sequence = 0
        let (finished, finish) = AsyncStream.makeStream(of: Void.self)
        let (inputs, input) = AsyncStream.makeStream(of: CoreEvent?.self)
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await event in events { input.yield(event) }
                input.finish()
            }
            group.addTask {
                for await _ in finished { input.yield(nil) }
            }
            for await event in inputs {
                guard let event else {
                    longRequests -= 1
                    continue
                }
                switch event {
                case .configApplied(_, let config):
                    await configure(config, state: &state, context: context)
                case .brokerConnected:
                    state.lastDevices = nil
                    await publishInfo(state: state, context: context)
                    await publishDevices(state: &state, context: context)
                case .availability(let device, let online):
                    state.states[device.name] = online ? .online : (state.states[device.name] == .online ? .offline : state.states[device.name] ?? .connecting)
                    await publishDevices(state: &state, context: context)
                case .deviceEvent(let device, let event):
                    switch event {
                    case .disconnected, .error:
                        state.states[device.name] = .offline
                    case .connected, .reconnectAttempt:
                        break
                    }
                    await publishDevices(state: &state, context: context)
                case .deviceRemoved(let device, _):
                    state.states[device.name] = nil
                case .adapters(let statuses, let placement):
                    let namesChanged = statuses.map(\.name) != state.adapters?.map(\.name)
                    state.adapters = statuses
                    state.placement = placement
                    if namesChanged { await publishInfo(state: state, context: context) }
                    await publishDevices(state: &state, context: context)
                case .message(let message):
                    guard let verb = state.verb(of: message.topic) else { break }
                    if message.retain {
                        // A retained request would run again at every restart and reconnect.
                        logger.warning("retained bridge request on \(message.topic) ignored")
                        break
                    }
                    switch BridgeRequest.parse(verb: verb, payload: message.payload) {
                    case .failure(let failure):
                        answer(message, verb: verb, BridgeResponse.error(failure.message, transaction: failure.transaction),
                               state: state, context: context)
                    case .success(let request):
                        switch request.parameters {
                        case .scan, .address:
                            guard longRequests < Self.maxLongRequests else {
                                answer(message, verb: verb, BridgeResponse.error("busy: \(Self.maxLongRequests) scans or inspections are running", transaction: request.transaction), state: state, context: context)
                                break
                            }
                            longRequests += 1
                            sequence += 1
                            let requester = "bridge-api/\(request.verb.rawValue)/\(sequence)"
                            let config = state.config
                            group.addTask {
                                let response = await long(request, requester: requester, config: config)
                                answer(message, verb: verb, response, state: APIState(config: config), context: context)
                                finish.yield()
                            }
                        default:
                            let response = await serve(request, state: &state, context: context)
                            answer(message, verb: verb, response, state: state, context: context)
                        }
                    }
                case .stopping:
                    finish.finish()
                    group.cancelAll()
                default:
                    break
                }
            }
            finish.finish()
        }
    }

    // MARK: - Requests

    private func serve(_ request: BridgeRequest, state: inout APIState, context: FeatureContext) async -> String {
        let transaction = request.transaction
        switch request.parameters {
        case .none where request.verb == .devices:
            return BridgeResponse.ok(await devicesJSON(state), transaction: transaction)
        case .none:
            return BridgeResponse.ok(await health(state), transaction: transaction)
        case .device(let object):
            return await add(object, transaction: transaction, state: &state, context: context)
        case .name(let name):
            guard let result = await context.updateDevices(.remove(name: name)) else {
                return BridgeResponse.error("the bridge is stopping", transaction: transaction)
            }
            switch result {
            case .failure(let error):
                return BridgeResponse.error(error.description, transaction: transaction)
            case .success(let device):
                do throws(DropInStore.Failure) {
                    try DropInStore.delete(device.source.file)
                } catch {
                    logger.error("device \(device.name) removed, but its drop-in stays: \(error)")
                    return BridgeResponse.error("device \(device.name) stopped, but \(error)", transaction: transaction)
                }
                logger.notice("device \(device.name) removed over the bridge API")
                return BridgeResponse.ok(.object([]), transaction: transaction)
            }
        case .scan, .address:
            return BridgeResponse.error("internal: long request served inline", transaction: transaction)
        }
    }

    private func add(_ object: JSONValue, transaction: JSONValue?, state: inout APIState,
                     context: FeatureContext) async -> String {
        guard let config = await context.currentConfig() else {
            return BridgeResponse.error("the bridge is stopping", transaction: transaction)
        }
        let name = object["name"]?.stringValue ?? ""
        let path = DropInStore.path(for: name.isEmpty ? "device" : name, stateDir: config.stateDir)
        let device: DeviceConfig
        do throws(ConfigErrors) {
            device = try ConfigLoader.validateDevice(json: object, file: path, existing: config.devices)
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
        return BridgeResponse.ok(object.passkeyRedacted, transaction: transaction)
    }

    private func long(_ request: BridgeRequest, requester: String, config: BridgeConfig?) async -> String {
        let transaction = request.transaction
        guard let adapter = try? await bluez.adapter(config?.bluetooth.adapter), adapter.powered else {
            return BridgeResponse.error("no powered Bluetooth adapter", transaction: transaction)
        }
        switch request.parameters {
        case .scan(let duration, let services):
            let results = await DeviceTools.scan(bluez: bluez, adapter: adapter, services: services, duration: duration,
                                                 discovery: discovery, requester: requester)
            return BridgeResponse.ok(results.json, transaction: transaction)
        case .address(let address):
            do throws(DeviceTools.InspectFailure) {
                let report = try await DeviceTools.inspect(bluez: bluez, adapter: adapter, address: address,
                                                           timeout: Self.inspectTimeout, discovery: discovery,
                                                           requester: requester)
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

    /// On `B/bridge/response/<verb>`, and on the request's MQTT 5 Response Topic with its Correlation Data.
    private func answer(_ request: MQTTMessage, verb: String, _ payload: String, state: APIState,
                        context: FeatureContext) {
        guard let topics = state.topics else { return }
        context.publish(topics.base + "/bridge/response/" + verb, payload, qos: 1, retain: false)
        if let responseTopic = request.responseTopic, Self.isPublishable(responseTopic) {
            var reply = MQTTMessage(topic: responseTopic, string: payload, qos: .atLeastOnce, retain: false)
            reply.correlationData = request.correlationData
            context.publish(reply)
        }
    }

    /// A Response Topic comes from the requester: one with wildcards, NUL or no text at all would be refused by the
    /// broker or the client, so it is not answered there.
    static func isPublishable(_ topic: String) -> Bool {
        !topic.isEmpty && topic.utf8.count <= 65535 && !topic.utf8.contains(where: { $0 == 0 || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") })
    }

    // MARK: - Retained state

    private func configure(_ config: BridgeConfig, state: inout APIState, context: FeatureContext) async {
        let old = state.config
        state.config = config
        let filter = BridgeTopics(base: config.mqtt.baseTopic).base + "/bridge/request/#"
        let oldFilter = old.flatMap { $0.bridgeAPI ? $0.mqtt.baseTopic + "/bridge/request/#" : nil }
        let newFilter = config.bridgeAPI ? filter : nil
        if oldFilter != newFilter {
            if let oldFilter { context.unsubscribe(oldFilter) }
            if let newFilter { context.subscribe(newFilter) }
        }
        if let old, old.mqtt.baseTopic != config.mqtt.baseTopic {
            context.publish(old.mqtt.baseTopic + "/bridge/devices", "", qos: 1, retain: true)
            context.publish(old.mqtt.baseTopic + "/bridge/info", "", qos: 1, retain: true)
            state.lastDevices = nil
        }
        await publishInfo(state: state, context: context)
        await publishDevices(state: &state, context: context)
    }

    private func publishInfo(state: APIState, context: FeatureContext) async {
        guard let config = state.config else { return }
        let adapters = await adapterNames(state).map { JSONValue.string($0) }
        let info = JSONValue.object([
            ("version", .string(version)),
            ("base_topic", .string(config.mqtt.baseTopic)),
            ("state_dir", .string(config.stateDir)),
            ("adapters", .array(adapters)),
        ])
        context.publish(config.mqtt.baseTopic + "/bridge/info", info.serialized, qos: 1, retain: true)
    }

    /// Republished only when the listing changed.
    private func publishDevices(state: inout APIState, context: FeatureContext) async {
        guard let config = state.config else { return }
        let text = await devicesJSON(state).serialized
        guard text != state.lastDevices else { return }
        state.lastDevices = text
        context.publish(config.mqtt.baseTopic + "/bridge/devices", text, qos: 1, retain: true)
    }

    private func devicesJSON(_ state: APIState) async -> JSONValue {
        guard let config = state.config else { return .array([]) }
        let fallback = await adapterName(config)
        return DeviceListing.json(config, states: state.states, adapter: { state.placement[$0.name] ?? $0.adapter ?? fallback })
    }

    /// The adapters the bridge uses (SPEC §8), once the core has said; BlueZ's list before that.
    private func adapterNames(_ state: APIState) async -> [String] {
        if let adapters = state.adapters { return adapters.map(\.name) }
        return await bluez.adapters().map(\.name).filter { state.config?.bluetooth.uses($0) ?? true }
    }

    /// The configured adapter, else the one the sessions use by default (SPEC §1).
    private func adapterName(_ config: BridgeConfig) async -> String {
        if let name = config.bluetooth.adapter { return name }
        let adapters = await bluez.adapters()
        return (adapters.first(where: \.powered) ?? adapters.first)?.name ?? "hci0"
    }

    private func health(_ state: APIState) async -> JSONValue {
        let client = link.client
        let mqtt: String = switch client.connectionState {
        case .connected: "connected"
        case .connecting: "connecting"
        case .disconnected: "disconnected"
        }
        let available = await bluez.isAvailable
        let total = state.config?.devices.count ?? 0
        let online = state.config?.devices.filter { state.states[$0.name] == .online }.count ?? 0
        let uptime = (ContinuousClock.now - started).components.seconds
        return .object([
            ("version", .string(version)),
            ("uptime_s", .int(Int(uptime))),
            ("mqtt", .string(mqtt)),
            ("bluez", .string(available ? "available" : "unavailable")),
            ("adapters", AdapterStatus.json(state.adapters ?? [])),
            ("devices", .object([("online", .int(online)), ("total", .int(total))])),
            ("buffer", .object([("queued", .int(client.offlineBufferCount)),
                                ("dropped", .int(client.droppedWhileOffline))])),
        ])
    }
}

/// What the API feature knows between events.
private struct APIState: Sendable {
    var config: BridgeConfig?
    var states: [String: DeviceLinkState] = [:]
    var lastDevices: String?
    /// The adapters as the core last reported them (SPEC §8), and where each device is placed.
    var adapters: [AdapterStatus]?
    var placement: [String: String] = [:]

    var topics: BridgeTopics? { config.map { BridgeTopics(base: $0.mqtt.baseTopic) } }

    /// The verb of a request topic (`B/bridge/request/<verb>`), nil for anything else.
    func verb(of topic: String) -> String? {
        guard let config, config.bridgeAPI else { return nil }
        let prefix = config.mqtt.baseTopic + "/bridge/request/"
        guard topic.hasPrefix(prefix) else { return nil }
        return String(topic.dropFirst(prefix.count))
    }
}
