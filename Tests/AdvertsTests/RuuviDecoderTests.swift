import Testing
@testable import Adverts

/// Vectors from ruuvitag-ble's own tests (tests/test_v5.py).
@Suite struct RuuviDecoderTests {
    @Test func format5() throws {
        let result = try RuuviDecoder.decode(manufacturerData(0x0499, "0505a060a0c89afd34028cff006376726976dead7b3fefaf"))
        #expect(values(result) == [
            "temperature": .number(7.2), "humidity": .number(61.84), "pressure": .number(1013.54),
            "voltage": .integer(2395), "movement_counter": .integer(114), "acceleration_x": .number(-7.02),
            "acceleration_y": .number(6.39), "acceleration_z": .number(-2.51), "acceleration_total": .number(9.82),
        ])
        #expect(units(result)["pressure"] == "hPa" && units(result)["voltage"] == "mV")
        #expect(result.packetID == 0x6976)
    }

    @Test func unavailableFieldsAreLeftOut() throws {
        // Temperature, humidity, pressure, one axis and the battery voltage all hold their "not available" values.
        let result = try RuuviDecoder.decode(manufacturerData(0x0499, "058000ffffffff800000000000ffff72dead7b3fefaf0001"))
        #expect(values(result) == ["movement_counter": .integer(0x72)])
    }

    @Test func otherFormatsAndLengths() {
        #expect(throws: AdvertError.self) { try RuuviDecoder.decode(manufacturerData(0x0499, "03b20c1fca20007a002603d0088f")) }
        #expect(throws: AdvertError.self) { try RuuviDecoder.decode(manufacturerData(0x0499, "0505a060")) }
        #expect(throws: AdvertError.self) { try RuuviDecoder.decode(manufacturerData(0x0499, "")) }
        #expect(throws: AdvertError.notRecognised) { try RuuviDecoder.decode(manufacturerData(0x0498, "05")) }
    }
}
