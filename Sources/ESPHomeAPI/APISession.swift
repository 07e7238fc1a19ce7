/// One client's conversation with the proxy as values: its messages in, what to answer and what to do out, no I/O.
/// The connection under it is `APIConnection`'s; what the proxy is and does (its identity, the scanner, its links) is
/// the owner's, handed in as `APISession.Status` and asked for as `Action`s.
///
/// Invariants:
/// - Before its Hello a client is answered only Ping and Disconnect; any other request closes it, as ESPHome does.
/// - A type the proxy does not serve is ignored (never a reason to close): Home Assistant subscribes to states, logs
///   and services of every ESPHome node, and newer clients send types this file does not know.
/// - Advertisements, the scanner's state and free connections reach a client only once it subscribed to them.
public struct APISession {
    /// What the proxy says of itself, the same to every client.
    public struct Identity: Sendable, Equatable {
        public var name: String
        public var serverInfo: String
        public var deviceInfo: APIMessage.DeviceInfo
        /// The API version answered to Hello: below 1.15 a client reads the proxy's feature flags from DeviceInfo,
        /// which is where they are set.
        public var apiMajor: UInt32 = 1
        public var apiMinor: UInt32 = 12

        public init(name: String, serverInfo: String, deviceInfo: APIMessage.DeviceInfo) {
            self.name = name
            self.serverInfo = serverInfo
            self.deviceInfo = deviceInfo
        }
    }

    /// The proxy's state a client may subscribe to.
    public struct Status: Sendable, Equatable {
        public var scannerState = APIMessage.BluetoothScannerState.running
        public var scannerMode = APIMessage.BluetoothScannerMode.active
        public var configuredMode = APIMessage.BluetoothScannerMode.active
        public var connectionsFree: UInt32 = 0
        public var connectionsLimit: UInt32 = 0
        public var allocated: [UInt64] = []

        public init() {}
    }

    public enum Action: Sendable, Equatable {
        case send(APIMessage)
        /// Close the connection once what was sent before is flushed.
        case close
        /// The client asked for a scanner mode (Home Assistant's passive/active setting).
        case setScannerMode(APIMessage.BluetoothScannerMode)
        /// A request about one peripheral (connect, disconnect, pair, unpair, clear cache, GATT): the owner answers
        /// it, now or when the work is done.
        case peripheral(APIMessage)
    }

    /// ESPHome's subscription flag for raw advertisements (the only kind the proxy sends).
    public static let rawAdvertisementsFlag: UInt32 = 1

    public let identity: Identity
    public private(set) var greeted = false
    public private(set) var wantsAdvertisements = false
    public private(set) var wantsConnectionsFree = false

    public init(identity: Identity) {
        self.identity = identity
    }

    public mutating func receive(_ message: APIMessage, status: Status) -> [Action] {
        switch message {
        case .helloRequest:
            greeted = true
            return [.send(.helloResponse(apiVersionMajor: identity.apiMajor, apiVersionMinor: identity.apiMinor,
                                         serverInfo: identity.serverInfo, name: identity.name))]
        case .pingRequest:
            return [.send(.pingResponse)]
        case .disconnectRequest:
            return [.send(.disconnectResponse), .close]
        case .disconnectResponse:
            return [.close]
        case .unknown, .pingResponse, .helloResponse, .authenticationResponse, .deviceInfoResponse,
             .listEntitiesDoneResponse, .getTimeResponse, .bluetoothLERawAdvertisementsResponse,
             .bluetoothDeviceConnectionResponse, .bluetoothGATTGetServicesResponse,
             .bluetoothGATTGetServicesDoneResponse, .bluetoothGATTReadResponse, .bluetoothGATTWriteResponse,
             .bluetoothGATTNotifyResponse, .bluetoothGATTNotifyDataResponse, .bluetoothGATTErrorResponse,
             .bluetoothConnectionsFreeResponse, .bluetoothDevicePairingResponse, .bluetoothDeviceUnpairingResponse,
             .bluetoothDeviceClearCacheResponse, .bluetoothScannerStateResponse, .bluetoothSetConnectionParamsResponse:
            // Answers flow the other way; a client that sends one is confused, not hostile.
            return []
        default:
            break
        }
        guard greeted else { return [.close] }
        switch message {
        case .authenticationRequest:
            // Passwords are gone from ESPHome (2026.1); older clients still send one without waiting for an answer.
            return [.send(.authenticationResponse(invalidPassword: false))]
        case .deviceInfoRequest:
            return [.send(.deviceInfoResponse(identity.deviceInfo))]
        case .listEntitiesRequest:
            return [.send(.listEntitiesDoneResponse)]
        case .subscribeBluetoothLEAdvertisementsRequest(let flags):
            wantsAdvertisements = flags & Self.rawAdvertisementsFlag != 0
            return wantsAdvertisements ? [.send(scannerState(status))] : []
        case .unsubscribeBluetoothLEAdvertisementsRequest:
            wantsAdvertisements = false
            return []
        case .subscribeBluetoothConnectionsFreeRequest:
            wantsConnectionsFree = true
            return [.send(connectionsFree(status))]
        case .bluetoothScannerSetModeRequest(let mode):
            return [.setScannerMode(mode)]
        case .bluetoothDeviceRequest, .bluetoothGATTGetServicesRequest, .bluetoothGATTReadRequest,
             .bluetoothGATTWriteRequest, .bluetoothGATTReadDescriptorRequest, .bluetoothGATTWriteDescriptorRequest,
             .bluetoothGATTNotifyRequest, .bluetoothSetConnectionParamsRequest:
            return [.peripheral(message)]
        default:
            // States, logs, Home Assistant services and states, time: a proxy has none to give.
            return []
        }
    }

    /// What a change of the proxy's state sends this client.
    public func changed(from old: Status, to new: Status) -> [Action] {
        var actions: [Action] = []
        if wantsAdvertisements, old.scannerState != new.scannerState || old.scannerMode != new.scannerMode
            || old.configuredMode != new.configuredMode {
            actions.append(.send(scannerState(new)))
        }
        if wantsConnectionsFree, old.connectionsFree != new.connectionsFree
            || old.connectionsLimit != new.connectionsLimit || old.allocated != new.allocated {
            actions.append(.send(connectionsFree(new)))
        }
        return actions
    }

    private func scannerState(_ status: Status) -> APIMessage {
        .bluetoothScannerStateResponse(state: status.scannerState, mode: status.scannerMode,
                                       configuredMode: status.configuredMode)
    }

    private func connectionsFree(_ status: Status) -> APIMessage {
        .bluetoothConnectionsFreeResponse(free: status.connectionsFree, limit: status.connectionsLimit,
                                          allocated: status.allocated)
    }
}
