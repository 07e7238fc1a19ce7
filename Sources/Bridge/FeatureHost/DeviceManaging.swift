import Config
import MQTT
import Synchronization

/// A change of the running device list asked for by the bridge API (docs/bridge-api.md).
public enum DeviceChange: Sendable {
    /// Start a validated device (saved as a drop-in by the caller).
    case add(DeviceConfig)
    /// Stop a device added through the API and clear its retained topics.
    case remove(name: String)
}

/// Why the core refused a `DeviceChange`; the description is the API's error message.
public enum DeviceChangeError: Error, Sendable, Equatable, CustomStringConvertible {
    case nameTaken(String)
    case addressTaken(String, device: String)
    case unknownDevice(String)
    /// The device is defined in the main config file (file, line): only the file can change it.
    case fromConfigFile(String, file: String, line: Int)

    public var description: String {
        switch self {
        case .nameTaken(let name): "a device named \"\(name)\" already exists"
        case .addressTaken(let address, let device): "address \(address) is already used by device \"\(device)\""
        case .unknownDevice(let name): "no device named \"\(name)\""
        case .fromConfigFile(let name, let file, let line):
            "device \"\(name)\" is defined in \(file)\(line > 0 ? ":\(line)" : ""); remove it there"
        }
    }
}

/// What features may ask of the core beyond publishing: its config, and changes to the device list. The host holds
/// it weakly, so a feature cannot keep the core alive.
public protocol DeviceManaging: AnyObject, Sendable {
    func currentConfig() async -> BridgeConfig
    /// The read model now (docs/dev/ARCHITECTURE.md, "The read model"); never waits for the core's loop.
    var state: BridgeState { get }
    /// Applies the change like a reload (other devices keep running) and returns the device added or removed; nil
    /// when the bridge stops first.
    func updateDevices(_ change: DeviceChange) async -> Result<DeviceConfig, DeviceChangeError>?
    /// A message handled as if the broker had delivered it: a command to its device's session, anything else to the
    /// features whose filters match (the web page's actions take the broker's paths, docs/web.md).
    func submit(_ message: MQTTMessage)
    /// A running device's last published values, by channel in config order; nil when it has no session.
    func latestValues(of device: String) -> [(channel: String, payload: String)]?
}

/// The core as the host knows it: set once the core runs.
package final class CoreReference: Sendable {
    private struct Weak: @unchecked Sendable {
        weak var value: (any DeviceManaging)?
    }
    private let state = Mutex(Weak())

    var core: (any DeviceManaging)? { state.withLock { $0.value } }

    package func set(_ core: any DeviceManaging) { state.withLock { $0.value = core } }
}

extension FeatureContext {
    /// The core's config; nil only when the core has gone.
    public func currentConfig() async -> BridgeConfig? {
        await host.core.core?.currentConfig()
    }

    /// What the bridge knows now; nil only when the core has gone. The core updates it before it emits the event
    /// that tells of a change, so a feature that reads it on an event sees that change (or a newer state).
    public var state: BridgeState? { host.core.core?.state }

    /// A request of the bridge's own, made as a broker client makes it: `message` (its Response Topic is set here)
    /// takes the path a broker message on its topic takes, and the answer published to that Response Topic is
    /// returned; nil after `timeout`, or when the core has gone.
    public func ask(_ message: MQTTMessage, timeout: Duration) async -> String? {
        guard let core = host.core.core else { return nil }
        return await host.localReplies.ask(timeout: timeout) { responseTopic in
            var message = message
            message.responseTopic = responseTopic
            core.submit(message)
        }
    }

    /// A running device's last published values (nil: no session, or the core has gone).
    public func latestValues(of device: String) -> [(channel: String, payload: String)]? {
        host.core.core?.latestValues(of: device)
    }

    /// The adverts feature says what it published for a passive device (`PassiveReadings`).
    package func recordReading(device: String, name: String, payload: String) {
        host.passiveReadings.record(device: device, name: name, payload: payload)
    }

    package var passiveReadings: PassiveReadings { host.passiveReadings }
    package var recentLog: RecentLog { host.recentLog }
    package var publishedListing: PublishedListing { host.publishedListing }

    /// Adds or removes a device (docs/bridge-api.md) through the core.
    public func updateDevices(_ change: DeviceChange) async -> Result<DeviceConfig, DeviceChangeError>? {
        await host.core.core?.updateDevices(change) ?? nil
    }
}
