import Codecs
import Synchronization

/// What the adverts feature last published for each passive device, reading by reading (docs/adverts-mqtt.md):
/// a broadcaster has no session that keeps its last values, and readers outside MQTT (the web page) show what MQTT
/// shows. Bounded by the adverts' own bounds (readings a device, automatic devices), which decide what is published.
package final class PassiveReadings: Sendable {
    private let readings = Mutex([String: [(name: String, payload: String)]]())

    package func record(device: String, name: String, payload: String) {
        readings.withLock { all in
            if let index = all[device]?.firstIndex(where: { $0.name == name }) {
                all[device]![index].payload = payload
            } else {
                all[device, default: []].append((name, payload))
            }
        }
    }

    package func of(_ device: String) -> [(name: String, payload: String)] { readings.withLock { $0[device] ?? [] } }

    /// Forgets the devices that are not in `names` (they left the config).
    package func keep(only names: Set<String>) {
        readings.withLock { all in all = all.filter { names.contains($0.key) } }
    }
}

/// The device listing of `B/bridge/devices` as the bridge API last made it (docs/bridge-api.md): in a fleet it names
/// each device's owner, which the fleet's directory knows and the read model does not.
package final class PublishedListing: Sendable {
    private let listing = Mutex<JSONValue?>(nil)

    package func set(_ value: JSONValue) { listing.withLock { $0 = value } }

    package var current: JSONValue? { listing.withLock { $0 } }
}
