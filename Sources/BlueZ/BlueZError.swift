import DBus

/// Failures of BlueZ operations, typed so callers can pick a policy (retry, reconnect, give up)
/// without parsing D-Bus error names.
public enum BlueZError: Error, Sendable, Equatable, CustomStringConvertible {
    // org.bluez.Error.*
    case inProgress
    case notConnected
    /// org.bluez.Error.Failed; the message is kept because it carries the cause
    /// (an ATT error code such as "0x80", or "le-connection-abort-by-local").
    case failed(reason: String)
    case doesNotExist
    case notPermitted
    /// org.bluez.Error.NotPermitted "Not paired": bluetoothd's answer to ATT Insufficient Authentication,
    /// Encryption or Encryption Key Size, i.e. the characteristic needs a paired, encrypted link (docs/pairing.md hint).
    case notPaired
    /// org.bluez.Error.NotPermitted "Notify acquired": the characteristic's notifications are held by an
    /// `AcquireNotify`. Another program's, or, in BlueZ before 5.84, one whose enabling of notifications failed:
    /// bluetoothd never answers such a call and keeps the characteristic acquired until it restarts (seen on 5.66 when
    /// a peripheral refused the unencrypted CCC write and the link dropped while bluetoothd tried to pair).
    case notifyAcquired
    case notSupported
    case notAuthorized
    case invalidArguments
    case invalidOffset
    case invalidValueLength
    case alreadyConnected
    case alreadyExists
    case notReady
    case notAvailable
    case authenticationFailed
    case authenticationCanceled
    case authenticationRejected
    case authenticationTimeout
    case connectionAttemptFailed
    // org.freedesktop.DBus.Error.*
    case noReply
    case serviceUnknown
    case unknownObject
    case unknownMethod
    case disconnected
    /// Any other D-Bus error.
    case other(name: String, message: String)

    // Local conditions.
    case adapterNotFound(String)
    case deviceNotFound(String)
    case characteristicNotFound(String)
    /// A deadline of ours expired; the associated text says what was being waited for.
    case timeout(String)
    /// `org.bluez` has no owner on the bus.
    case bluezUnavailable
    case cancelled

    public init(_ error: DBusError) {
        self = Self.byName[error.name].map { $0(error.message) } ?? .other(name: error.name, message: error.message)
    }

    private static let byName: [String: @Sendable (String) -> BlueZError] = [
        "org.bluez.Error.InProgress": { _ in .inProgress },
        "org.bluez.Error.NotConnected": { _ in .notConnected },
        "org.bluez.Error.Failed": { .failed(reason: $0) },
        "org.bluez.Error.DoesNotExist": { _ in .doesNotExist },
        "org.bluez.Error.NotPermitted": {
            switch $0.lowercased() {
            case "not paired": .notPaired
            case "notify acquired": .notifyAcquired
            default: .notPermitted
            }
        },
        "org.bluez.Error.NotSupported": { _ in .notSupported },
        "org.bluez.Error.NotAuthorized": { _ in .notAuthorized },
        "org.bluez.Error.InvalidArguments": { _ in .invalidArguments },
        "org.bluez.Error.InvalidOffset": { _ in .invalidOffset },
        "org.bluez.Error.InvalidValueLength": { _ in .invalidValueLength },
        "org.bluez.Error.AlreadyConnected": { _ in .alreadyConnected },
        "org.bluez.Error.AlreadyExists": { _ in .alreadyExists },
        "org.bluez.Error.NotReady": { _ in .notReady },
        "org.bluez.Error.NotAvailable": { _ in .notAvailable },
        "org.bluez.Error.AuthenticationFailed": { _ in .authenticationFailed },
        "org.bluez.Error.AuthenticationCanceled": { _ in .authenticationCanceled },
        "org.bluez.Error.AuthenticationRejected": { _ in .authenticationRejected },
        "org.bluez.Error.AuthenticationTimeout": { _ in .authenticationTimeout },
        "org.bluez.Error.ConnectionAttemptFailed": { _ in .connectionAttemptFailed },
        "org.freedesktop.DBus.Error.NoReply": { _ in .noReply },
        "org.freedesktop.DBus.Error.ServiceUnknown": { _ in .serviceUnknown },
        "org.freedesktop.DBus.Error.UnknownObject": { _ in .unknownObject },
        "org.freedesktop.DBus.Error.UnknownMethod": { _ in .unknownMethod },
        "org.freedesktop.DBus.Error.Disconnected": { _ in .disconnected },
        DBusError.cancelledName: { _ in .cancelled },
    ]

    /// Maps whatever a lower layer threw.
    static func from(_ error: any Error) -> BlueZError {
        switch error {
        case let error as BlueZError: error
        case let error as DBusError: BlueZError(error)
        case is CancellationError: .cancelled
        default: .other(name: "\(type(of: error))", message: "\(error)")
        }
    }

    /// True for failures that a later attempt may not repeat (link trouble, busy radio, lost peer),
    /// as opposed to requests that can never succeed (not permitted, unsupported, bad arguments).
    public var isTransient: Bool {
        switch self {
        case .inProgress, .notConnected, .failed, .noReply, .serviceUnknown, .unknownObject, .disconnected,
             .notReady, .notAvailable, .timeout, .bluezUnavailable, .connectionAttemptFailed, .doesNotExist,
             .deviceNotFound, .characteristicNotFound, .alreadyConnected:
            true
        default:
            false
        }
    }

    /// No answer in time: our own deadline, or libdbus's (`NoReply`). The call may still have done its work.
    public var isTimeout: Bool {
        switch self {
        case .timeout, .noReply: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .inProgress: "operation already in progress"
        case .notConnected: "device not connected"
        case .failed(let reason): reason.isEmpty ? "failed" : "failed: \(reason)"
        case .doesNotExist: "object does not exist"
        case .notPermitted: "not permitted"
        case .notPaired: "not paired (the characteristic needs an encrypted link)"
        case .notifyAcquired: "notifications already acquired (AcquireNotify)"
        case .notSupported: "not supported"
        case .notAuthorized: "not authorized"
        case .invalidArguments: "invalid arguments"
        case .invalidOffset: "invalid offset"
        case .invalidValueLength: "invalid value length"
        case .alreadyConnected: "already connected"
        case .alreadyExists: "already exists"
        case .notReady: "adapter not ready"
        case .notAvailable: "not available"
        case .authenticationFailed: "authentication failed"
        case .authenticationCanceled: "authentication canceled"
        case .authenticationRejected: "authentication rejected"
        case .authenticationTimeout: "authentication timed out"
        case .connectionAttemptFailed: "connection attempt failed"
        case .noReply: "no reply from bluetoothd"
        case .serviceUnknown: "peer service unknown (its process is gone)"
        case .unknownObject: "unknown D-Bus object"
        case .unknownMethod: "unknown D-Bus method"
        case .disconnected: "D-Bus connection lost"
        case .other(let name, let message): message.isEmpty ? name : "\(name): \(message)"
        case .adapterNotFound(let name): "adapter \(name) not found"
        case .deviceNotFound(let what): "device \(what) not found"
        case .characteristicNotFound(let what): "characteristic \(what) not found"
        case .timeout(let what): "timed out: \(what)"
        case .bluezUnavailable: "BlueZ (org.bluez) is not on the bus"
        case .cancelled: "cancelled"
        }
    }
}
