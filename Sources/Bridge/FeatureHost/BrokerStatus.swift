import MQTT

/// The broker connection's health as features report it (the bridge API's `health`, the bridge device's
/// diagnostics): a narrow view, so no feature holds the `MQTTLink` and reaches its client. `MQTTLink` is the real
/// one.
package protocol BrokerStatus: Sendable {
    var connectionState: MQTTConnectionState { get }
    /// Messages waiting for the broker in the offline buffer.
    var offlineBufferCount: Int { get }
    /// Messages the offline buffer dropped, since start.
    var droppedWhileOffline: Int { get }
}
