import BridgeSession

/// What a feature that connects to devices of its own (the Bluetooth proxy) shares with the sessions: the GATT client
/// and the adapters' connect gate, so its connects queue with theirs, one attempt at a time per adapter
/// (docs/adapters.md), and its GATT work goes through the same client, one operation at a time per device.
public struct PeripheralAccess: Sendable {
    public let gatt: any GATTClient
    public let gate: ConnectGate<String>

    package init(gatt: any GATTClient, gate: ConnectGate<String>) {
        self.gatt = gatt
        self.gate = gate
    }
}
