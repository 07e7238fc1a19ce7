import BridgeAdapters
import BridgeFeatureHost
import BridgeModel
import Codecs
import Config

/// The bridge's own Home Assistant device (docs/adapters.md): `gattbridge bridge <hostname>` with diagnostic sensors for
/// devices online, buffered and dropped messages (from the retained `B/bridge/diagnostics`), and one state sensor per
/// adapter (from the retained `B/bridge/adapters`). Pure, like `HomeAssistantDiscovery`: same inputs, same bytes.
///
/// Topics: `<prefix>/sensor/gattbridge_bridge_<host>/<object>/config`. The node id is not of the per-device form
/// (`gattbridge_<address>`), so the stale-config sweep of `HomeAssistantFeature` never takes these for leftovers.
struct BridgeDeviceDiscovery: Sendable, Equatable {
    let config: BridgeConfig
    let version: String
    let hostname: String

    var isEnabled: Bool { config.homeassistant.enabled }
    private var prefix: String { config.homeassistant.discoveryPrefix }
    private var topics: BridgeTopics { BridgeTopics(settings: config.mqtt) }
    var diagnosticsTopic: String { Self.diagnosticsTopic(topics) }
    var adaptersTopic: String { AdapterStatus.topic(topics) }

    /// Home Assistant's birth topic: `online` there means it needs the configs again.
    var statusTopic: String { prefix + "/status" }

    static func diagnosticsTopic(_ topics: BridgeTopics) -> String { topics.bridgeOwn("diagnostics") }

    /// What names this bridge: the host name, or in a fleet its `bridge.id` (several bridges may share a host,
    /// and each must be its own Home Assistant device).
    private var label: String { config.mqtt.bridgeID ?? hostname }

    /// The label as a discovery topic level and id: letters, digits, `_` and `-` only.
    var nodeID: String {
        let safe = label.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-")
                ? Character(scalar) : "_"
        }
        return "gattbridge_bridge_" + String(safe)
    }

    func topic(object: String) -> String { "\(prefix)/sensor/\(nodeID)/\(object)/config" }

    func adapterObject(_ adapter: String) -> String { "adapter_\(adapter)" }

    /// Every config, for the adapters the bridge uses now.
    func messages(adapters: [String]) -> [DiscoveryMessage] {
        guard isEnabled else { return [] }
        var out = [
            sensor("devices_online", name: "Devices online", state: diagnosticsTopic,
                   template: "{{ value_json.devices_online }}", unit: "devices"),
            sensor("buffered_messages", name: "Buffered messages", state: diagnosticsTopic,
                   template: "{{ value_json.buffered }}", unit: "messages"),
            sensor("dropped_messages", name: "Dropped messages", state: diagnosticsTopic,
                   template: "{{ value_json.dropped }}", unit: "messages", total: true),
        ]
        for adapter in adapters {
            // The adapter's entry of the array; "absent" while the adapter is gone.
            let template = "{% set a = value_json | selectattr('name', 'equalto', '\(adapter)') | list %}"
                + "{{ a[0].state if a else 'absent' }}"
            out.append(sensor(adapterObject(adapter), name: "Adapter \(adapter)", state: adaptersTopic,
                              template: template, unit: nil))
        }
        return out
    }

    private func sensor(_ object: String, name: String, state: String, template: String, unit: String?,
                        total: Bool = false) -> DiscoveryMessage {
        var members: [(String, JSONValue)] = [
            ("name", .string(name)),
            ("unique_id", .string("\(nodeID)_\(object)")),
            ("state_topic", .string(state)),
            ("value_template", .string(template)),
            ("entity_category", "diagnostic"),
        ]
        if let unit {
            members.append(("unit_of_measurement", .string(unit)))
            members.append(("state_class", .string(total ? "total_increasing" : "measurement")))
        }
        members += [
            ("qos", .int(1)),
            ("availability", .array([.object([("topic", .string(topics.bridgeState)),
                                              ("payload_available", "online"), ("payload_not_available", "offline")])])),
            ("device", .object([
                ("identifiers", [.string(nodeID)]),
                ("name", .string("gattbridge bridge \(label)")),
                ("model", "gattbridge"),
                ("sw_version", .string(version)),
            ])),
            ("origin", .object([("name", "gattbridge"), ("sw_version", .string(version))])),
        ]
        return DiscoveryMessage(topic: topic(object: object), payload: JSONValue.object(members).serialized)
    }

    /// The retained `B/bridge/diagnostics` payload.
    static func diagnostics(online: Int, devices: Int, buffered: Int, dropped: Int) -> String {
        JSONValue.object([
            ("devices_online", .int(online)), ("devices", .int(devices)),
            ("buffered", .int(buffered)), ("dropped", .int(dropped)),
        ]).serialized
    }
}

