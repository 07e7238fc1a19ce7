import BlueZ

/// Where a BlueZ error happened decides what a bare timeout means to the session.
enum FailureStage {
    case connect, resolve, subscribe, operation
}

extension FailureKind {
    /// Maps a BlueZ error onto the session core's failure kinds, so the reconnection policy (data) decides what next.
    init(_ error: BlueZError, stage: FailureStage) {
        switch error {
        case .failed(let reason) where reason.contains("le-connection-abort-by-local"):
            self = .connectAbortedLocally
        case .failed(let reason):
            self = stage == .subscribe ? .subscribeFailed(reason) : .connectFailed(reason)
        case .connectionAttemptFailed:
            self = .connectFailed("connection attempt failed")
        case .inProgress:
            self = .inProgress
        case .notReady:
            self = .notReady
        case .doesNotExist, .unknownObject, .deviceNotFound:
            self = .deviceGone
        case .notConnected:
            self = .notConnected
        case .timeout(let what):
            switch stage {
            case .connect: self = .connectTimeout
            case .resolve: self = .resolveTimeout
            case .subscribe: self = .subscribeFailed("timed out: \(what)")
            case .operation: self = .noReply
            }
        case .noReply:
            self = stage == .connect ? .connectTimeout : .noReply
        case .serviceUnknown:
            self = .serviceUnknown
        case .bluezUnavailable, .disconnected:
            self = .bluezGone
        case .adapterNotFound:
            self = .adapterMissing
        case .characteristicNotFound(let name):
            self = .characteristicMissing(name)
        case .authenticationFailed, .authenticationRejected, .authenticationCanceled, .authenticationTimeout:
            self = .authentication(error.description)
        default:
            self = stage == .subscribe ? .subscribeFailed(error.description) : .other(error.description)
        }
    }
}
