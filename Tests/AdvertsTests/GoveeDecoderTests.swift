import Testing
@testable import Adverts

/// Vectors from govee-ble's own tests (tests/test_parser.py).
@Suite struct GoveeDecoderTests {
    @Test func h5075Family() throws {
        let result = try GoveeDecoder.decode(manufacturerData(0xEC88, "00034db26400", name: "GVH5072_ABCD"))
        #expect(values(result) == ["temperature": .number(21.6), "humidity": .number(49.8), "battery": .integer(100)])
        #expect(units(result) == ["temperature": "°C", "humidity": "%", "battery": "%"])
    }

    @Test func h5074AndH5179LittleEndian() throws {
        #expect(values(try GoveeDecoder.decode(manufacturerData(0xEC88, "00e609bc126402", name: "Govee_H5074_5FF4")))
            == ["temperature": .number(25.34), "humidity": .number(47.96), "battery": .integer(100)])
        #expect(values(try GoveeDecoder.decode(manufacturerData(0x8801, "ec0001010a0aa40664", name: "Govee_H5179_3CD5")))
            == ["temperature": .number(25.7), "humidity": .number(17.0), "battery": .integer(100)])
    }

    @Test func h5106WithPM25() throws {
        #expect(values(try GoveeDecoder.decode(manufacturerData(0x0001, "01010ed13298", name: "GVH5106_4E05")))
            == ["temperature": .number(24.8), "humidity": .number(59.1), "pm25": .integer(0)])
    }

    @Test func theNameTellsModelsApart() throws {
        // The same bytes under company 0x0001: an H5101 by its name; nothing without a name saying so.
        #expect(values(try GoveeDecoder.decode(manufacturerData(0x0001, "0101038efe64", name: "GVH5110_2EC8")))
            == ["temperature": .number(23.3), "humidity": .number(21.4), "battery": .integer(100)])
        #expect(throws: AdvertError.notRecognised) { try GoveeDecoder.decode(manufacturerData(0x0001, "0101038efe64")) }
        // A probe thermometer (H5112) is not one of the family.
        #expect(throws: AdvertError.notRecognised) {
            try GoveeDecoder.decode(manufacturerData(0x0001, "0101033d70640041", name: "GV5112AC3D"))
        }
    }

    @Test func sensorErrorKeepsOnlyTheBattery() throws {
        #expect(values(try GoveeDecoder.decode(manufacturerData(0xEC88, "004a00283b00", name: "GVH5075_2762")))
            == ["battery": .integer(59)])
    }

    @Test func appleDataIsNotGovee() {
        #expect(throws: AdvertError.notRecognised) {
            try GoveeDecoder.decode(manufacturerData(0x004C, "00034db26400", name: "GVH5072_ABCD"))
        }
    }
}
