/// A device's link as the bridge API and the read model say it (docs/bridge-api.md, `B/bridge/devices`).
public enum DeviceLinkState: String, Sendable {
    case online, offline, connecting
}
