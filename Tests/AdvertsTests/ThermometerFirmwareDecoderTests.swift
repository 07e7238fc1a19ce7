import Testing
@testable import Adverts

@Suite struct ThermometerFirmwareDecoderTests {
    @Test func pvvx() throws {
        // Address A4:C1:38:8D:18:B2 (LE), 23.45 °C, 50.55 %, 2950 mV, 87 %, counter 16, flags.
        let result = try AdvertDecoder.decode(serviceData(0x181A, "b2188d38c1a42909bf13860b571005"))
        #expect(result.format == .pvvx && result.packetID == 16)
        #expect(values(result) == ["temperature": .number(23.45), "humidity": .number(50.55), "battery": .integer(87),
                                   "voltage": .number(2.95)])
        #expect(units(result) == ["temperature": "°C", "humidity": "%", "battery": "%", "voltage": "V"])
    }

    @Test func atc1441() throws {
        // Address (BE), 23.4 °C, 50 %, 87 %, 2950 mV, counter 16.
        let result = try AdvertDecoder.decode(serviceData(0x181A, "a4c1388d18b200ea32570b8610"))
        #expect(result.format == .atc && result.packetID == 16)
        #expect(values(result) == ["temperature": .number(23.4), "humidity": .integer(50), "battery": .integer(87),
                                   "voltage": .number(2.95)])
    }

    @Test func negativeTemperatures() throws {
        #expect(try AdvertDecoder.decode(serviceData(0x181A, "b2188d38c1a4f6ffbf13860b571005"))["temperature"]
            == .number(-0.1))
        #expect(try AdvertDecoder.decode(serviceData(0x181A, "a4c1388d18b2ff9c32570b8610"))["temperature"]
            == .number(-10.0))
    }

    @Test func otherLengthsAreMalformed() {
        #expect(throws: AdvertError.self) { try AdvertDecoder.decode(serviceData(0x181A, "b2188d38c1a42909bf13860b5710")) }
        #expect(throws: AdvertError.self) { try ThermometerFirmwareDecoder.decodePvvx(serviceData(0x181A, "a4c1388d18b200ea32570b8610")) }
        #expect(throws: AdvertError.self) { try ThermometerFirmwareDecoder.decodeATC(serviceData(0x181A, "")) }
    }
}
