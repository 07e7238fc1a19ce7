import BlueZ
import Logging

/// What the pairing agent needs from BlueZ: an exported `Agent1`, its registration with `AgentManager1`, and the news
/// that bluetoothd or an adapter appeared (a restarted bluetoothd forgets its agents). A narrow interface, so
/// `PairingAgentFeature` holds no `BlueZClient`; `BlueZClient` is the real one.
package protocol AgentBus: Sendable {
    /// An agent answering only bluetoothd, exported on the bus.
    func exportAgent(logger: Logger) async -> PairingAgent
    func registerAgent(path: String, capability: String, makeDefault: Bool) async throws(BlueZError)
    func unregisterAgent(path: String) async throws(BlueZError)
    var isAvailable: Bool { get async }
    func events() -> AsyncStream<BlueZEvent>
}

extension BlueZClient: AgentBus {
    package func exportAgent(logger: Logger) async -> PairingAgent {
        let agent = PairingAgent(policy: AgentPolicy(), logger: logger, bluez: self)
        await agent.export(on: connection)
        return agent
    }
}
