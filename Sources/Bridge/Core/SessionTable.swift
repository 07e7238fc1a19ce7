import Bluetooth
import BridgeFeatureHost
import BridgeFleet
import BridgeSession
import Config

/// The core's running sessions: by device name (the router's targets), by address (BlueZ's facts name devices by
/// address), and the publisher each one's values go through (`HoldingPublisher`, the fleet's holds on the value path).
struct SessionTable: Sendable {
    private(set) var byName: [String: DeviceSession] = [:]
    private(set) var byAddress: [BluetoothAddress: DeviceSession] = [:]
    private(set) var holders: [String: HoldingPublisher] = [:]

    subscript(name: String) -> DeviceSession? { byName[name] }

    var all: Dictionary<String, DeviceSession>.Values { byName.values }

    mutating func add(_ session: DeviceSession, holder: HoldingPublisher) {
        byName[session.config.name] = session
        byAddress[session.config.address] = session
        holders[session.config.name] = holder
    }

    /// Takes the device's session out; its holder stays until `forget` (the install that follows the stop).
    mutating func remove(_ device: DeviceConfig) -> DeviceSession? {
        byAddress[device.address] = nil
        return byName.removeValue(forKey: device.name)
    }

    mutating func forget(_ name: String) { holders[name] = nil }

    mutating func removeAll() -> [DeviceSession] {
        defer { (byName, byAddress) = ([:], [:]) }
        return Array(byName.values)
    }
}

/// The answers owed to config changes, by the id the machine knows each change by.
struct PendingReplies: Sendable {
    typealias Reply = @Sendable (Result<DeviceConfig?, DeviceChangeError>?) -> Void
    private var waiting: [CoreMachine.ChangeID: Reply] = [:]
    private var next: CoreMachine.ChangeID = 0

    mutating func add(_ reply: @escaping Reply) -> CoreMachine.ChangeID {
        defer { next += 1 }
        waiting[next] = reply
        return next
    }

    mutating func answer(_ id: CoreMachine.ChangeID, _ result: Result<DeviceConfig?, DeviceChangeError>) {
        waiting.removeValue(forKey: id)?(result)
    }

    /// The bridge stops: every change still waiting is answered nil.
    mutating func answerAll(_ result: Result<DeviceConfig?, DeviceChangeError>?) {
        for reply in waiting.values { reply(result) }
        waiting = [:]
    }
}
