import Bluetooth
import DBus
import Logging
import Synchronization

/// Our `org.bluez.Agent1`: an object on the BlueZ client's connection that bluetoothd asks for passkeys and
/// confirmations, answered from an `AgentPolicy`.
///
/// The policy sits behind a mutex because the calls are answered on the D-Bus loop thread, which must never wait for
/// an actor; a reload swaps the policy in one step. bluetoothd routes the requests of a `Device1.Pair` to the agent
/// registered from the caller's connection, so this must be exported on the connection that calls `Pair`.
public final class PairingAgent: Sendable {
    public static let defaultPath = "/org/gattbridge/agent"

    public let path: String
    private let state: Mutex<AgentPolicy>
    private let logger: Logger
    /// The unique bus name of `org.bluez`'s owner now (nil: none). Any process on the system bus can call an
    /// exported object; only bluetoothd may ask this one for a passkey.
    private let trustedCaller: @Sendable () -> String?

    public init(path: String = PairingAgent.defaultPath, policy: AgentPolicy, logger: Logger,
                trustedCaller: @escaping @Sendable () -> String?) {
        self.path = path
        self.state = Mutex(policy)
        self.logger = logger
        self.trustedCaller = trustedCaller
    }

    /// An agent that takes calls only from the current owner of `org.bluez` as `bluez` knows it.
    public convenience init(path: String = PairingAgent.defaultPath, policy: AgentPolicy, logger: Logger,
                            bluez: BlueZClient) {
        self.init(path: path, policy: policy, logger: logger, trustedCaller: { bluez.ownerName.withLock { $0 } })
    }

    public var policy: AgentPolicy {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }

    /// Starts answering calls to `path` on `connection`.
    public func export(on connection: DBusConnection) async {
        await connection.exportHandler(path: path) { [self] message in reply(to: message) }
    }

    /// Runs on the loop thread: a lock, a lookup, a log line; nothing that blocks.
    func reply(to message: DBusMessage) -> DBusReply {
        guard message.interface == nil || message.interface == AgentPolicy.agentInterface, let member = message.member else {
            return .error(DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod",
                                    message: "\(message.interface ?? "").\(message.member ?? "") is not implemented"))
        }
        guard let sender = message.sender, sender == trustedCaller() else {
            logger.warning("agent: \(member) from \(message.sender ?? "an unknown sender") refused: only org.bluez may call the agent")
            return .error(DBusError(name: AgentPolicy.rejectedName, message: "only org.bluez may call this agent"))
        }
        let device = message.body.first?.string.flatMap(AgentPolicy.address(ofDevicePath:))
        let answer = state.withLock { $0.answer(member, device: device) }
        switch answer {
        case .passkey(let passkey):
            // The passkey itself is never logged.
            logger.info("agent: \(member) for \(device?.description ?? "-"): answered with the configured passkey")
            return .values([.uint32(passkey)])
        case .accept:
            if member != "Release" && member != "Cancel" {
                logger.info("agent: \(member) for \(device?.description ?? "-"): accepted")
            } else {
                logger.debug("agent: \(member)")
            }
            return .values([])
        case .reject(let reason):
            logger.notice("agent: \(member) rejected: \(reason)")
            return .error(DBusError(name: AgentPolicy.rejectedName, message: reason))
        }
    }
}
