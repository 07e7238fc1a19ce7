import BlueZ
import BridgeModel
import Logging

/// What a session reports to the core; the core turns these into `CoreEvent`s for the features (availability, RSSI,
/// events and logs, Home Assistant, command replies), so the session itself publishes nothing but values.
public enum DeviceReport: Sendable {
    case availability(Bool)
    case rssi(Int)
    case event(BridgeEvent)
    case rejected(CommandRejection)
    /// A command that carried reply targets completed.
    case completed(DeviceCommand)
    /// What GATT Device Information (0x180A) says, read once per session.
    case identified(DeviceIdentity)
    /// Fleet: the device was given up and is disconnected (`SessionAction.confirmRelease`).
    case released
    /// BlueZ dropped the device object it had reported an RSSI for: it has not been heard for a while.
    case unseen
    /// A Connect through the adapter (its object path) succeeded (`error` nil) or failed: the adapter's health
    /// (docs/adapters.md). Sent from the connect job, not the loop.
    case adapterOperation(adapter: String, error: String?)
}

/// A command that was not carried out (docs/mqtt.md `B/bridge/log`, §6 reports, §7 replies).
public struct CommandRejection: Sendable, Hashable {
    /// The command topic.
    public var topic: String
    public var reason: String
    /// The payload as received, when it matters to the report (cut and escaped by whoever publishes it).
    public var payload: [UInt8]?
    public var replies: [ReplyTarget]

    public init(topic: String, reason: String, payload: [UInt8]? = nil, replies: [ReplyTarget] = []) {
        self.topic = topic
        self.reason = reason
        self.payload = payload
        self.replies = replies
    }
}

/// Discovery on an adapter, shared by every session that looks for its device there (ref-counted by the owner).
public protocol DiscoveryControl: Sendable {
    func want(_ device: String, adapter: String)
    func release(_ device: String, adapter: String)
}

/// Everything a session talks to, injected, so a session runs in process against fakes in tests.
package struct SessionEnvironment: Sendable {
    let gatt: any GATTClient
    let gate: ConnectGate<String>
    let discovery: any DiscoveryControl
    let publisher: any MessagePublisher
    let topics: BridgeTopics
    let logger: Logger
    let policy: ReconnectPolicy
    let jitter: @Sendable () -> Double
    /// Waits (at most the given time) until the pairing agent can answer this device's pairing; true when it can.
    /// `Pair` before that would pair with bluetoothd's fallback capability (`AgentReadiness`).
    let agentReady: @Sendable (_ needsKeyboard: Bool, _ within: Duration) async -> Bool
    /// Called from the session's loop, in order; must not block.
    let report: @Sendable (DeviceReport) -> Void

    package init(gatt: any GATTClient, gate: ConnectGate<String>, discovery: any DiscoveryControl,
         publisher: any MessagePublisher, topics: BridgeTopics, logger: Logger, policy: ReconnectPolicy = .standard,
         jitter: @escaping @Sendable () -> Double = { Double.random(in: -1...1) },
         agentReady: @escaping @Sendable (Bool, Duration) async -> Bool = { _, _ in true },
         report: @escaping @Sendable (DeviceReport) -> Void) {
        self.agentReady = agentReady
        self.gatt = gatt
        self.gate = gate
        self.discovery = discovery
        self.publisher = publisher
        self.topics = topics
        self.logger = logger
        self.policy = policy
        self.jitter = jitter
        self.report = report
    }
}
