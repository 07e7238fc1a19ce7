import BridgeFeatureHost
import BridgeFeatures
import BridgeModel
import Codecs
import Config

/// The web page's one view of the bridge (`GET /api/state` and each `state` event, docs/web.md): the `health`
/// answer and the `B/bridge/devices` listing as the bridge API makes them, each device with what the read model,
/// its session and the adverts feature say of it now. Made from values; the feature gathers them.
enum WebStateView {
    struct Inputs {
        var health: JSONValue
        var state: BridgeState
        /// The listing as last published (owners in a fleet); nil before the first.
        var listing: JSONValue?
        var values: (DeviceConfig) -> [(name: String, payload: String)]
        var errors: (String) -> [WebDeviceErrors.Entry]
        var baseTopic: String
        var fleetID: String?
        var now: ContinuousClock.Instant
    }

    static func json(_ inputs: Inputs) -> JSONValue {
        var bridge = inputs.health
        if case .object(var members) = bridge {
            members.append(("base_topic", .string(inputs.baseTopic)))
            members.append(("fleet", inputs.fleetID.map { id in .object([("id", .string(id))]) } ?? .null))
            bridge = .object(members)
        }
        let listed = listedByName(inputs.listing)
        // Made only when a device is missing from the published listing (before the first, or just added).
        let missing = inputs.state.devices.contains { listed[$0.config.name] == nil }
        let fallbackByName = missing
            ? listedByName(DeviceListing.json(inputs.state, fleet: nil, fallbackAdapter: "")) : [:]
        let devices: [JSONValue] = inputs.state.devices.map { device in
            let name = device.config.name
            guard case .object(var members)? = listed[name] ?? fallbackByName[name] else { return .null }
            // The read model's link is newer than a listing made before the last event reached the API feature.
            if !inputs.state.isFleet || device.owned {
                replace(&members, "state", .string(device.link.rawValue))
            }
            members.append(("kind", .string(device.config.isPassive ? "passive" : "connected")))
            // Its broadcasts are encrypted: the page offers to re-arm it (docs/adverts.md, "Re-arming").
            members.append(("encrypted", .bool(device.config.bindkey != nil || device.config.bindkeyFile != nil)))
            members.append(("rssi", device.rssi.map { .int($0) } ?? .null))
            members.append(("last_seen_s", device.lastSeen.map { .int(seconds(inputs.now - $0)) } ?? .null))
            members.append(("values", .object(inputs.values(device.config).map { ($0.name, .object([("value", .string($0.payload))])) })))
            members.append(("commands", .array(device.config.channels.filter(\.writable).map { channel in
                .object([
                    ("channel", .string(channel.name)),
                    ("values", channel.values.isEmpty ? .null : .array(channel.values.map { .string($0.key) })),
                ])
            })))
            members.append(("errors", .array(inputs.errors(name).map { entry in
                .object([("age_s", .int(seconds(inputs.now - entry.at))), ("text", .string(entry.text))])
            })))
            return .object(members)
        }
        return .object([("bridge", bridge), ("devices", .array(devices.filter { $0 != .null }))])
    }

    private static func listedByName(_ listing: JSONValue?) -> [String: JSONValue] {
        guard case .array(let elements)? = listing else { return [:] }
        var out: [String: JSONValue] = [:]
        for element in elements { if let name = element["name"]?.stringValue { out[name] = element } }
        return out
    }

    private static func replace(_ members: inout [(String, JSONValue)], _ key: String, _ value: JSONValue) {
        if let index = members.firstIndex(where: { $0.0 == key }) { members[index].1 = value } else { members.append((key, value)) }
    }

    static func seconds(_ duration: Duration) -> Int { max(0, Int(duration.components.seconds)) }
}

/// Each device's recent errors, as the web page's device view shows them: the errors its session reported and the
/// commands refused for it, the newest `capacity`.
struct WebDeviceErrors {
    struct Entry: Equatable {
        let at: ContinuousClock.Instant
        let text: String
    }

    static let capacity = 10
    static let maxDevices = 1100
    private(set) var entries: [String: [Entry]] = [:]

    mutating func record(_ device: String, _ text: String, at: ContinuousClock.Instant) {
        guard entries[device] != nil || entries.count < Self.maxDevices else { return }
        var list = entries[device, default: []]
        if list.count == Self.capacity { list.removeFirst() }
        list.append(Entry(at: at, text: text))
        entries[device] = list
    }

    mutating func keep(only names: Set<String>) {
        entries = entries.filter { names.contains($0.key) }
    }

    func of(_ device: String) -> [Entry] { entries[device] ?? [] }
}
