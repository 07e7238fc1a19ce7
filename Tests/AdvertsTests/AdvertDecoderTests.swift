import Testing
@testable import Adverts
import Bluetooth
import Codecs

@Suite struct AdvertDecoderTests {
    @Test func triesEachAllowedFormat() throws {
        let broadcast = Broadcast(
            address: BluetoothAddress("A4:C1:38:8D:18:B2"),
            serviceData: [.init(uuid: BluetoothUUID(UInt16(0xFCD2)), bytes: bytes("4002ca0903bf13"))],
            manufacturerData: [.init(company: 0x0499, bytes: bytes("0505a060a0c89afd34028cff006376726976dead7b3fefaf"))])
        #expect(try AdvertDecoder.decode(broadcast).format == .bthome)
        #expect(try AdvertDecoder.decode(broadcast, formats: [.ruuvi]).format == .ruuvi)
        #expect(throws: AdvertError.notRecognised) { try AdvertDecoder.decode(broadcast, formats: [.xiaomi, .govee]) }
    }

    @Test func theMostSpecificErrorWins() {
        let broadcast = serviceData(0xFCD2, "41a47266c95f730011223378237214", address: "54:48:E6:8F:80:A5")
        #expect(throws: AdvertError.bindkeyNeeded) { try AdvertDecoder.decode(broadcast) }
        #expect(throws: AdvertError.notRecognised) { try AdvertDecoder.decode(Broadcast()) }
    }

    @Test func json() throws {
        let result = try AdvertDecoder.decode(serviceData(0xFCD2, "40005201643a01"))
        #expect(result.json().serialized
            == #"{"format":"bthome","measurements":{"battery":100},"events":[{"name":"button","event_type":"press"}],"packet_id":82,"encrypted":false}"#)
        #expect(result.json(units: true)["units"] == ["battery": "%"])
        let dimmer = try AdvertDecoder.decode(serviceData(0xFCD2, "4002ca093c0205"))
        #expect(dimmer.json().serialized
            == #"{"format":"bthome","measurements":{"temperature":25.06},"events":[{"name":"dimmer","event_type":"rotate_right","steps":5}],"packet_id":null,"encrypted":false}"#)
    }

    @Test func nonFiniteFloatsAreNoReadings() {
        var result = AdvertResult(format: .xiaomi)
        result.set("temperature", .integer(21))
        result.set("temperature", .number(.nan))
        result.set("humidity", .number(.infinity))
        #expect(result.measurements.isEmpty)
    }
}
