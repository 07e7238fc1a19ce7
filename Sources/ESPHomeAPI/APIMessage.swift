/// One message of ESPHome's native API, as the proxy reads or writes it: plain Swift values, no C. Only the messages a
/// Bluetooth proxy speaks are cases (the subset Sources/CESPHomeProto/esphome_api.proto keeps); any other type number
/// is `unknown`, which the connection answers or ignores by number. Fields left out of a case (DeviceInfoResponse's
/// devices, areas, Z-Wave and serial proxies, GetTimeResponse's parsed time zone) are those a proxy neither sends nor
/// reads. Bytes in and out: `decode(type:payload:)` and `encoded()` (docs/dev/esphome-proxy.md#the-messages-wire-code).
public enum APIMessage: Sendable, Equatable {
    case helloRequest(clientInfo: String, apiVersionMajor: UInt32, apiVersionMinor: UInt32)
    case helloResponse(apiVersionMajor: UInt32, apiVersionMinor: UInt32, serverInfo: String, name: String)
    /// The old ConnectRequest; ESPHome no longer processes it (2026.1), clients still may send it.
    case authenticationRequest(password: String)
    case authenticationResponse(invalidPassword: Bool)
    case disconnectRequest(reason: DisconnectReason)
    case disconnectResponse
    case pingRequest
    case pingResponse
    case deviceInfoRequest
    case deviceInfoResponse(DeviceInfo)
    case listEntitiesRequest
    case listEntitiesDoneResponse
    case subscribeStatesRequest
    case subscribeLogsRequest(level: LogLevel, dumpConfig: Bool)
    case subscribeHomeassistantServicesRequest
    case subscribeHomeAssistantStatesRequest
    case getTimeRequest
    case getTimeResponse(epochSeconds: UInt32, timezone: String)
    case subscribeBluetoothLEAdvertisementsRequest(flags: UInt32)
    case unsubscribeBluetoothLEAdvertisementsRequest
    case bluetoothLERawAdvertisementsResponse([RawAdvertisement])
    case bluetoothDeviceRequest(
        address: UInt64, requestType: BluetoothDeviceRequestType, hasAddressType: Bool, addressType: UInt32)
    case bluetoothDeviceConnectionResponse(address: UInt64, connected: Bool, mtu: UInt32, error: Int32)
    case bluetoothGATTGetServicesRequest(address: UInt64)
    case bluetoothGATTGetServicesResponse(address: UInt64, services: [GATTService])
    case bluetoothGATTGetServicesDoneResponse(address: UInt64)
    case bluetoothGATTReadRequest(address: UInt64, handle: UInt32)
    case bluetoothGATTReadResponse(address: UInt64, handle: UInt32, data: [UInt8])
    case bluetoothGATTWriteRequest(address: UInt64, handle: UInt32, response: Bool, data: [UInt8])
    case bluetoothGATTWriteResponse(address: UInt64, handle: UInt32)
    case bluetoothGATTReadDescriptorRequest(address: UInt64, handle: UInt32)
    case bluetoothGATTWriteDescriptorRequest(address: UInt64, handle: UInt32, data: [UInt8])
    case bluetoothGATTNotifyRequest(address: UInt64, handle: UInt32, enable: Bool)
    case bluetoothGATTNotifyResponse(address: UInt64, handle: UInt32)
    case bluetoothGATTNotifyDataResponse(address: UInt64, handle: UInt32, data: [UInt8])
    case bluetoothGATTErrorResponse(address: UInt64, handle: UInt32, error: Int32)
    case subscribeBluetoothConnectionsFreeRequest
    case bluetoothConnectionsFreeResponse(free: UInt32, limit: UInt32, allocated: [UInt64])
    case bluetoothDevicePairingResponse(address: UInt64, paired: Bool, error: Int32)
    case bluetoothDeviceUnpairingResponse(address: UInt64, success: Bool, error: Int32)
    case bluetoothDeviceClearCacheResponse(address: UInt64, success: Bool, error: Int32)
    case bluetoothScannerStateResponse(
        state: BluetoothScannerState, mode: BluetoothScannerMode, configuredMode: BluetoothScannerMode)
    case bluetoothScannerSetModeRequest(mode: BluetoothScannerMode)
    case bluetoothSetConnectionParamsRequest(
        address: UInt64, minInterval: UInt32, maxInterval: UInt32, latency: UInt32, timeout: UInt32)
    case bluetoothSetConnectionParamsResponse(address: UInt64, error: Int32)
    /// A type number the proxy does not speak; its payload is not kept.
    case unknown(type: UInt16)
}

extension APIMessage {
    /// What the proxy says about itself in DeviceInfoResponse: the fields a Bluetooth proxy sets.
    public struct DeviceInfo: Sendable, Equatable {
        public var usesPassword = false
        public var name = ""
        public var macAddress = ""
        public var esphomeVersion = ""
        public var compilationTime = ""
        public var model = ""
        public var hasDeepSleep = false
        public var projectName = ""
        public var projectVersion = ""
        public var webserverPort: UInt32 = 0
        /// Deprecated since API 1.9 but still read by older clients, so kept settable.
        public var legacyBluetoothProxyVersion: UInt32 = 0
        public var bluetoothProxyFeatureFlags: UInt32 = 0
        public var manufacturer = ""
        public var friendlyName = ""
        public var suggestedArea = ""
        public var bluetoothMacAddress = ""
        public var apiEncryptionSupported = false
        public var apiEncryptionProvisionable = false

        public init() {}
    }

    /// One advertisement or scan response as the radio heard it, its bytes unparsed (the client parses them).
    public struct RawAdvertisement: Sendable, Equatable {
        public var address: UInt64
        public var rssi: Int32
        public var addressType: UInt32
        public var data: [UInt8]

        public init(address: UInt64, rssi: Int32, addressType: UInt32, data: [UInt8]) {
            self.address = address
            self.rssi = rssi
            self.addressType = addressType
            self.data = data
        }
    }

    /// A UUID as ESPHome sends it: a 16- or 32-bit one in `shortUUID` (clients of API 1.12 and later), otherwise the
    /// 128 bits as two UInt64 in `uuid` (high half first).
    public struct GATTDescriptor: Sendable, Equatable {
        public var uuid: [UInt64]
        public var shortUUID: UInt32
        public var handle: UInt32

        public init(uuid: [UInt64] = [], shortUUID: UInt32 = 0, handle: UInt32) {
            self.uuid = uuid
            self.shortUUID = shortUUID
            self.handle = handle
        }
    }

    public struct GATTCharacteristic: Sendable, Equatable {
        public var uuid: [UInt64]
        public var shortUUID: UInt32
        public var handle: UInt32
        public var properties: UInt32
        public var descriptors: [GATTDescriptor]

        public init(
            uuid: [UInt64] = [], shortUUID: UInt32 = 0, handle: UInt32, properties: UInt32,
            descriptors: [GATTDescriptor] = []
        ) {
            self.uuid = uuid
            self.shortUUID = shortUUID
            self.handle = handle
            self.properties = properties
            self.descriptors = descriptors
        }
    }

    public struct GATTService: Sendable, Equatable {
        public var uuid: [UInt64]
        public var shortUUID: UInt32
        public var handle: UInt32
        public var characteristics: [GATTCharacteristic]

        public init(uuid: [UInt64] = [], shortUUID: UInt32 = 0, handle: UInt32, characteristics: [GATTCharacteristic] = []) {
            self.uuid = uuid
            self.shortUUID = shortUUID
            self.handle = handle
            self.characteristics = characteristics
        }
    }
}
