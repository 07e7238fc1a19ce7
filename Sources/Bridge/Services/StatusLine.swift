/// The one-line STATUS= text systemd shows in `systemctl status`, e.g. `mqtt connected; 2/3 devices online`. A failed
/// reload stays visible there until a later reload succeeds, so an operator who only looks at `systemctl status` learns
/// that the file on disk is not what is running.
public struct StatusLine: Sendable, Equatable {
    public var mqttConnected: Bool
    public var bluezAvailable: Bool
    public var devicesOnline: Int
    public var devices: Int
    /// In a fleet, how many devices this bridge owns: only those it can have online.
    public var owned: Int?
    public var reloadFailure: String?

    public init(mqttConnected: Bool, bluezAvailable: Bool, devicesOnline: Int, devices: Int, owned: Int? = nil,
                reloadFailure: String? = nil) {
        self.mqttConnected = mqttConnected
        self.bluezAvailable = bluezAvailable
        self.devicesOnline = devicesOnline
        self.devices = devices
        self.owned = owned
        self.reloadFailure = reloadFailure
    }

    public var text: String {
        var parts = [mqttConnected ? "mqtt connected" : "mqtt disconnected"]
        if !bluezAvailable { parts.append("bluetoothd unavailable") }
        if let owned {
            parts.append("\(devicesOnline)/\(owned) owned devices online (\(devices) saved)")
        } else {
            parts.append("\(devicesOnline)/\(devices) devices online")
        }
        if let reloadFailure { parts.append("reload failed, old config kept: \(reloadFailure)") }
        return parts.joined(separator: "; ")
    }
}
