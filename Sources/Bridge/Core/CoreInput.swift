import BlueZ
import BridgeFeatureHost
import Config
import MQTT

/// Everything the core reacts to, in one inbox consumed in order by `BridgeCore.run()`: nothing else touches the
/// core's state, so no input sees another half done (actors are reentrant; an inbox is not).
enum CoreInput: Sendable {
    case bluez(BlueZEvent)
    case broker(connected: Bool)
    case dropped(MQTTDropReport)
    /// A reload swapped in a new MQTT client; `done` once it has the core's and the features' subscriptions.
    case clientReplaced(MQTTClient, done: @Sendable () -> Void)
    /// What a feature asks (republish, fleet ownership and holds).
    case request(CoreRequest)
    /// Adapter health and placement: session reports, discovery results, timers, recovery steps.
    case adapter(AdapterMachine.AdapterInput)
    /// BlueZ's adapter list, read when the machine asked.
    case adaptersRead([AdapterInfo])
    /// A config change; `reply` gets the device added or removed (nil for a reload), or nil when the bridge stops.
    case change(ConfigChange, reply: @Sendable (Result<DeviceConfig?, DeviceChangeError>?) -> Void)
    /// The sessions a change stopped have ended.
    case sessionsStopped(CoreMachine.ChangeID)
    /// A command for a device that was held when it arrived (`CommandRouter`).
    case heldCommand(device: String, MQTTMessage)
    /// The watchdog's probe: answered when the loop gets to it.
    case ping(@Sendable () -> Void)
    case shutdown(done: @Sendable () -> Void)
}
