import BlueZ

/// The exit codes of docs/cli.md (the sysexits.h values scripts already know).
enum ExitStatus {
    static let success: Int32 = 0
    static let usage: Int32 = 64
    static let dataError: Int32 = 65
    static let unavailable: Int32 = 69
    static let temporaryFailure: Int32 = 75
    static let configError: Int32 = 78
    /// 128 + SIGINT: a one-shot command interrupted before it finished.
    static let interrupted: Int32 = 130

    /// How a BlueZ failure ends a command. "Not there" (no BlueZ, adapter, device or characteristic) is 69, something
    /// a retry might fix (the link, the peer refusing or timing out a GATT operation) is 75.
    static func code(for error: BlueZError) -> Int32 {
        switch error {
        case .bluezUnavailable, .adapterNotFound, .deviceNotFound, .characteristicNotFound, .notReady,
             .serviceUnknown:
            unavailable
        case .cancelled:
            interrupted
        case .inProgress, .notConnected, .failed, .doesNotExist, .notPermitted, .notPaired, .notifyAcquired,
             .notSupported, .notAuthorized,
             .invalidArguments, .invalidOffset, .invalidValueLength, .alreadyConnected, .alreadyExists, .notAvailable,
             .authenticationFailed, .authenticationCanceled, .authenticationRejected, .authenticationTimeout,
             .connectionAttemptFailed, .noReply, .unknownObject, .unknownMethod, .disconnected, .other, .timeout:
            temporaryFailure
        }
    }

    /// The error as a user reads it: D-Bus errors keep their D-Bus name, so a search for the name finds BlueZ's docs.
    static func describe(_ error: BlueZError) -> String {
        guard let name = dbusName(error) else { return error.description }
        if case .other = error { return error.description }
        return "\(name): \(error.description)"
    }

    private static func dbusName(_ error: BlueZError) -> String? {
        switch error {
        case .inProgress: "org.bluez.Error.InProgress"
        case .notConnected: "org.bluez.Error.NotConnected"
        case .failed: "org.bluez.Error.Failed"
        case .doesNotExist: "org.bluez.Error.DoesNotExist"
        case .notPermitted, .notPaired, .notifyAcquired: "org.bluez.Error.NotPermitted"
        case .notSupported: "org.bluez.Error.NotSupported"
        case .notAuthorized: "org.bluez.Error.NotAuthorized"
        case .invalidArguments: "org.bluez.Error.InvalidArguments"
        case .invalidOffset: "org.bluez.Error.InvalidOffset"
        case .invalidValueLength: "org.bluez.Error.InvalidValueLength"
        case .alreadyConnected: "org.bluez.Error.AlreadyConnected"
        case .alreadyExists: "org.bluez.Error.AlreadyExists"
        case .notReady: "org.bluez.Error.NotReady"
        case .notAvailable: "org.bluez.Error.NotAvailable"
        case .authenticationFailed: "org.bluez.Error.AuthenticationFailed"
        case .authenticationCanceled: "org.bluez.Error.AuthenticationCanceled"
        case .authenticationRejected: "org.bluez.Error.AuthenticationRejected"
        case .authenticationTimeout: "org.bluez.Error.AuthenticationTimeout"
        case .connectionAttemptFailed: "org.bluez.Error.ConnectionAttemptFailed"
        case .noReply: "org.freedesktop.DBus.Error.NoReply"
        case .serviceUnknown: "org.freedesktop.DBus.Error.ServiceUnknown"
        case .unknownObject: "org.freedesktop.DBus.Error.UnknownObject"
        case .unknownMethod: "org.freedesktop.DBus.Error.UnknownMethod"
        case .disconnected: "org.freedesktop.DBus.Error.Disconnected"
        case .other(let name, _): name
        case .adapterNotFound, .deviceNotFound, .characteristicNotFound, .timeout, .bluezUnavailable, .cancelled: nil
        }
    }
}
