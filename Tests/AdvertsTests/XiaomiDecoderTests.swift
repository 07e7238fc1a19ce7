import Testing
@testable import Adverts
import Bluetooth

/// Vectors from xiaomi-ble's own tests (tests/test_parser.py), values as that parser reads them.
@Suite struct XiaomiDecoderTests {
    func decode(_ hex: String, address: String, bindkey: String? = nil) throws -> AdvertResult {
        try XiaomiDecoder.decode(serviceData(0xFE95, hex, address: address), bindkey: bindkey.map(bytes))
    }

    @Test func thermometerWithAddressAndBattery() throws {
        // LYWSDCGQ: v5 frame, address included; temperature and humidity, then battery with its estimated voltage.
        let result = try decode("5020aa01a3bf2e3b342d580d1004b40095020a10013b", address: "58:2D:34:3B:2E:BF")
        #expect(values(result) == ["temperature": .number(18.0), "humidity": .number(66.1), "battery": .integer(59),
                                   "voltage": .number(1.272)])
        #expect(units(result) == ["temperature": "°C", "humidity": "%", "battery": "%", "voltage": "V"])
        #expect(result.packetID == 0xA3 && !result.encrypted)
    }

    @Test func plantSensor() throws {
        #expect(values(try decode("71209800697a3e6a8d7cc40d041002f400", address: "C4:7C:8D:6A:3E:7A"))
            == ["temperature": .number(24.4)])
        #expect(values(try decode("71209800687a3e6a8d7cc40d0910025702", address: "C4:7C:8D:6A:3E:7A"))
            == ["conductivity": .integer(599)])
        #expect(values(try decode("71209800667a3e6a8d7cc40d071003000000", address: "C4:7C:8D:6A:3E:7A"))
            == ["illuminance": .integer(0)])
    }

    @Test func doorAndFormaldehyde() throws {
        #expect(values(try decode("5040d60301d6030a38c1a419100100", address: "A4:C1:38:0A:03:D6"))
            == ["opening": .state(true)])
        #expect(values(try decode("5040df0201df02008d7cc41010027d00", address: "C4:7C:8D:00:02:DF"))
            == ["formaldehyde": .number(1.25)])
    }

    @Test func encryptedV5() throws {
        let result = try decode("58586f0607892012342d585f176dd54f0200002fa453fa", address: "58:2D:34:12:20:89",
                                bindkey: "a3bfe9853dd85a620debe3620caaa351")
        #expect(values(result) == ["temperature": .number(22.6)])
        #expect(result.encrypted && result.encryptionCounter == 0x0000_0207)
    }

    @Test func encryptedV4MotionWithIlluminance() throws {
        let result = try decode("4859eb2ac2fce02ca0b43af2380000a2d9f05f", address: "A4:C1:38:05:8E:E9",
                                bindkey: "7475a4a77584401780ffc3ee62dd353c")
        #expect(values(result) == ["motion": .state(true), "illuminance": .number(228.0)])
    }

    /// Refused before issue 40 ("no MiBeacon object could be read"); xiaomi-ble's test captures and its readings.
    @Test func motionOccupancyAndDoorSensors() throws {
        // MUE4094RT (nightlight): motion, never cleared, so an event.
        #expect(try decode("4030dd032403000101", address: "DE:70:E8:B2:39:0C").events
            == [AdvertEvent(name: "motion", type: "motion_detected")])
        // MS1BB(MI): door left open (0x4a1a), the opening event closed (0x4a12), its button (0x4a13).
        #expect(values(try decode("505989180167e56638c1a41a4a0101", address: "A4:C1:38:66:E5:67"))
            == ["opening": .state(true), "door_left_open": .state(true)])
        let ms1bb = "0fdcc30fe9289254876b5ef7c11ef1f0"
        #expect(values(try decode("585989187567e56638c1a469ddf3a1260000a24a1b45", address: "A4:C1:38:66:E5:67",
                                  bindkey: ms1bb))
            == ["opening": .state(false), "door_left_open": .state(false), "device_forcibly_removed": .state(false)])
        #expect(try decode("585989189167e56638c1a4d6120d6d2600006fbc0cb4", address: "A4:C1:38:66:E5:67",
                           bindkey: ms1bb).events == [AdvertEvent(name: "button", type: "press")])
        // XMOSB01XS and ES3: occupancy.
        #expect(values(try decode("585983461fbdb1c46748d49d1efd8c040000e57e873a", address: "D4:48:67:C4:B1:BD",
                                  bindkey: "920ce119b34410d38251ccea54c0f915")) == ["occupancy": .state(false)])
        #expect(values(try decode("5859fb50da76c3c738c1a4aabc4c16000000c60c1646", address: "A4:C1:38:C7:C3:76",
                                  bindkey: "b26295a7a08fbac306c8706ade7f0fe4")) == ["occupancy": .state(true)])
        // ES5BB: occupancy, at close range, and how long it has been detected.
        let es5bb = "068a081b4e5aa7295ebf263585adf4f1"
        #expect(values(try decode("58590f6a11ee917427b5e83567ac0e1c0000f681b610", address: "E8:B5:27:74:91:EE",
                                  bindkey: es5bb)) == ["occupancy": .state(true)])
        #expect(values(try decode("58590f6a14ee917427b5e8f139cdae1c00001bd88863", address: "E8:B5:27:74:91:EE",
                                  bindkey: es5bb)) == ["occupancy_close_range": .state(true)])
        let detected = try decode("58590f6abdee917427b5e885884d061c0000c263fbd0", address: "E8:B5:27:74:91:EE",
                                  bindkey: es5bb)
        #expect(values(detected) == ["duration_detected": .integer(1)] && units(detected) == ["duration_detected": "min"])
    }

    @Test func encryptionFailures() {
        let packet = "58586f0607892012342d585f176dd54f0200002fa453fa"
        #expect(throws: AdvertError.bindkeyNeeded) { try decode(packet, address: "58:2D:34:12:20:89") }
        #expect(throws: AdvertError.decryptionFailed) {
            try decode(packet, address: "58:2D:34:12:20:89", bindkey: "a3bfe9853dd85a620debe3620caaa352")
        }
        // The frame carries its sender's address: a broadcast from another address is not this frame.
        #expect(throws: AdvertError.self) {
            try decode(packet, address: "58:2D:34:12:20:8A", bindkey: "a3bfe9853dd85a620debe3620caaa351")
        }
    }

    @Test func plaintextFramesAreReadWithABindkeyToo() throws {
        let result = try decode("5020aa01a3bf2e3b342d580d1004b40095020a10013b", address: "58:2D:34:3B:2E:BF",
                                bindkey: "a3bfe9853dd85a620debe3620caaa351")
        #expect(result["temperature"] == .number(18.0) && !result.encrypted)
    }

    @Test func encryptRoundTrips() throws {
        let address = BluetoothAddress("A4:C1:38:11:22:33")!
        let key = bytes("00112233445566778899aabbccddeeff")
        // LYWSD03MMC (0x055b): temperature 21.5 °C then humidity 40.0 % (whole percent for this model).
        let sealed = try #require(XiaomiDecoder.encrypt(objects: bytes("041002d7000610029001"), address: address,
                                                        product: 0x055B, frameCounter: 9, bindkey: key))
        let result = try XiaomiDecoder.decode(Broadcast(address: address, serviceData: [
            .init(uuid: BluetoothUUID(UInt16(0xFE95)), bytes: sealed),
        ]), bindkey: key)
        #expect(values(result) == ["temperature": .number(21.5), "humidity": .integer(40)])
    }

    @Test func unknownProductAndOldVersionsAreRefused() {
        #expect(throws: AdvertError.self) { try decode("5020ffff01bf2e3b342d580d1004b4009502", address: "58:2D:34:3B:2E:BF") }
        #expect(throws: AdvertError.self) { try decode("1020aa01a3bf2e3b342d580d1004b4009502", address: "58:2D:34:3B:2E:BF") }
        #expect(throws: AdvertError.self) { try decode("5020aa01", address: "58:2D:34:3B:2E:BF") }
    }

    @Test func wrongLengthObjectIsSkipped() throws {
        // A 3-byte temperature (0x1004 wants 2), then a battery.
        let result = try decode("4040aa01a3041003b400950a100137", address: "58:2D:34:3B:2E:BF")
        #expect(values(result) == ["battery": .integer(55), "voltage": .number(0.8 + (1.6 - 0.8) * 0.55)])
    }

    @Test func noPrefixCrashes() {
        _ = decodePrefixes(serviceData(0xFE95, "5020aa01a3bf2e3b342d580d1004b40095020a10013b", address: "58:2D:34:3B:2E:BF"))
        _ = decodePrefixes(serviceData(0xFE95, "58586f0607892012342d585f176dd54f0200002fa453fa",
                                       address: "58:2D:34:12:20:89"), bindkey: bytes("a3bfe9853dd85a620debe3620caaa351"))
    }
}
