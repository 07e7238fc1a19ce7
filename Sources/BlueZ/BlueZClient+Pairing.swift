import Bluetooth
import DBus

/// Pairing (docs/pairing.md): the agent's registration with `org.bluez.AgentManager1`, `Device1.Pair` and `Trusted`.
extension BlueZClient {
    static let agentManager = "org.bluez.AgentManager1"
    static let agentManagerPath = "/org/bluez"

    /// `AgentManager1.RegisterAgent`, then `RequestDefaultAgent` when `makeDefault`.
    public func registerAgent(path: String, capability: String, makeDefault: Bool) async throws(BlueZError) {
        _ = try await call(Self.agentManagerPath, Self.agentManager, "RegisterAgent",
                           [.objectPath(path), .string(capability)], timeout: .seconds(10), what: "registering the agent")
        if makeDefault {
            _ = try await call(Self.agentManagerPath, Self.agentManager, "RequestDefaultAgent", [.objectPath(path)],
                               timeout: .seconds(10), what: "making the agent the default one")
        }
    }

    /// `AgentManager1.UnregisterAgent`; an agent bluetoothd does not know (it restarted) is no failure.
    public func unregisterAgent(path: String) async throws(BlueZError) {
        do throws(BlueZError) {
            _ = try await call(Self.agentManagerPath, Self.agentManager, "UnregisterAgent", [.objectPath(path)],
                               timeout: .seconds(10), what: "unregistering the agent")
        } catch .doesNotExist {
            return
        }
    }

    /// `Device1.Pair` (which connects on LE), queued behind other operations on the device, then `Trusted = true`
    /// so bluetoothd lets the bonded device reconnect and use its services without asking an agent again.
    /// On timeout the attempt is withdrawn with `CancelPairing`. AlreadyExists (paired meanwhile) counts as success.
    ///
    /// bluetoothd answers `Pair` only after the service discovery that follows the bonding; on a link that stalls
    /// there (an ATT request waits out its 30 s timeout, seen with a private-address device on real BlueZ) the
    /// keys are stored long before the answer. A timeout therefore asks the device whether it is `Paired` first:
    /// if so the bond stands, and cancelling it would only throw it away.
    public func pair(device path: String, timeout: Duration = .seconds(60)) async throws(BlueZError) {
        let what = "pairing \(mirror.device(path)?.address.description ?? path)"
        try await serialized(path) { () async throws(BlueZError) in
            do throws(BlueZError) {
                _ = try await call(path, BlueZNames.device, "Pair", timeout: timeout, what: what)
            } catch .alreadyExists {
            } catch let error where error.isTimeout {
                if await isPaired(path) { return }
                _ = try? await call(path, BlueZNames.device, "CancelPairing", timeout: .seconds(5), what: "cancelling pairing")
                throw error
            }
        }
        try await setTrusted(device: path)
    }

    /// `Paired` as bluetoothd says it now (not the mirror, which may not have caught up).
    private func isPaired(_ path: String) async -> Bool {
        let paired = try? await connection.getProperty(destination: BlueZNames.service, path: path,
                                                       interface: BlueZNames.device, name: "Paired", timeout: .seconds(5))
        return paired?.bool == true
    }

    public func setTrusted(device path: String, _ trusted: Bool = true) async throws(BlueZError) {
        do {
            try await connection.setProperty(destination: BlueZNames.service, path: path, interface: BlueZNames.device,
                                             name: "Trusted", value: .bool(trusted), timeout: .seconds(10))
        } catch {
            throw BlueZError.from(error)
        }
    }
}
