import Codecs

/// One Home Assistant entity before the parts every entity of a device shares (availability, device, origin) are
/// added: its platform, the object level of its discovery topic, and its platform-specific keys in publishing order.
struct DiscoveryEntity: Sendable, Equatable {
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

    static func == (lhs: DiscoveryEntity, rhs: DiscoveryEntity) -> Bool {
        lhs.component == rhs.component && lhs.objectID == rhs.objectID && lhs.name == rhs.name && lhs.qos == rhs.qos
            && JSONValue.object(lhs.fields) == JSONValue.object(rhs.fields)
    }
}
