import Codecs

/// One Home Assistant entity before the parts every entity of a device shares (availability, device, origin) are
/// added: its platform, the object level of its discovery topic, and its platform-specific keys in publishing order.
struct DiscoveryEntity: Sendable {
    enum Component: String, Sendable {
        case sensor
        case binarySensor = "binary_sensor"
        case `switch`
        case light
        case text
        case event
        /// A beacon's presence (docs/adverts.md).
        case deviceTracker = "device_tracker"
        /// A device trigger: not an entity, so it has no name, unique_id or availability (Home Assistant's
        /// TRIGGER_DISCOVERY_SCHEMA drops them), only the `device` block that ties it to its device.
        case deviceAutomation = "device_automation"
    }

    var component: Component
    var objectID: String
    var name: String
    var fields: [(String, JSONValue)]
    /// Home Assistant subscribes (and publishes commands) with it.
    var qos: Int
}
