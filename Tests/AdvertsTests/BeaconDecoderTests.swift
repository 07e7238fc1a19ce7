import Testing
@testable import Adverts

@Suite struct BeaconDecoderTests {
    @Test func iBeacon() throws {
        let result = try AdvertDecoder.decode(manufacturerData(0x004C, "0215e2c56db5dffb48d2b060d0f5a71096e000010002c5"))
        #expect(result.format == .ibeacon)
        #expect(values(result) == ["uuid": .identity("e2c56db5-dffb-48d2-b060-d0f5a71096e0"), "major": .identity("1"),
                                   "minor": .identity("2"), "tx_power": .integer(-59)])
    }

    @Test func otherAppleDataIsNoBeacon() {
        #expect(throws: AdvertError.notRecognised) { try BeaconDecoder.decodeIBeacon(manufacturerData(0x004C, "1005031c")) }
        #expect(throws: AdvertError.self) { try BeaconDecoder.decodeIBeacon(manufacturerData(0x004C, "0215e2c5")) }
    }

    @Test func eddystoneFrames() throws {
        #expect(values(try BeaconDecoder.decodeEddystone(serviceData(0xFEAA, "10eb00676f6f676c6507")))
            == ["url": .identity("http://www.google.com"), "tx_power": .integer(-21)])
        #expect(values(try BeaconDecoder.decodeEddystone(serviceData(0xFEAA, "00e8000102030405060708090a0b0c0d0e0f")))
            == ["namespace": .identity("00010203040506070809"),
                "instance": .identity("0a0b0c0d0e0f"), "tx_power": .integer(-24)])
        #expect(values(try BeaconDecoder.decodeEddystone(serviceData(0xFEAA, "20000bb817800000000100000002")))
            == ["voltage": .integer(3000), "temperature": .number(23.5)])
    }

    /// Voltage 0 and temperature 0x8000 are the frame's "not supported": no reading, but still the beacon heard.
    @Test func eddystoneTLMWithoutSensors() throws {
        let result = try BeaconDecoder.decodeEddystone(serviceData(0xFEAA, "20000000800000000001000000ff"))
        #expect(result.format == .eddystone && result.isEmpty)
        #expect(try AdvertDecoder.decode(serviceData(0xFEAA, "20000000800000000001000000ff")).format == .eddystone)
    }

    @Test func badEddystoneFrames() {
        for hex in ["", "00e800", "10eb0f41", "10eb00ff", "2001", "30"] {
            #expect(throws: AdvertError.self) { try BeaconDecoder.decodeEddystone(serviceData(0xFEAA, hex)) }
        }
    }
}
