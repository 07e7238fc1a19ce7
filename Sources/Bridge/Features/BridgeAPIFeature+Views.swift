import BridgeAdverts
import BridgeAdapters
import BridgeFeatureHost
import Codecs
import Config
import MQTT

/// What the bridge API says of the bridge: `B/bridge/info`, the `B/bridge/devices` listing and the `health` answer
/// (docs/bridge-api.md). The devices, their links and adapters, the adapters' states and bluetoothd's presence are
/// read from the read model as they are written (docs/dev/ARCHITECTURE.md, "The read model"): the core updates it
/// before it emits the event that woke the loop, so a listing made then shows that change or a newer one.
extension BridgeAPIFeature {
    /// `B/bridge/info` to `topics` (`"bridge"`: this bridge's id in a fleet).
    func publishInfo(_ topics: [String], bridge: String?, config: BridgeConfig?, context: FeatureContext) async {
        guard let config else { return }
        let text = Self.info(version: version, config: config, adapters: await adapterNames(context.state, config),
                             bridge: bridge)
        for topic in topics { context.publish(topic, text, qos: 1, retain: true) }
    }

    static func info(version: String, config: BridgeConfig, adapters: [String], bridge: String?) -> String {
        var members: [(String, JSONValue)] = [
            ("version", .string(version)),
            ("base_topic", .string(config.mqtt.baseTopic)),
            ("state_dir", .string(config.stateDir)),
            ("adapters", .array(adapters.map { .string($0) })),
        ]
        if let bridge { members.append(("bridge", .string(bridge))) }
        return JSONValue.object(members).serialized
    }

    /// The listing of `B/bridge/devices` and the `devices` answer; nil once the core has gone.
    func devicesJSON(_ machine: BridgeAPIMachine, context: FeatureContext) async -> JSONValue? {
        guard let config = machine.config, let state = context.state else { return nil }
        return DeviceListing.json(state, fleet: machine.fleet, fallbackAdapter: await adapterName(config))
    }

    /// The adapters the bridge uses (docs/adapters.md), once the core has said; BlueZ's list before that.
    func adapterNames(_ state: BridgeState?, _ config: BridgeConfig) async -> [String] {
        if let state, state.adaptersReported { return state.adapters.map(\.name) }
        return await bluetooth.adapters().map(\.name).filter { config.bluetooth.uses($0) }
    }

    /// The configured adapter, else the one the sessions use by default (docs/cli.md).
    func adapterName(_ config: BridgeConfig) async -> String {
        if let name = config.bluetooth.adapter { return name }
        let adapters = await bluetooth.adapters()
        return (adapters.first(where: \.powered) ?? adapters.first)?.name ?? "hci0"
    }

    func health(_ state: BridgeState, bridge: String?) -> JSONValue {
        HealthView.json(version: version, started: started, broker: broker, adverts: adverts, state: state,
                        bridge: bridge)
    }
}

/// The `health` answer (docs/bridge-api.md): the bridge API's and the web page's Bridge view alike.
package enum HealthView {
    package static func json(version: String, started: ContinuousClock.Instant, broker: any BrokerStatus, adverts: AdvertCounts,
                     state: BridgeState, bridge: String?) -> JSONValue {
        let mqtt: String = switch broker.connectionState {
        case .connected: "connected"
        case .connecting: "connecting"
        case .disconnected: "disconnected"
        }
        let uptime = (ContinuousClock.now - started).components.seconds
        return .object([
            ("version", .string(version)),
            ("uptime_s", .int(Int(uptime))),
            ("mqtt", .string(mqtt)),
            ("bluez", .string(state.bluezAvailable ? "available" : "unavailable")),
            ("adapters", AdapterStatus.json(state.adapters)),
            ("devices", .object([("online", .int(state.devices.count(where: \.online))),
                                 ("total", .int(state.devices.count))])),
            ("buffer", .object([("queued", .int(broker.offlineBufferCount)),
                                ("dropped", .int(broker.droppedWhileOffline))])),
            ("adverts", .object([("dropped", .int(adverts.dropped)), ("refused", .int(adverts.refused))])),
        ] + (bridge.map { [("bridge", JSONValue.string($0))] } ?? []))
    }
}
