import Testing
@testable import ESPHomeAPI

/// The proxy's messages through protobuf-c: every case back from its own bytes, byte-for-byte agreement with the
/// reference implementation (aioesphomeapi's `api_pb2`), and malformed payloads refused rather than trapping.
@Suite struct APIMessageTests {
    static let address: UInt64 = 0xA4C1_3812_3456

    static var deviceInfo: APIMessage.DeviceInfo {
        var info = APIMessage.DeviceInfo()
        info.name = "bridge"
        info.macAddress = "AA:BB:CC:DD:EE:FF"
        info.esphomeVersion = "2025.8.0"
        info.compilationTime = "Dec  7 2026, 10:00:00"
        info.model = "Linux"
        info.projectName = "gattbridge.proxy"
        info.projectVersion = "0.9"
        info.legacyBluetoothProxyVersion = 5
        info.bluetoothProxyFeatureFlags = 127
        info.manufacturer = "gattbridge"
        info.friendlyName = "Living room bridge"
        info.bluetoothMacAddress = "AA:BB:CC:DD:EE:00"
        info.apiEncryptionSupported = true
        return info
    }

    static let services: [APIMessage.GATTService] = [
        APIMessage.GATTService(
            uuid: [0x0000_FE95_0000_1000, 0x8000_0080_5F9B_34FB], handle: 1,
            characteristics: [
                APIMessage.GATTCharacteristic(
                    shortUUID: 0x2A19, handle: 3, properties: 0x12,
                    descriptors: [APIMessage.GATTDescriptor(shortUUID: 0x2902, handle: 4)])
            ])
    ]

    static let adverts: [APIMessage.RawAdvertisement] = [
        .init(address: address, rssi: -67, addressType: 0, data: NoiseTests.bytes("0201061016d2fc4000e2010c")),
        .init(address: 0xD0C0_FFEE_0001, rssi: -90, addressType: 1, data: NoiseTests.bytes("1bff990405")),
    ]

    /// One of every case, with values other than the defaults wherever the case has fields.
    static var everyCase: [APIMessage] {
        var everything = APIMessage.DeviceInfo()
        everything.usesPassword = true
        everything.hasDeepSleep = true
        everything.webserverPort = 80
        everything.suggestedArea = "Kitchen"
        everything.apiEncryptionProvisionable = true
        return [
            .helloRequest(clientInfo: "Home Assistant", apiVersionMajor: 1, apiVersionMinor: 13),
            .helloResponse(apiVersionMajor: 1, apiVersionMinor: 12, serverInfo: "gattbridge", name: "bridge"),
            .authenticationRequest(password: "secret"),
            .authenticationResponse(invalidPassword: true),
            .disconnectRequest(reason: .provisioningClosed),
            .disconnectResponse, .pingRequest, .pingResponse, .deviceInfoRequest,
            .deviceInfoResponse(deviceInfo), .deviceInfoResponse(everything),
            .listEntitiesRequest, .listEntitiesDoneResponse, .subscribeStatesRequest,
            .subscribeLogsRequest(level: .veryVerbose, dumpConfig: true),
            .subscribeHomeassistantServicesRequest, .subscribeHomeAssistantStatesRequest,
            .getTimeRequest, .getTimeResponse(epochSeconds: 1_796_630_400, timezone: "Europe/Paris"),
            .subscribeBluetoothLEAdvertisementsRequest(flags: 1),
            .unsubscribeBluetoothLEAdvertisementsRequest,
            .bluetoothLERawAdvertisementsResponse(adverts),
            .bluetoothDeviceRequest(address: address, requestType: .connectV3WithoutCache, hasAddressType: true,
                                    addressType: 1),
            .bluetoothDeviceConnectionResponse(address: address, connected: true, mtu: 247, error: -5),
            .bluetoothGATTGetServicesRequest(address: address),
            .bluetoothGATTGetServicesResponse(address: address, services: services),
            .bluetoothGATTGetServicesDoneResponse(address: address),
            .bluetoothGATTReadRequest(address: address, handle: 3),
            .bluetoothGATTReadResponse(address: address, handle: 3, data: [0x64]),
            .bluetoothGATTWriteRequest(address: address, handle: 5, response: true, data: [1, 2, 3]),
            .bluetoothGATTWriteResponse(address: address, handle: 5),
            .bluetoothGATTReadDescriptorRequest(address: address, handle: 4),
            .bluetoothGATTWriteDescriptorRequest(address: address, handle: 4, data: [1, 0]),
            .bluetoothGATTNotifyRequest(address: address, handle: 3, enable: true),
            .bluetoothGATTNotifyResponse(address: address, handle: 3),
            .bluetoothGATTNotifyDataResponse(address: address, handle: 3, data: [0x63]),
            .bluetoothGATTErrorResponse(address: address, handle: 3, error: -133),
            .subscribeBluetoothConnectionsFreeRequest,
            .bluetoothConnectionsFreeResponse(free: 2, limit: 3, allocated: [address]),
            .bluetoothDevicePairingResponse(address: address, paired: true, error: 0),
            .bluetoothDeviceUnpairingResponse(address: address, success: false, error: 13),
            .bluetoothDeviceClearCacheResponse(address: address, success: true, error: 0),
            .bluetoothScannerStateResponse(state: .running, mode: .active, configuredMode: .passive),
            .bluetoothScannerSetModeRequest(mode: .active),
            .bluetoothSetConnectionParamsRequest(address: address, minInterval: 6, maxInterval: 12, latency: 0,
                                                 timeout: 500),
            .bluetoothSetConnectionParamsResponse(address: address, error: -1),
        ]
    }

