import BridgeFeatureHost
import BridgeModel
import Config

/// What a config change does to the running bridge, decided from the two configs alone: which sessions stop (removed
/// or changed devices; all of them when the base topic moves, since every topic moves with it), which start, and
/// which bridge-wide things move. Devices whose config did not change keep their session and connection.
struct ConfigDiff: Sendable, Equatable {
    /// Devices of the old config whose session stops (their retained topics are cleared under the old topics).
    var leaving: [DeviceConfig]
    /// Devices of the new config that get a new session (added, changed, or all when the base topic moved).
    var starting: [DeviceConfig]
    var baseChanged: Bool
    /// `B/bridge/state` moved: the old one is cleared and the new one says `online`.
    var bridgeStateMoved: Bool
    var bluetoothChanged: Bool
    var fleetChanged: Bool

    init(old: BridgeConfig, new: BridgeConfig) {
        let newByName = Dictionary(new.devices.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let oldByName = Dictionary(old.devices.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        baseChanged = old.mqtt.baseTopic != new.mqtt.baseTopic
        let base = baseChanged
        leaving = old.devices.filter { base || newByName[$0.name] != $0 }
        starting = new.devices.filter { base || oldByName[$0.name] != $0 }
        bridgeStateMoved = base || BridgeTopics(settings: old.mqtt).bridgeState != BridgeTopics(settings: new.mqtt).bridgeState
        bluetoothChanged = old.bluetooth != new.bluetooth
        fleetChanged = (old.fleet != nil) != (new.fleet != nil)
    }

    var isEmpty: Bool { leaving.isEmpty && starting.isEmpty && !bridgeStateMoved && !bluetoothChanged && !fleetChanged }
}