/// Publishes the bridge device's configs and its `B/bridge/diagnostics` state: configs when the broker connects,
/// when Home Assistant comes online and when the adapter set changes (configs of adapters that went are cleared);
/// diagnostics whenever a count changes (devices online, messages dropped) and after each broker connect (the
/// offline buffer only fills while the broker is away, so that is when its count is worth publishing).
package struct BridgeDeviceFeature: BridgeFeature {
    package init(version: String, broker: any BrokerStatus, hostname: String) {
        self.version = version
        self.broker = broker
        self.hostname = hostname
    }

    let version: String
    /// The offline buffer's counts for the diagnostics (a narrow view of the broker link).
    let broker: any BrokerStatus
    let hostname: String
    /// The shortest interval between two diagnostics published because messages were dropped.
    static let diagnosticsPeriod: Duration = .seconds(5)

    private enum Timer: Sendable { case birth, diagnostics }

    /// The adapters that get a state sensor: every listed one, present or not, or (no list: every adapter BlueZ
    /// has) each one seen since start. A sensor that shows `absent` while its dongle is unplugged says more than one
    /// that vanishes from Home Assistant with it.
    static func sensorAdapters(known: [String], present: [String], listed: [String]?) -> [String] {
        if let listed { return listed.sorted() }
        return Set(known + present).sorted()
    }

    package func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        var discovery: BridgeDeviceDiscovery?
        var adapters: [String] = []
        var announced: Set<String> = []
        var online: Set<String> = []
        var lastDiagnostics: String?

        /// The payload last published on each config topic, so a config change (a device added) republishes only
        /// what changed.
        var published: [String: String] = [:]

        func publishConfigs(changedOnly: Bool = false) {
            guard let discovery else { return }
            let messages = discovery.messages(adapters: adapters)
            for message in messages where !changedOnly || published[message.topic] != message.payload {
                context.publish(message.topic, message.payload, qos: 1, retain: true)
                published[message.topic] = message.payload
            }
            let now = Set(messages.map(\.topic))
            for topic in announced.subtracting(now) {
                context.publish(topic, "", qos: 1, retain: true)
                published[topic] = nil
            }
            announced = now
        }

        func publishDiagnostics(force: Bool) {
            guard let discovery else { return }
            let devices = discovery.config.devices
            let text = BridgeDeviceDiscovery.diagnostics(
                online: devices.filter { online.contains($0.name) }.count, devices: devices.count,
                buffered: broker.offlineBufferCount, dropped: broker.droppedWhileOffline)
            guard force || text != lastDiagnostics else { return }
            lastDiagnostics = text
            context.publish(discovery.diagnosticsTopic, text, qos: 1, retain: true)
        }

        var birth = HomeAssistantBirth()
        var pendingDiagnostics = false

        await runFeatureLoop(events, timer: Timer.self) { input in
            let event: CoreEvent
            switch input {
            case .timer(.birth):
                birth.republishing()
                publishConfigs()
                publishDiagnostics(force: true)
                return []
            case .timer(.diagnostics):
                pendingDiagnostics = false
                publishDiagnostics(force: false)
                return []
            case .event(let next):
                event = next
            }
            switch event {
            case .configApplied(_, let config):
                let next = BridgeDeviceDiscovery(config: config, version: version, hostname: hostname)
                if let previous = discovery, previous.config.homeassistant != next.config.homeassistant
                    || previous.config.mqtt.baseTopic != next.config.mqtt.baseTopic {
                    for topic in announced { context.publish(topic, "", qos: 1, retain: true) }
                    announced = []
                    published = [:]
                    if previous.diagnosticsTopic != next.diagnosticsTopic {
                        context.publish(previous.diagnosticsTopic, "", qos: 1, retain: true)
                    }
                }
                let oldStatus = discovery.flatMap { $0.isEnabled ? $0.statusTopic : nil }
                let newStatus = next.isEnabled ? next.statusTopic : nil
                if oldStatus != newStatus {
                    if let oldStatus { context.unsubscribe(oldStatus) }
                    if let newStatus { context.subscribe(newStatus) }
                }
                online = online.filter { name in config.devices.contains { $0.name == name } }
                adapters = Self.sensorAdapters(known: adapters.filter(config.bluetooth.uses), present: [],
                                               listed: config.bluetooth.adapters?.map(\.name))
                discovery = next
                publishConfigs(changedOnly: true)
                publishDiagnostics(force: false)
            case .brokerConnected:
                publishConfigs()
                publishDiagnostics(force: true)
            case .message(let message):
                guard let discovery, message.topic == discovery.statusTopic, let due = birth.heard(message) else { break }
                return [(due, .birth)]
            case .availability(let device, let value):
                if value { online.insert(device.name) } else { online.remove(device.name) }
                publishDiagnostics(force: false)
            case .messagesDropped:
                // Drops come in floods: the count is published once a period, not once per report.
                guard !pendingDiagnostics else { break }
                pendingDiagnostics = true
                return [(.now + Self.diagnosticsPeriod, .diagnostics)]
            case .adapters(let statuses, _):
                let names = Self.sensorAdapters(known: adapters, present: statuses.map(\.name),
                                                listed: discovery?.config.bluetooth.adapters?.map(\.name))
                guard names != adapters else { break }
                adapters = names
                publishConfigs()
            default:
                break
            }
            return []
        }
    }
}