    @Test func everyCaseComesBackFromItsOwnBytes() {
        var types = Set<UInt16>()
        for message in Self.everyCase {
            let (type, payload) = message.encoded()
            types.insert(type)
            #expect(APIMessage.decode(type: type, payload: payload) == message, "type \(type)")
        }
        #expect(types.count == 45, "every kept message id is exercised")
    }

    @Test func emptyAndDefaultValuedMessagesHaveNoBytes() {
        #expect(APIMessage.pingRequest.encoded() == (7, []))
        #expect(APIMessage.subscribeBluetoothLEAdvertisementsRequest(flags: 0).encoded() == (66, []))
        #expect(APIMessage.bluetoothLERawAdvertisementsResponse([]).encoded() == (93, []))
        #expect(APIMessage.decode(type: 10, payload: []) == .deviceInfoResponse(APIMessage.DeviceInfo()))
    }

    // Hex from aioesphomeapi 46.23.0's api_pb2 (protobuf 7.36.2): `SerializeToString().hex()` of the same values.
    static let golden: [(message: APIMessage, type: UInt16, hex: String)] = [
        (.helloResponse(apiVersionMajor: 1, apiVersionMinor: 12, serverInfo: "gattbridge 0.9", name: "bridge"), 2,
         "0801100c1a0e6761747462726964676520302e392206627269646765"),
        (.helloRequest(clientInfo: "Home Assistant 2026.12.0", apiVersionMajor: 1, apiVersionMinor: 13), 1,
         "0a18486f6d6520417373697374616e7420323032362e31322e301001180d"),
        (.deviceInfoResponse(deviceInfo), 10,
         "12066272696467651a1141413a42423a43433a44443a45453a46462208323032352e382e302a1544656320203720323032362c2031"
            + "303a30303a303032054c696e75784210676174746272696467652e70726f78794a03302e395805620a676174746272696467656a"
            + "124c6976696e6720726f6f6d20627269646765787f92011141413a42423a43433a44443a45453a3030980101"),
        (.bluetoothLERawAdvertisementsResponse(adverts), 93,
         "0a1908d6e8c8c0939829108501220c0201061016d2fc4000e2010c0a14088180b8ff8f983410b301180122051bff990405"),
        (.bluetoothGATTGetServicesResponse(address: address, services: services), 71,
         "08d6e8c8c093982912250a1180a08080d0d23ffbe9ecfc85908080800110011a0e1003181222051004188252289954"),
        (.bluetoothDeviceRequest(address: address, requestType: .connectV3WithCache, hasAddressType: true,
                                 addressType: 1), 68,
         "08d6e8c8c0939829100418012001"),
        (.bluetoothConnectionsFreeResponse(free: 2, limit: 3, allocated: [address]), 81, "080210031a07d6e8c8c0939829"),
        (.bluetoothScannerStateResponse(state: .running, mode: .active, configuredMode: .active), 126, "080210011801"),
        (.bluetoothDeviceConnectionResponse(address: address, connected: true, mtu: 247, error: -5), 69,
         "08d6e8c8c0939829100118f70120fbffffffffffffffff01"),
        (.bluetoothGATTErrorResponse(address: address, handle: 3, error: -133), 82,
         "08d6e8c8c0939829100318fbfeffffffffffffff01"),
    ]

