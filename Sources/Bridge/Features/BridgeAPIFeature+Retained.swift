import BlueZ
import Bluetooth
import Codecs
import Config
import Logging
import MQTT

/// The API's retained state: its request filters, `B/bridge/info` and `B/bridge/devices`, and, in a fleet, the
/// facts the `FleetDirectory` needs to decide which bridge answers a shared request.
extension BridgeAPIFeature {
    /// True when this joined a fleet (or changed its id or base topic): its bridge states are to be listened for.
    func configure(_ config: BridgeConfig, state: inout APIState, context: FeatureContext) async -> Bool {
        let old = state.config
        state.config = config
        let filters = Self.filters(config)
        if filters.map(\.filter) != state.filters.map(\.filter) {
            for (filter, _) in state.filters { context.unsubscribe(filter) }
            for (filter, retained) in filters { context.subscribe(filter, retained: retained) }
            state.filters = filters
        }
        if let old, old.mqtt.baseTopic != config.mqtt.baseTopic {
            context.publish(old.mqtt.baseTopic + "/bridge/devices", "", qos: 1, retain: true)
            context.publish(old.mqtt.baseTopic + "/bridge/info", "", qos: 1, retain: true)
            state.lastDevices = nil
        }
        var listen = false
        let ownTopics = config.fleet.map { _ in BridgeTopics(base: config.mqtt.baseTopic, bridgeID: config.fleet?.id) }
        if state.fleet?.id != config.fleet?.id || old?.mqtt.baseTopic != config.mqtt.baseTopic {
            if let old, let oldID = old.fleet?.id {
                // This bridge's own view under its old name or base topic would stay retained for good.
                let oldTopics = BridgeTopics(base: old.mqtt.baseTopic, bridgeID: oldID)
                if oldTopics != ownTopics {
                    context.publish(oldTopics.bridgeOwn("devices"), "", qos: 1, retain: true)
                    context.publish(oldTopics.bridgeOwn("info"), "", qos: 1, retain: true)
                }
            }
            state.fleet = config.fleet.map { FleetDirectory(id: $0.id) }
            state.sharedPublished = false
            state.lastOwnDevices = nil
            state.lastDevices = nil
            listen = state.fleet != nil
            if state.fleet == nil {
                // Left the fleet: nothing holds shared requests any more.
                state.held = []
            }
        }
        await publishInfo(state: state, context: context)
        await publishDevices(state: &state, context: context)
        return listen
    }

    /// The request topics (unless `bridge_api: false`) and, in a fleet, the retained facts the `FleetDirectory`
    /// needs; `retained` marks the filters the `FleetFeature` holds too (see `FeatureContext.subscribe`).
    static func filters(_ config: BridgeConfig) -> [(filter: String, retained: Bool)] {
        let base = config.mqtt.baseTopic
        var filters: [(filter: String, retained: Bool)] = []
        if config.bridgeAPI { filters.append((base + "/bridge/request/#", false)) }
        guard let fleet = config.fleet else { return filters }
        let topics = BridgeTopics(base: base, bridgeID: fleet.id)
        if config.bridgeAPI { filters.append((topics.bridgeOwn("request") + "/#", false)) }
        filters.append((topics.ownerFilter, true))
        filters.append((topics.bridgeStateFilter, true))
        filters.append((base + "/+/availability", false))
        return filters
    }

    /// Feeds a fleet fact (a bridge's state, a device's owner record or availability) to the directory; true when
    /// it was one.
    func fleetFact(_ message: MQTTMessage, state: inout APIState) async -> Bool {
        guard let config = state.config, state.fleet != nil else { return false }
        let topics = BridgeTopics(base: config.mqtt.baseTopic, bridgeID: config.fleet?.id)
        let text = message.payloadString
        if let bridge = topics.parseBridgeState(message.topic) {
            state.fleet?.bridgeState(bridge, online: text == "online")
        } else if let level = topics.parseOwner(message.topic) {
            state.fleet?.owner(level, FleetFeature.record(text)?.bridge)
        } else if let level = Self.parseAvailability(topics, message.topic) {
            state.fleet?.availability(level, online: text == "online" ? true : text == "offline" ? false : nil)
        } else {
            return false
        }
        return true
    }

