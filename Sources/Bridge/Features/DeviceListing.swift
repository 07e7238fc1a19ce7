import BridgeFeatureHost
import BridgeFleet
import BridgeModel
import Codecs
import Config

/// The `B/bridge/devices` array (docs/bridge-api.md), one element per configured device in config order.
package enum DeviceListing {
    /// `owner`, in a fleet only (docs/fleet.md): the bridge that owns the device, nil for none; each element then gains
    /// `"owner"` after its state.
    static func json(_ config: BridgeConfig, states: [String: DeviceLinkState],
                     adapter: (DeviceConfig) -> String, owner: ((DeviceConfig) -> String?)? = nil) -> JSONValue {
        .array(config.devices.map { device in
            element(device, adapter: adapter(device), state: states[device.name] ?? .connecting,
                    owner: owner.map { owner in { owner(device) } })
        })
    }

    /// From the read model (docs/dev/ARCHITECTURE.md, "The read model"): each device's link and adapter as the core
    /// keeps them (`fallbackAdapter` for one not placed and configured on none); in a fleet the owner and the state
    /// the fleet's directory gives, as a device another bridge owns has no link here.
    package static func json(_ state: BridgeState, fleet: FleetDirectory?, fallbackAdapter: String) -> JSONValue {
        .array(state.devices.map { device in
            let adapter = device.adapter ?? device.config.adapter ?? fallbackAdapter
            guard let fleet else { return element(device.config, adapter: adapter, state: device.link, owner: nil) }
            let (owner, link) = fleet.listing(device.config.topicLevel, session: device.link)
            return element(device.config, adapter: adapter, state: link, owner: { owner })
        })
    }

    private static func element(_ device: DeviceConfig, adapter: String, state: DeviceLinkState,
                                owner: (() -> String?)?) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("name", .string(device.name)),
            ("address", .string(device.address.description)),
            ("source", .string(device.source.kind.rawValue)),
            ("adapter", .string(adapter)),
            ("state", .string(state.rawValue)),
        ]
        if let owner { members.append(("owner", owner().map { .string($0) } ?? .null)) }
        members.append(("channels", .array(device.channels.map { channel in
                .object([
                    ("name", .string(channel.name)),
                    ("characteristic", .string(channel.service.map { "\($0)/\(channel.characteristic)" }
                                               ?? channel.characteristic.description)),
                    ("codec", .string(channel.codecKind.rawValue)),
                    // Not configured: decided at connect time from the characteristic's properties.
                    ("mode", .string(channel.mode?.rawValue ?? "auto")),
                    ("writable", .bool(channel.writable)),
                ])
            })))
        return .object(members)
    }
}
