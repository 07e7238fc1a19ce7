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
    }

    var component: Component
    var objectID: String
    var name: String
    var fields: [(String, JSONValue)]
    /// Home Assistant subscribes (and publishes commands) with it.
    var qos: Int
}
