import Testing
@testable import Codecs

@Suite struct HeartRateMeasurementTests {
    let codec = try! Codec(.heartRateMeasurement)

    @Test func fullMeasurementInSpecKeyOrder() throws {
        // 16-bit bpm, contact supported+detected, energy, three RR intervals.
        let bytes: [UInt8] = [0x1F, 72, 0, 123, 0, 0x40, 0x03, 0x00, 0x04, 0x30, 0x03]
        #expect(try codec.decode(bytes) == #"{"bpm":72,"contact":true,"energy_kj":123,"rr_ms":[812.5,1000,796.875]}"#)
    }

    @Test func minimalMeasurement() throws {
        #expect(try codec.decode([0x00, 60]) == #"{"bpm":60,"contact":null,"energy_kj":null,"rr_ms":[]}"#)
    }

    @Test func contactBits() throws {
        #expect(try codec.decode([0x02, 60]) == #"{"bpm":60,"contact":null,"energy_kj":null,"rr_ms":[]}"#)
        #expect(try codec.decode([0x04, 60]) == #"{"bpm":60,"contact":false,"energy_kj":null,"rr_ms":[]}"#)
        #expect(try codec.decode([0x06, 60]) == #"{"bpm":60,"contact":true,"energy_kj":null,"rr_ms":[]}"#)
    }

    @Test func sixteenBitValueUsesBothBytes() throws {
        #expect(try HeartRateMeasurement([0x01, 0x2C, 0x01]).bpm == 300)
        #expect(try HeartRateMeasurement([0x00, 0xFF]).bpm == 255)
    }

    /// Every combination of the five defined flag bits, with reserved bits set or clear.
    @Test(arguments: 0..<64)
    func everyFlagCombination(combination: Int) throws {
        let flags = UInt8(combination & 0x1F) | (combination & 0x20 != 0 ? 0xE0 : 0)
        var bytes: [UInt8] = [flags]
        let sixteenBit = flags & 0x01 != 0
        bytes += sixteenBit ? [0x34, 0x01] : [0x55]
        let hasEnergy = flags & 0x08 != 0
        if hasEnergy { bytes += [0x10, 0x27] }
        let hasRR = flags & 0x10 != 0
        if hasRR { bytes += [0x00, 0x04, 0x00, 0x02] }

        let value = try JSONValue.parse(try codec.decode(bytes))
        #expect(value.objectValue?.map(\.0) == ["bpm", "contact", "energy_kj", "rr_ms"])
        #expect(value["bpm"] == .int(sixteenBit ? 0x134 : 0x55))
        let expectedContact: JSONValue = flags & 0x04 == 0 ? .null : .bool(flags & 0x02 != 0)
        #expect(value["contact"] == expectedContact)
        #expect(value["energy_kj"] == (hasEnergy ? .int(10000) : .null))
        #expect(value["rr_ms"] == (hasRR ? [1000, 500] : []))

        // Any truncation of a valid measurement is an error, and so is a trailing byte when no RR list follows.
        for length in 0..<bytes.count where !(hasRR && length >= bytes.count - 4 && (bytes.count - length) % 2 == 0) {
            #expect(throws: CodecError.self) { try codec.decode(Array(bytes.prefix(length))) }
        }
        if !hasRR {
            #expect(throws: CodecError.self) { try codec.decode(bytes + [0]) }
        } else {
            #expect(throws: CodecError.self) { try codec.decode(bytes + [0]) }
            #expect(try JSONValue.parse(codec.decode(bytes + [0, 1]))["rr_ms"]?.arrayValue?.count == 3)
        }
    }

    @Test func rrIntervalsConvertExactly() throws {
        let measurement = try HeartRateMeasurement([0x10, 70, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x00])
        let expected: [Double] = [0.9765625, 63999.0234375, 0]
        #expect(measurement.rrMS == expected)
        #expect(measurement.json.serialized == #"{"bpm":70,"contact":null,"energy_kj":null,"rr_ms":[0.9765625,63999.0234375,0]}"#)
    }

    @Test func malformed() {
        #expect(throws: CodecError("heart rate measurement is empty")) { try codec.decode([]) }
        #expect(throws: CodecError("heart rate measurement is truncated: missing 16-bit heart rate")) { try codec.decode([0x01, 0x48]) }
        #expect(throws: CodecError("heart rate measurement is truncated: missing energy expended")) { try codec.decode([0x08, 0x48, 0x01]) }
        #expect(throws: CodecError("heart rate measurement has a truncated RR interval (1 bytes left)")) { try codec.decode([0x10, 0x48, 0x01]) }
    }

    @Test func isDecodeOnly() {
        #expect(!codec.canEncode)
        #expect(throws: CodecError.self) { try codec.encode("{}") }
    }
}
