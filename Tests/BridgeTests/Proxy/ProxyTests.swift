import Config
import Glibc
import ESPHomeAPI
import Testing
@testable import BridgeProxy

/// The proxy's pure parts (Sources/Bridge/Proxy): its identity, its batches, its mDNS record and its refusals.
@Suite struct ProxyTests {
    @Test func theFirstAdapterIsTheConfiguredOneElseTheLowestNumbered() {
        let adapters: [(name: String, address: String?)] = [("hci10", "AA:00:00:00:00:10"), ("hci2", "AA:00:00:00:00:02"),
                                                            ("hci1", nil), ("hci0", nil)]
        #expect(ProxyIdentity.firstAdapterAddress(configured: [], adapters: adapters) == "AA:00:00:00:00:02")
        #expect(ProxyIdentity.firstAdapterAddress(configured: ["hci10", "hci2"], adapters: adapters)
                == "AA:00:00:00:00:10")
        // The configured first adapter has no address yet: the proxy waits rather than taking another's.
        #expect(ProxyIdentity.firstAdapterAddress(configured: ["hci0"], adapters: adapters) == nil)
        #expect(ProxyIdentity.firstAdapterAddress(configured: [], adapters: []) == nil)
    }

    @Test func deviceInfoSaysWhatHomeAssistantKeysOn() {
        var settings = ESPHomeProxySettings()
        settings.name = "living-room-pi"
        let identity = ProxyIdentity.session(settings: settings, friendlyName: "Living Room Pi", version: "1.2.3",
                                             macAddress: "00:11:22:33:44:55", webPort: 8780, encrypted: true)
        let info = identity.deviceInfo
        #expect(info.name == "living-room-pi" && info.friendlyName == "Living Room Pi")
        #expect(info.macAddress == "00:11:22:33:44:55" && info.bluetoothMacAddress == "00:11:22:33:44:55")
        #expect(info.projectName == "gattbridge.bridge" && info.projectVersion == "1.2.3")
        #expect(info.bluetoothProxyFeatureFlags == 1 | 2 | 4 | 8 | 16 | 32 | 64)
        #expect(info.webserverPort == 8780 && info.apiEncryptionSupported)
        #expect(identity.apiMinor < 15)
    }

    @Test func aBatchHoldsSixteenAndGoesOutWhenFullOrFlushed() {
        var batch = AdvertisementBatch()
        let advert = APIMessage.RawAdvertisement(address: 1, rssi: -60, addressType: 0, data: [2, 1, 6])
        for _ in 0..<15 { #expect(batch.add(advert) == nil) }
        #expect(batch.add(advert)?.count == 16)
        #expect(batch.isEmpty)
        _ = batch.add(advert)
        #expect(batch.take().count == 1)
        #expect(batch.take().isEmpty)
    }

    @Test func everyPeripheralRequestGetsTheAnswerItsClientWaitsFor() {
        let address: UInt64 = 0xA4C1_380B_7101
        let connect = PeripheralRefusal.answers(to: .bluetoothDeviceRequest(
            address: address, requestType: .connectV3WithoutCache, hasAddressType: true, addressType: 0))
        #expect(connect == [.bluetoothDeviceConnectionResponse(address: address, connected: false, mtu: 0,
                                                               error: PeripheralRefusal.notSupported)])
        let pair = PeripheralRefusal.answers(to: .bluetoothDeviceRequest(
            address: address, requestType: .pair, hasAddressType: false, addressType: 0))
        #expect(pair == [.bluetoothDevicePairingResponse(address: address, paired: false,
                                                          error: PeripheralRefusal.notSupported)])
        #expect(PeripheralRefusal.answers(to: .bluetoothGATTWriteDescriptorRequest(address: address, handle: 9,
                                                                                   data: [1, 0]))
                == [.bluetoothGATTErrorResponse(address: address, handle: 9, error: PeripheralRefusal.notSupported)])
        #expect(PeripheralRefusal.answers(to: .pingRequest).isEmpty)
    }

    @Test func theNetworkIsWifiOnlyWhenTheDefaultRouteIsWireless() throws {
        let directory = "/tmp/gattbridge-proxy-\(UInt64.random(in: 0...UInt64.max))"
        try Self.write("\(directory)/route", """
            Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
            wlan0\t0000A8C0\t00000000\t0001\t0\t0\t600\t00FFFFFF\t0\t0\t0
            wlan0\t00000000\t0100A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0

            """)
        try Self.write("\(directory)/net/wlan0/wireless/.keep", "")
        #expect(ProxyAnnouncement.networkKind(routes: "\(directory)/route", sysfs: "\(directory)/net") == "wifi")
        try Self.write("\(directory)/net/eth0/.keep", "")
        try Self.write("\(directory)/route2", "Iface\tDestination\neth0\t00000000\n")
        #expect(ProxyAnnouncement.networkKind(routes: "\(directory)/route2", sysfs: "\(directory)/net") == "ethernet")
        #expect(ProxyAnnouncement.networkKind(routes: "\(directory)/missing", sysfs: "\(directory)/net") == "ethernet")
    }

    static func write(_ path: String, _ text: String) throws {
        var components = path.split(separator: "/").dropLast()
        var prefix = ""
        while let next = components.first {
            components = components.dropFirst()
            prefix += "/" + next
            mkdir(prefix, 0o755)
        }
        guard let file = fopen(path, "w") else { throw WriteFailed() }
        fputs(text, file)
        fclose(file)
    }

    struct WriteFailed: Error {}
}

/// What the proxy replays to a client that subscribes, and refreshes (Sources/Bridge/Proxy/AdvertisementCache.swift).
@Suite struct AdvertisementCacheTests {
    static func advert(_ address: UInt64, rssi: Int32 = -60) -> APIMessage.RawAdvertisement {
        APIMessage.RawAdvertisement(address: address, rssi: rssi, addressType: 0, data: [2, 1, 6])
    }

    @Test func theLastOfEachDeviceInBatchesOfSixteenOldestFirst() {
        var cache = AdvertisementCache(limit: 100)
        for address in 1...20 { cache.heard(Self.advert(UInt64(address))) }
        cache.heard(Self.advert(1, rssi: -40))
        let batches = cache.batches
        #expect(batches.map(\.count) == [16, 4])
        #expect(batches.flatMap { $0 }.map(\.address) == Array(2...20).map(UInt64.init) + [1])
        #expect(batches.last?.last?.rssi == -40)
    }

    @Test func aDeviceBlueZDroppedIsForgottenAndTheBoundEvictsTheOldest() {
        var cache = AdvertisementCache(limit: 3)
        for address in 1...3 { cache.heard(Self.advert(UInt64(address))) }
        cache.heard(Self.advert(1))
        cache.heard(Self.advert(4))
        #expect(cache.count == 3)
        #expect(cache.batches.flatMap { $0 }.map(\.address) == [3, 1, 4])
        cache.forget(3)
        cache.forget(99)
        #expect(cache.batches.flatMap { $0 }.map(\.address) == [1, 4])
    }
}
