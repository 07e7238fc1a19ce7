import Testing
@testable import ESPHomeAPI

/// The session's answers as ESPHome's API gives them, and its invariants (Sources/ESPHomeAPI/APISession.swift).
@Suite struct APISessionTests {
    static let identity: APISession.Identity = {
        var info = APIMessage.DeviceInfo()
        info.name = "bench-proxy"
        info.macAddress = "00:00:00:00:00:01"
        info.bluetoothProxyFeatureFlags = 1 | 32 | 64
        return APISession.Identity(name: "bench-proxy", serverInfo: "gattbridge 1.0", deviceInfo: info)
    }()

    static func greeted() -> APISession {
        var session = APISession(identity: identity)
        _ = session.receive(.helloRequest(clientInfo: "aioesphomeapi", apiVersionMajor: 1, apiVersionMinor: 15),
                            status: APISession.Status())
        return session
    }

    @Test func helloIsAnsweredWithTheVersionThatKeepsTheFlagsInDeviceInfo() {
        var session = APISession(identity: Self.identity)
        let actions = session.receive(.helloRequest(clientInfo: "HA", apiVersionMajor: 1, apiVersionMinor: 15),
                                      status: APISession.Status())
        #expect(actions == [.send(.helloResponse(apiVersionMajor: 1, apiVersionMinor: 12, serverInfo: "gattbridge 1.0",
                                                 name: "bench-proxy"))])
        #expect(session.greeted)
    }

    @Test func beforeItsHelloAClientGetsOnlyPingAndDisconnect() {
        var session = APISession(identity: Self.identity)
        #expect(session.receive(.pingRequest, status: APISession.Status()) == [.send(.pingResponse)])
        #expect(session.receive(.deviceInfoRequest, status: APISession.Status()) == [.close])
        var other = APISession(identity: Self.identity)
        #expect(other.receive(.disconnectRequest(reason: .unspecified), status: APISession.Status())
                == [.send(.disconnectResponse), .close])
    }

    @Test func deviceInfoEntitiesAndTheSubscriptionsAProxyHasNothingFor() {
        var session = Self.greeted()
        let status = APISession.Status()
        #expect(session.receive(.deviceInfoRequest, status: status) == [.send(.deviceInfoResponse(Self.identity.deviceInfo))])
        #expect(session.receive(.listEntitiesRequest, status: status) == [.send(.listEntitiesDoneResponse)])
        for quiet in [APIMessage.subscribeStatesRequest, .subscribeLogsRequest(level: .debug, dumpConfig: true),
                      .subscribeHomeassistantServicesRequest, .subscribeHomeAssistantStatesRequest, .getTimeRequest,
                      .unknown(type: 149), .unknown(type: 9999), .pingResponse] {
            #expect(session.receive(quiet, status: status) == [], "\(quiet)")
        }
        #expect(session.receive(.pingRequest, status: status) == [.send(.pingResponse)])
    }

    @Test func advertisementsReachOnlyASubscriberOfRawOnesWithTheScannerState() {
        var session = Self.greeted()
        var status = APISession.Status()
        status.scannerState = .running
        #expect(session.receive(.subscribeBluetoothLEAdvertisementsRequest(flags: 0), status: status) == [])
        #expect(!session.wantsAdvertisements)
        #expect(session.receive(.subscribeBluetoothLEAdvertisementsRequest(flags: 1), status: status)
                == [.send(.bluetoothScannerStateResponse(state: .running, mode: .active, configuredMode: .active))])
        #expect(session.wantsAdvertisements)
        var idle = status
        idle.scannerState = .idle
        #expect(session.changed(from: status, to: idle)
                == [.send(.bluetoothScannerStateResponse(state: .idle, mode: .active, configuredMode: .active))])
        #expect(session.changed(from: idle, to: idle) == [])
        #expect(session.receive(.unsubscribeBluetoothLEAdvertisementsRequest, status: status) == [])
        #expect(!session.wantsAdvertisements)
        #expect(session.changed(from: status, to: idle) == [])
    }

    @Test func freeConnectionsOnSubscribingAndOnEveryChange() {
        var session = Self.greeted()
        var status = APISession.Status()
        status.connectionsFree = 3
        status.connectionsLimit = 3
        #expect(session.receive(.subscribeBluetoothConnectionsFreeRequest, status: status)
                == [.send(.bluetoothConnectionsFreeResponse(free: 3, limit: 3, allocated: []))])
        var busy = status
        busy.connectionsFree = 2
        busy.allocated = [0xA4C1_380B_7101]
        #expect(session.changed(from: status, to: busy)
                == [.send(.bluetoothConnectionsFreeResponse(free: 2, limit: 3, allocated: [0xA4C1_380B_7101]))])
    }

    @Test func peripheralRequestsAndTheScannerModeGoToTheOwner() {
        var session = Self.greeted()
        let status = APISession.Status()
        let connect = APIMessage.bluetoothDeviceRequest(address: 1, requestType: .connectV3WithCache,
                                                        hasAddressType: true, addressType: 0)
        #expect(session.receive(connect, status: status) == [.peripheral(connect)])
        let read = APIMessage.bluetoothGATTReadRequest(address: 1, handle: 12)
        #expect(session.receive(read, status: status) == [.peripheral(read)])
        #expect(session.receive(.bluetoothScannerSetModeRequest(mode: .passive), status: status)
                == [.setScannerMode(.passive)])
    }
}
