import BlueZ

/// The one-line STATUS= text systemd shows in `systemctl status`, e.g. `mqtt connected; 2/3 devices online`.
enum StatusLine {
    static func describe(core: BridgeCore, mqtt: MQTTLink, bluez: BlueZClient) async -> String {
        let snapshot = await core.snapshot()
        var parts = [mqtt.client.isConnected ? "mqtt connected" : "mqtt disconnected"]
        if await !bluez.isAvailable { parts.append("bluetoothd unavailable") }
        parts.append("\(snapshot.devicesOnline)/\(snapshot.devices) devices online")
        return parts.joined(separator: "; ")
    }
}
