/// Why a step of a device session failed.
///
/// Deliberately free of BlueZ and D-Bus types so the session core can be tested without a bus: the orchestrator maps
/// each `BlueZError` (and its own timeouts) onto one of these, and `ReconnectPolicy` decides what happens next.
public enum FailureKind: Sendable, Hashable, CustomStringConvertible {
    /// `org.bluez.Error.Failed "le-connection-abort-by-local"`: the controller gave up; usually fine a moment later.
    case connectAbortedLocally
    /// Any other `org.bluez.Error.Failed` from `Connect` ("br-connection-page-timeout", "Host is down", …).
    case connectFailed(String)
    /// `org.bluez.Error.InProgress`: a connection attempt is already running in bluetoothd.
    case inProgress
    /// `org.bluez.Error.NotReady`: the adapter is not ready right now.
    case notReady
    /// `org.bluez.Error.DoesNotExist` / `org.freedesktop.DBus.Error.UnknownObject`: the device object vanished
    /// (BlueZ drops temporary devices it has not seen for a while).
    case deviceGone
    /// `org.bluez.Error.NotConnected` from a GATT operation.
    case notConnected
    /// `Connect` did not answer within the policy's connect timeout.
    case connectTimeout
    /// Services were not resolved within the policy's resolve timeout.
    case resolveTimeout
    /// Subscribing a notify channel failed.
    case subscribeFailed(String)
    /// `org.freedesktop.DBus.Error.NoReply`: bluetoothd did not answer a call in time.
    case noReply
    /// `org.freedesktop.DBus.Error.ServiceUnknown`: the peer of a call is gone.
    case serviceUnknown
    /// A configured characteristic is not in the GATT tree after resolution (the associated value names it).
    case characteristicMissing(String)
    /// `Connected` went false after the connection was established.
    case linkLost
    /// The adapter is powered off (observed, so a `Powered` change will follow when it comes back).
    case adapterOff
    /// The adapter object is gone.
    case adapterMissing
    /// `org.bluez` left the bus.
    case bluezGone
    /// Pairing was refused: `AuthenticationFailed`/`Rejected`/`Canceled`/`Timeout` (a wrong passkey, a refusing
    /// peripheral). Retried only slowly: some peripherals lock out after repeated wrong passkeys.
    case authentication(String)
    /// Anything else, with its message.
    case other(String)

    /// The kind without its associated value: what the policy table is keyed by.
    public enum Category: String, Sendable, Hashable, CaseIterable {
        case connectAbortedLocally, connectFailed, inProgress, notReady, deviceGone, notConnected
        case connectTimeout, resolveTimeout, subscribeFailed, noReply, serviceUnknown, characteristicMissing
        case linkLost, adapterOff, adapterMissing, bluezGone, other
        case authentication
    }

    public var category: Category {
        switch self {
        case .connectAbortedLocally: .connectAbortedLocally
        case .connectFailed: .connectFailed
        case .inProgress: .inProgress
        case .notReady: .notReady
        case .deviceGone: .deviceGone
        case .notConnected: .notConnected
        case .connectTimeout: .connectTimeout
        case .resolveTimeout: .resolveTimeout
        case .subscribeFailed: .subscribeFailed
        case .noReply: .noReply
        case .serviceUnknown: .serviceUnknown
        case .characteristicMissing: .characteristicMissing
        case .linkLost: .linkLost
        case .adapterOff: .adapterOff
        case .adapterMissing: .adapterMissing
        case .bluezGone: .bluezGone
        case .other: .other
        case .authentication: .authentication
        }
    }

    /// One line for logs and `B/bridge/event` error messages.
    public var description: String {
        switch self {
        case .connectAbortedLocally: "connection aborted locally (le-connection-abort-by-local)"
        case .connectFailed(let reason): "connection failed: \(reason)"
        case .inProgress: "a connection attempt is already in progress"
        case .notReady: "adapter not ready"
        case .deviceGone: "device object is gone"
        case .notConnected: "device not connected"
        case .connectTimeout: "connection timed out"
        case .resolveTimeout: "service resolution timed out"
        case .subscribeFailed(let reason): "subscription failed: \(reason)"
        case .noReply: "bluetoothd did not reply"
        case .serviceUnknown: "bluetoothd is not on the bus"
        case .characteristicMissing(let uuid): "characteristic \(uuid) not found on the device"
        case .linkLost: "link lost"
        case .adapterOff: "adapter powered off"
        case .adapterMissing: "adapter missing"
        case .bluezGone: "bluetoothd gone"
        case .other(let message): message
        case .authentication(let reason): "pairing failed: \(reason) (check the device's passkey and pairing mode)"
        }
    }
}
