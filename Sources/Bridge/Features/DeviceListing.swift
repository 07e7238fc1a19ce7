import Codecs
import Config

/// What `B/bridge/devices` says about a device's link.
/// A device's link as the bridge API and the read model say it (docs/bridge-api.md, `B/bridge/devices`).
public enum DeviceLinkState: String, Sendable {
    case online, offline, connecting
}

/// The `B/bridge/devices` array (docs/bridge-api.md), one element per configured device in config order.
enum DeviceListing {
    /// `owner`, in a fleet only (docs/fleet.md): the bridge that owns the device, nil for none; each element then gains
    /// `"owner"` after its state.
    static func json(_ config: BridgeConfig, states: [String: DeviceLinkState],
                     adapter: (DeviceConfig) -> String, owner: ((DeviceConfig) -> String?)? = nil) -> JSONValue {
        .array(config.devices.map { device in
            var members: [(String, JSONValue)] = [
                ("name", .string(device.name)),
                ("address", .string(device.address.description)),
                ("source", .string(device.source.kind.rawValue)),
                ("adapter", .string(adapter(device))),
                ("state", .string((states[device.name] ?? .connecting).rawValue)),
            ]
            if let owner { members.append(("owner", owner(device).map { .string($0) } ?? .null)) }
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
        })
    }
}
