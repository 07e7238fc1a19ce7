import BlueZ
import Bluetooth
import Config
import Logging
import MQTT

/// Owns the device sessions and routes to them: BlueZ events by device address, MQTT commands by topic. Features
/// such as Home Assistant discovery react to its state through `BridgeFeature`s rather than living in here.
public actor BridgeCore {
    public private(set) var config: BridgeConfig
    let bluez: BlueZClient
    let mqtt: MQTTLink
    private let logger: Logger
    private let gate = ConnectGate<String>()
    private let discovery: DiscoveryCoordinator
    private var sessions: [String: DeviceSession] = [:]            // by device name
    private var byAddress: [BluetoothAddress: DeviceSession] = [:]
    private var adapter: AdapterInfo?
    private var features: [any BridgeFeature] = []
    private let statusChanged: @Sendable () -> Void

    public init(config: BridgeConfig, bluez: BlueZClient, mqtt: MQTTLink, logger: Logger,
                statusChanged: @escaping @Sendable () -> Void = {}) {
        self.config = config
        self.bluez = bluez
        self.mqtt = mqtt
        self.logger = logger
        self.discovery = DiscoveryCoordinator(bluez: bluez, logger: logger)
        self.statusChanged = statusChanged
    }

    var topics: BridgeTopics { BridgeTopics(base: config.mqtt.baseTopic) }

    public func add(_ feature: any BridgeFeature) {
        features.append(feature)
    }

    /// Starts every configured device. Devices run independently: one that never shows up delays nobody.
    public func start() async {
        let available = await bluez.isAvailable
        adapter = await currentAdapter()
        if adapter == nil { logger.warning("no Bluetooth adapter yet; waiting for one") }
        for device in config.devices { await startSession(device, bluezAvailable: available) }
        subscribeCommands()
        for feature in features { await feature.started(core: self) }
        statusChanged()
    }

    public func stop() async {
        await withTaskGroup(of: Void.self) { group in
            for session in sessions.values { group.addTask { await session.stop() } }
        }
    }

    private func startSession(_ device: DeviceConfig, bluezAvailable: Bool) async {
        let context = SessionContext(bluez: bluez, mqtt: mqtt, topics: topics, gate: gate, discovery: discovery,
                                     events: EventPublisher(mqtt: mqtt, topics: topics, logger: logger),
                                     logger: logger, availabilityChanged: statusChanged,
                                     deviceIdentified: { [weak self] name, identity in
                                         Task { await self?.deviceIdentified(name, identity) }
                                     })
        let session = DeviceSession(config: device, context: context)
        sessions[device.name] = session
        byAddress[device.address] = session
        await session.start(adapter: adapter, bluezAvailable: bluezAvailable)
    }

    private func subscribeCommands() {
        for filter in topics.commandFilters { mqtt.client.subscribe(filter, qos: .atLeastOnce) }
    }

    // MARK: - Status

    public struct Snapshot: Sendable {
        public var devicesOnline: Int
        public var devices: Int
    }

    public func snapshot() async -> Snapshot {
        var online = 0
        for session in sessions.values where await session.isOnline { online += 1 }
        return Snapshot(devicesOnline: online, devices: sessions.count)
    }

    /// A turn of the core's executor, for the watchdog: if this returns, the actor is not stuck.
    public func ping() -> Bool { true }

    public func availability(of device: String) async -> String? {
        await sessions[device]?.availabilityPayload
    }

    /// Home Assistant came (back) online: it wants every current state again.
    public func republishStates() async {
        for session in sessions.values { await session.republishStates() }
    }

    private func deviceIdentified(_ name: String, _ identity: DeviceIdentity) async {
        for feature in features {
            if let homeAssistant = feature as? HomeAssistantFeature {
                await homeAssistant.deviceIdentified(name, identity: identity, core: self)
            }
        }
    }

    // MARK: - BlueZ events

    public func handle(_ event: BlueZEvent) async {
        switch event {
        case .bluezVanished:
            logger.warning("bluetoothd left the bus; waiting for it to return")
            adapter = nil
            for session in sessions.values { await session.bluezVanished() }
        case .bluezAppeared:
            logger.notice("bluetoothd is on the bus; resyncing")
            for session in sessions.values { await session.bluezAppeared() }
            await adapterMayHaveChanged()
            discovery.reset()
        case .adapterAdded, .adapterRemoved, .adapterChanged:
            await adapterMayHaveChanged()
        case .deviceAdded(let info), .deviceChanged(let info, _):
            await byAddress[info.address]?.deviceEvent(event)
        case .deviceRemoved(_, let address):
            await byAddress[address]?.deviceEvent(event)
        case .deviceDisconnected, .gattAdded, .gattRemoved:
            break
        }
    }

    private func currentAdapter() async -> AdapterInfo? {
        try? await bluez.adapter(config.bluetooth.adapter)
    }

    /// Tells the sessions only when the adapter they use appeared, went, or changed power.
    private func adapterMayHaveChanged() async {
        let now = await currentAdapter()
        guard now?.path != adapter?.path || now?.powered != adapter?.powered else { return }
        let poweredOn = now?.powered == true && adapter?.powered != true
        adapter = now
        logger.notice("adapter \(now.map { "\($0.name) powered \($0.powered)" } ?? "gone")")
        for session in sessions.values { await session.adapterChanged(now) }
        if poweredOn { discovery.reset() }
    }

    // MARK: - MQTT

    /// The broker (re)connected: what it may have lost (retained state, after a restart without persistence) is sent again.
    public func brokerConnected() async {
        mqtt.publish(topics.bridgeState, "online", qos: 1, retain: true)
        for session in sessions.values { await session.republishRetained() }
        for feature in features { await feature.brokerConnected(core: self) }
    }

    public func handle(_ message: MQTTMessage) async {
        for feature in features where await feature.handle(message, core: self) { return }
        guard let (deviceLevel, channelLevel, verb) = topics.parseCommand(message.topic) else { return }
        let events = EventPublisher(mqtt: mqtt, topics: topics, logger: logger)
        guard let device = config.devices.first(where: { $0.topicLevel == deviceLevel }),
              let session = sessions[device.name] else {
            events.reject(topic: message.topic, message: "unknown device \(deviceLevel)")
            return
        }
        guard let channel = device.channels.first(where: { $0.topicLevel == channelLevel }) else {
            events.reject(topic: message.topic, message: "unknown channel \(channelLevel) on device \(device.name)")
            return
        }
        switch verb {
        case .get:
            await session.get(channel, topic: message.topic)
        case .set:
            guard channel.writable else {
                events.reject(topic: message.topic, message: "channel \(device.name)/\(channel.name) is not writable")
                return
            }
            guard message.payload.count <= Self.maxCommandBytes else {
                events.reject(topic: message.topic,
                              message: "payload of \(message.payload.count) bytes is over the \(Self.maxCommandBytes)-byte limit for a command")
                return
            }
            await session.set(channel, payload: message.payload, topic: message.topic)
        }
    }

    /// A characteristic value is at most 512 bytes; a text command is written in MTU-sized chunks, one GATT
    /// operation each. Far larger payloads would hold the device's command queue (and memory) for many seconds.
    static let maxCommandBytes = 16 * 1024

    // MARK: - Reload

    /// Applies a new config: devices whose config did not change keep their session (and connection); removed devices
    /// stop and their retained topics are cleared; new ones start.
    public func apply(_ new: BridgeConfig, mqttReplaced: Bool = false) async {
        let old = config
        config = new
        let oldByName = Dictionary(old.devices.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let newByName = Dictionary(new.devices.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let baseChanged = old.mqtt.baseTopic != new.mqtt.baseTopic
        for (name, device) in oldByName where baseChanged || newByName[name] != device {
            guard let session = sessions.removeValue(forKey: name) else { continue }
            byAddress[device.address] = nil
            await session.stop()
            clearRetained(device, topics: BridgeTopics(base: old.mqtt.baseTopic))
            logger.notice("device \(name) stopped (removed or changed)")
        }
        let available = await bluez.isAvailable
        for device in new.devices where sessions[device.name] == nil {
            await startSession(device, bluezAvailable: available)
            logger.notice("device \(device.name) started")
        }
        if baseChanged && !mqttReplaced {
            for filter in BridgeTopics(base: old.mqtt.baseTopic).commandFilters { mqtt.client.unsubscribe(filter) }
        }
        // A new client starts without subscriptions; an unchanged one keeps them (subscribing again would replay
        // retained `set` messages).
        if baseChanged || mqttReplaced { subscribeCommands() }
        if baseChanged {
            mqtt.publish(BridgeTopics(base: old.mqtt.baseTopic).bridgeState, "", qos: 1, retain: true)
            mqtt.publish(topics.bridgeState, "online", qos: 1, retain: true)
        }
        for feature in features { await feature.reloaded(from: old, core: self) }
        statusChanged()
    }

    private func clearRetained(_ device: DeviceConfig, topics: BridgeTopics) {
        mqtt.publish(topics.availability(device), "", qos: 1, retain: true)
        mqtt.publish(topics.rssi(device), "", qos: 1, retain: true)
        for channel in device.channels where channel.retain {
            mqtt.publish(topics.state(device, channel), "", qos: 1, retain: true)
        }
    }
}

/// A unit of bridge behaviour that reacts to the core's life (zigbee2mqtt's "extensions"): Home Assistant discovery is
/// one. Each hook runs on the core's actor; `handle` returns true when it consumed the message.
public protocol BridgeFeature: Sendable {
    func started(core: BridgeCore) async
    func brokerConnected(core: BridgeCore) async
    func handle(_ message: MQTTMessage, core: BridgeCore) async -> Bool
    func reloaded(from old: BridgeConfig, core: BridgeCore) async
}