    static func parseAvailability(_ topics: BridgeTopics, _ topic: String) -> String? {
        guard topic.hasPrefix(topics.base + "/") else { return nil }
        let levels = topic.dropFirst(topics.base.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 2, levels[1] == "availability", levels[0] != "bridge" else { return nil }
        return String(levels[0])
    }

    /// Fleet: starts writing the shared topics when this bridge became the coordinator (they are written at once,
    /// over whatever the previous one left), stops when it no longer is.
    func refreshShared(state: inout APIState, context: FeatureContext) async {
        guard let fleet = state.fleet, fleet.isCoordinator != state.sharedPublished else { return }
        state.sharedPublished = fleet.isCoordinator
        if fleet.isCoordinator {
            logger.notice("this bridge answers the fleet's shared bridge requests now (the live bridge with the lowest id)")
            state.lastDevices = nil
            await publishInfo(state: state, context: context)
            await publishDevices(state: &state, context: context)
        } else {
            logger.notice("bridge \(fleet.coordinator) answers the fleet's shared bridge requests now")
        }
    }

    /// Lone bridge: `B/bridge/info`. Fleet: `B/bridge/<id>/info`, and the shared one from the coordinator.
    func publishInfo(state: APIState, context: FeatureContext) async {
        guard let config = state.config else { return }
        let adapters = await adapterNames(state).map { JSONValue.string($0) }
        var members: [(String, JSONValue)] = [
            ("version", .string(version)),
            ("base_topic", .string(config.mqtt.baseTopic)),
            ("state_dir", .string(config.stateDir)),
            ("adapters", .array(adapters)),
        ]
        guard let fleet = state.fleet else {
            context.publish(config.mqtt.baseTopic + "/bridge/info", JSONValue.object(members).serialized, qos: 1, retain: true)
            return
        }
        members.append(("bridge", .string(fleet.id)))
        let text = JSONValue.object(members).serialized
        context.publish(BridgeTopics(base: config.mqtt.baseTopic, bridgeID: fleet.id).bridgeOwn("info"), text, qos: 1,
                        retain: true)
        if state.sharedPublished { context.publish(config.mqtt.baseTopic + "/bridge/info", text, qos: 1, retain: true) }
    }

    /// Republished only when the listing changed. Fleet: this bridge's own `B/bridge/<id>/devices`, and the shared
    /// one while it is the coordinator.
    func publishDevices(state: inout APIState, context: FeatureContext) async {
        guard let config = state.config else { return }
        let text = await devicesJSON(state).serialized
        if let fleet = state.fleet, text != state.lastOwnDevices {
            state.lastOwnDevices = text
            context.publish(BridgeTopics(base: config.mqtt.baseTopic, bridgeID: fleet.id).bridgeOwn("devices"), text,
                            qos: 1, retain: true)
        }
        guard state.fleet == nil || state.sharedPublished, text != state.lastDevices else { return }
        state.lastDevices = text
        context.publish(config.mqtt.baseTopic + "/bridge/devices", text, qos: 1, retain: true)
    }

    func devicesJSON(_ state: APIState) async -> JSONValue {
        guard let config = state.config else { return .array([]) }
        let fallback = await adapterName(config)
        let adapter = { (device: DeviceConfig) in state.placement[device.name] ?? device.adapter ?? fallback }
        guard let fleet = state.fleet else {
            return DeviceListing.json(config, states: state.states, adapter: adapter)
        }
        var states: [String: DeviceLinkState] = [:]
        var owners: [String: String] = [:]
        for device in config.devices {
            let (owner, linkState) = fleet.listing(device.topicLevel, session: state.states[device.name])
            states[device.name] = linkState
            owners[device.name] = owner
        }
        return DeviceListing.json(config, states: states, adapter: adapter, owner: { owners[$0.name] })
    }

    /// The adapters the bridge uses (docs/adapters.md), once the core has said; BlueZ's list before that.
    func adapterNames(_ state: APIState) async -> [String] {
        if let adapters = state.adapters { return adapters.map(\.name) }
        return await bluetooth.adapters().map(\.name).filter { state.config?.bluetooth.uses($0) ?? true }
    }

    /// The configured adapter, else the one the sessions use by default (docs/cli.md).
    func adapterName(_ config: BridgeConfig) async -> String {
        if let name = config.bluetooth.adapter { return name }
        let adapters = await bluetooth.adapters()
        return (adapters.first(where: \.powered) ?? adapters.first)?.name ?? "hci0"
    }

    func health(_ state: APIState) async -> JSONValue {
        let mqtt: String = switch broker.connectionState {
        case .connected: "connected"
        case .connecting: "connecting"
        case .disconnected: "disconnected"
        }
        let available = await bluetooth.isAvailable
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
            ("buffer", .object([("queued", .int(broker.offlineBufferCount)),
                                ("dropped", .int(broker.droppedWhileOffline))])),
            ("adverts", .object([("dropped", .int(adverts.dropped)), ("refused", .int(adverts.refused))])),
        ] + (state.fleet.map { [("bridge", JSONValue.string($0.id))] } ?? []))
    }
}