    @Test func theReferenceImplementationsBytes() {
        for (message, type, hex) in Self.golden {
            let encoded = message.encoded()
            #expect(encoded.type == type)
            #expect(NoiseTests.hex(encoded.payload) == hex, "type \(type)")
            #expect(APIMessage.decode(type: type, payload: NoiseTests.bytes(hex)) == message, "type \(type)")
        }
    }

    @Test func unknownTypesAreKeptByNumber() {
        #expect(APIMessage.decode(type: 12, payload: [0xFF, 0xFF]) == .unknown(type: 12))
        #expect(APIMessage.decode(type: 67, payload: []) == .unknown(type: 67))
        #expect(APIMessage.unknown(type: 500).encoded() == (500, []))
    }

    @Test func openEnumsKeepValuesThisFileDoesNotName() {
        // BluetoothScannerSetModeRequest with mode = 9: a newer peer's value survives the trip.
        #expect(APIMessage.decode(type: 127, payload: [0x08, 0x09]) == .bluetoothScannerSetModeRequest(mode: .init(rawValue: 9)))
    }

    @Test func malformedPayloadsAreRefused() {
        let raw = NoiseTests.bytes(Self.golden[3].hex)
        // Cut anywhere inside the first advertisement: a length running past the end.
        for cut in [1, 2, 5, 20, raw.count - 1] {
            #expect(APIMessage.decode(type: 93, payload: Array(raw.prefix(cut))) == nil, "cut at \(cut)")
        }
        // HelloRequest's client_info (field 1, a string) sent as a varint: the wrong wire type.
        #expect(APIMessage.decode(type: 1, payload: [0x08, 0x01]) == nil)
        // A length of 2^32 - 1 for a string.
        #expect(APIMessage.decode(type: 1, payload: [0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0x41]) == nil)
        // A varint longer than 10 bytes.
        #expect(APIMessage.decode(type: 8, payload: [UInt8](repeating: 0xFF, count: 12)) == nil)
        // Field number 0.
        #expect(APIMessage.decode(type: 73, payload: [0x00, 0x01]) == nil)
    }

    @Test func invalidUTF8BecomesReplacementCharacters() {
        let decoded = APIMessage.decode(type: 1, payload: [0x0A, 0x03, 0x61, 0xFF, 0x62])
        #expect(decoded == .helloRequest(clientInfo: "a\u{FFFD}b", apiVersionMajor: 0, apiVersionMinor: 0))
    }

    @Test func arbitraryBytesNeverTrap() {
        // A fixed xorshift stream, so that a failure reproduces.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        let types = Set(Self.everyCase.map { $0.encoded().type })
        var decoded = 0
        for type in types {
            for _ in 0..<200 {
                let payload = (0..<Int(next() % 48)).map { _ in UInt8(truncatingIfNeeded: next()) }
                if APIMessage.decode(type: type, payload: payload) != nil { decoded += 1 }
            }
        }
        #expect(decoded > 0)
    }
}
