import Testing
@testable import Adverts
import Bluetooth

/// Vectors from bthome-ble's own tests (tests/test_parser_v2.py), values as that parser reads them.
@Suite struct BTHomeDecoderTests {
    func decode(_ hex: String, address: String = "A4:C1:38:8D:18:B2", bindkey: String? = nil) throws -> AdvertResult {
        try BTHomeDecoder.decode(serviceData(0xFCD2, hex, address: address), bindkey: bindkey.map(bytes))
    }

    @Test func temperatureAndHumidity() throws {
        let result = try decode("4002ca0903bf13")
        #expect(values(result) == ["temperature": .number(25.06), "humidity": .number(50.55)])
        #expect(units(result) == ["temperature": "°C", "humidity": "%"])
        #expect(result.packetID == nil && !result.encrypted)
    }

    @Test func severalObjectsOfOneKindAreNumbered() throws {
        let result = try decode("4002ca0902cf0902cf0803b71803b717015d")
        #expect(values(result) == [
            "temperature_1": .number(25.06), "temperature_2": .number(25.11), "temperature_3": .number(22.55),
            "humidity_1": .number(63.27), "humidity_2": .number(60.71), "battery": .integer(93),
        ])
    }

    @Test func packetIDBatteryAndButton() throws {
        let result = try decode("40005201643a01")
        #expect(result.packetID == 82)
        #expect(values(result) == ["battery": .integer(100)])
        #expect(result.events == [AdvertEvent(name: "button", type: "press")])
    }

    @Test func binarySensorSharingASensorNameGetsBinarySuffix() throws {
        let result = try decode("4000a70c780b1000")
        #expect(values(result) == ["voltage": .number(2.936), "power_binary": .state(false)])
        #expect(result.packetID == 167)
    }

    @Test func textRawTimestampAndSignedFourByteScaled() throws {
        #expect(values(try decode("44530c48656c6c6f20576f726c6421")) == ["text": .text("Hello World!")])
        #expect(values(try decode("44540c48656c6c6f20576f726c6421")) == ["raw": .text("48656c6c6f20576f726c6421")])
        #expect(values(try decode("44505d396164")) == ["timestamp": .text("2023-05-14T19:41:17+00:00")])
        #expect(values(try decode("40630057d0ff")) == ["acceleration": .number(-3.123456)])
        #expect(values(try decode("404632")) == ["uv_index": .number(5.0)])
    }

    @Test func dimmerAndCommandEvents() throws {
        #expect(try decode("403c0103").events == [AdvertEvent(name: "dimmer", type: "rotate_left", steps: 3)])
        #expect(try decode("403b020201ff").events == [AdvertEvent(name: "command", type: "toggle", arguments: "01ff")])
        // Event type 0 is "nothing happened": no event, and nothing else in the packet either.
        #expect(throws: AdvertError.self) { try decode("403a00") }
    }

    @Test func encryptedWithBindkey() throws {
        let result = try decode("41a47266c95f730011223378237214", address: "54:48:E6:8F:80:A5",
                                bindkey: "231d39c1d7cc1ab1aee224cd096db932")
        #expect(values(result) == ["temperature": .number(25.06), "humidity": .number(50.55)])
        #expect(result.encrypted && result.encryptionCounter == 0x3322_1100)
    }

    @Test func encryptedFailures() throws {
        let packet = "41a47266c95f730011223378237214"
        #expect(throws: AdvertError.bindkeyNeeded) { try decode(packet, address: "54:48:E6:8F:80:A5") }
        #expect(throws: AdvertError.decryptionFailed) {
            try decode(packet, address: "54:48:E6:8F:80:A5", bindkey: "231d39c1d7cc1ab1aee224cd096db933")
        }
        // The address is part of the nonce.
        #expect(throws: AdvertError.decryptionFailed) {
            try decode(packet, address: "54:48:E6:8F:80:A6", bindkey: "231d39c1d7cc1ab1aee224cd096db932")
        }
        #expect(throws: AdvertError.addressNeeded) {
            try BTHomeDecoder.decode(serviceData(0xFCD2, packet), bindkey: bytes("231d39c1d7cc1ab1aee224cd096db932"))
        }
        #expect(throws: AdvertError.unencryptedWithBindkey) {
            try decode("4002ca0903bf13", bindkey: "231d39c1d7cc1ab1aee224cd096db932")
        }
    }

    @Test func encryptRoundTrips() throws {
        let address = BluetoothAddress("54:48:E6:8F:80:A5")!
        let key = bytes("231d39c1d7cc1ab1aee224cd096db932")
        let sealed = try #require(BTHomeDecoder.encrypt(objects: bytes("02ca0903bf13"), address: address, bindkey: key,
                                                        counter: 0x3322_1100))
        #expect(sealed == bytes("41a47266c95f730011223378237214"))
        let included = try #require(BTHomeDecoder.encrypt(objects: bytes("0164"), address: address, bindkey: key,
                                                          counter: 7, info: 0x43))
        let result = try BTHomeDecoder.decode(serviceData(0xFCD2, hexString(included)), bindkey: key)
        #expect(values(result) == ["battery": .integer(100)] && result.encryptionCounter == 7)
    }

    @Test func truncatedObjectEndsThePacketKeepingWhatCameBefore() throws {
        #expect(values(try decode("4002ca0903bf")) == ["temperature": .number(25.06)])
        // An unknown object id: its length is unknown, so nothing after it is read.
        #expect(values(try decode("4002ca09ee03bf13")) == ["temperature": .number(25.06)])
        // Text with a length running past the end.
        #expect(values(try decode("4001645310414243")) == ["battery": .integer(100)])
    }

    @Test func malformedPacketsAreErrors() {
        #expect(throws: AdvertError.self) { try decode("") }
        #expect(throws: AdvertError.self) { try decode("40") }
        #expect(throws: AdvertError.self) { try decode("2002ca09") }  // version 1 in the info byte
        #expect(throws: AdvertError.self) { try decode("42a4c1") }  // address flag, no address
        #expect(throws: AdvertError.notRecognised) { try BTHomeDecoder.decode(serviceData(0x181C, "02ca09")) }
    }

    @Test func invalidUTF8TextIsDropped() throws {
        #expect(values(try decode("4001645302c328")) == ["battery": .integer(100)])
    }

    @Test func noPrefixCrashes() {
        _ = decodePrefixes(serviceData(0xFCD2, "4000a70c780b10003a0153034142430202ca"))
        _ = decodePrefixes(serviceData(0xFCD2, "41a47266c95f730011223378237214", address: "54:48:E6:8F:80:A5"),
                           bindkey: bytes("231d39c1d7cc1ab1aee224cd096db932"))
    }
}
