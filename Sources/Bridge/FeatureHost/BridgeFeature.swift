import BridgeModel
import MQTT
import Config

/// A unit of bridge behaviour built on the core's events (zigbee2mqtt's "extensions"): availability, RSSI, events
/// and logs, Home Assistant discovery. Each runs as one task with its own state, and ends when `events` ends.
public protocol BridgeFeature: Sendable {
    func run(_ events: FeatureEvents, _ context: FeatureContext) async
    /// Whether `CoreEvent.broadcast` reaches this feature: broadcasts arrive about once a second per sensor, and a
    /// feature that ignores them should not wake for each.
    var wantsBroadcasts: Bool { get }
    /// Whether `CoreEvent.advertisement` reaches this feature (the Bluetooth proxy's): every device heard, tens a
    /// second. A feature that says so also makes the core scan and build them (`BridgeCore.init`); with none, the
    /// core builds none.
    var wantsRawAdvertisements: Bool { get }
}

extension BridgeFeature {
    public var wantsBroadcasts: Bool { false }
    public var wantsRawAdvertisements: Bool { false }
}

/// What a feature may do: publish, subscribe to topics of its own (their messages arrive as `.message` events), and
/// ask the sessions to republish their state.
public struct FeatureContext: Sendable {
    let id: Int
    let host: FeatureHost

    public func publish(_ topic: String, _ payload: String, qos: Int = 1, retain: Bool = false) {
        host.recentLog.record(topic, payload)
        host.link.publish(topic, payload, qos: qos, retain: retain)
    }

    /// A message to a local Response Topic (`LocalReplyTopic`) is an answer to the bridge's own request: handed to
    /// the one waiting for it, never published.
    public func publish(_ message: MQTTMessage) {
        if LocalReplyTopic.isLocal(message.topic) {
            _ = host.localReplies.deliver(message.topic, message.payloadString)
            return
        }
        host.link.publish(message)
    }

    /// Subscribes on the current client and on any client a reload swaps in. `retained`: the filter's topics carry
    /// retained state, which this feature gets even when another feature subscribed the filter first (see
    /// `FeatureHost.subscribe`); every feature that shares such a filter must say so.
    public func subscribe(_ filter: String, retained: Bool = false) {
        host.subscribe(filter, feature: id, retained: retained)
    }

    public func unsubscribe(_ filter: String) {
        host.unsubscribe(filter, feature: id)
    }

    /// The sessions' GATT client and connect gate (`PeripheralAccess`), for a feature that connects devices of its own.
    public var peripherals: PeripheralAccess? { host.peripherals }

    /// Every session publishes its availability (and rssi) again; with `states`, every channel's last value too.
    public func requestRepublish(states: Bool) {
        host.requests.yield(.republish(states: states))
    }

    /// Fleet (docs/fleet.md): tells the core whether this bridge owns the device named `device`.
    public func setOwnership(_ device: String, owned: Bool) {
        host.requests.yield(.ownership(device: device, owned: owned))
    }

    /// Passive (docs/adverts.md): the adverts feature, which publishes a broadcaster's `availability` itself, says
    /// so here, so the other features (the device list, the fleet's link) hear it as from a session; the availability
    /// topic feature does not publish it again.
    public func setAvailability(_ device: String, online: Bool) {
        host.requests.yield(.availability(device: device, online: online))
    }

    /// Passive (docs/adverts.md, "Re-arming"): tells the adverts feature (`CoreEvent.rearm`) that the device counts
    /// from zero again. Every feature hears it, in order with the broadcasts heard after it.
    public func rearm(_ device: DeviceConfig) {
        host.emit(.rearm(device))
    }

    /// The Bluetooth proxy: how many links it holds on each adapter (by name), which the placement of the bridge's own
    /// devices counts against the adapter's `max_connections`.
    public func setExternalLinks(_ counts: [String: Int]) {
        host.requests.yield(.externalLinks(counts))
    }

    /// Fleet: an owned device is held (`OwnershipAction.hold`) or no longer.
    public func setHeld(_ device: String, held: Bool) {
        host.requests.yield(.hold(device: device, held: held))
    }
}
