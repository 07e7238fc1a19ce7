import Testing
@testable import Codecs

@Suite struct CodecTests {
    @Test func valuesMapTranslatesBothWays() throws {
        let codec = try Codec(.hex, values: [(key: "ON", value: "01"), (key: "OFF", value: "00")])
        #expect(try codec.encode("ON") == [0x01])
        #expect(try codec.encode("OFF") == [0x00])
        #expect(try codec.decode([0x01]) == "ON")
        #expect(try codec.decode([0x00]) == "OFF")
    }

    @Test func unknownPayloadsFallThroughToTheCodec() throws {
        let codec = try Codec(.hex, values: [(key: "ON", value: "01"), (key: "OFF", value: "00")])
        #expect(try codec.encode("ff") == [0xFF])
        #expect(try codec.decode([0x02]) == "02")
        #expect(throws: CodecError.self) { try codec.encode("on") }
    }

    /// The hot path decodes bytes lent by the reader: the same payloads as from an array, for every codec, a
    /// values map and an empty value included.
    @Test func lentBytesDecodeLikeArrays() throws {
        let values: [[UInt8]] = [[], [0x01], [0x00], [0x02], [0x10, 0x20], [0xDE, 0xAD, 0xBE, 0xEF, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]]
        let mapped = try Codec(.hex, values: [(key: "ON", value: "01"), (key: "OFF", value: "00")])
        for codec in try [mapped, Codec(.hex), Codec(.base64), Codec(.text), Codec(.uint8), Codec(.uint16be), Codec(.bool)] {
            for value in values {
                let fromArray = Result { () throws(CodecError) in try codec.decode(value) }
                let lent = value.withUnsafeBytes { bytes in Result { () throws(CodecError) in try codec.decode(bytes) } }
                #expect(lent == fromArray, "\(codec.kind) \(value)")
            }
        }
    }

    @Test func mappedValuesCompareAsBytesNotText() throws {
        // "0x01" and "01" encode to the same byte, so the device's 0x01 still decodes to the key.
        let codec = try Codec(.hex, values: [(key: "ON", value: "0x01")])
        #expect(try codec.decode([0x01]) == "ON")
        let numeric = try Codec(.uint8, values: [(key: "HIGH", value: "200")])
        #expect(try numeric.decode([200]) == "HIGH")
        #expect(try numeric.encode("HIGH") == [200])
        #expect(try numeric.decode([7]) == "7")
    }

    @Test func firstKeyWinsForDuplicateValues() throws {
        let codec = try Codec(.bool, values: [(key: "yes", value: "1"), (key: "on", value: "true")])
        #expect(try codec.decode([1]) == "yes")
    }

    @Test func valuesMustEncodeWithTheCodec() {
        #expect(throws: CodecError("value \"zz\" for \"ON\" is not valid for codec hex: \"zz\" is not hex: invalid digit in \"zz\"")) {
            try Codec(.hex, values: [(key: "ON", value: "zz")])
        }
        #expect(throws: CodecError.self) { try Codec(.uint8, values: [(key: "MAX", value: "256")]) }
        #expect(throws: CodecError("codec battery_level cannot encode, so it cannot have a values map")) {
            try Codec(.batteryLevel, values: [(key: "FULL", value: "100")])
        }
    }

    @Test func textMapsLinesAndCommands() throws {
        let codec = try Codec(.text, values: [(key: "ON", value: "led=1"), (key: "OFF", value: "led=0")])
        #expect(codec.mapLine("led=1") == "ON")
        #expect(codec.mapLine("hello") == "hello")
        #expect(codec.mapCommand("OFF") == "led=0")
        #expect(codec.mapCommand("raw") == "raw")
        #expect(try codec.encode("ON") == Array("led=1".utf8))
    }

    @Test func textDecodeReplacesInvalidUTF8WithoutDropping() throws {
        let codec = try Codec(.text)
        #expect(try codec.decode(Array("héllo".utf8)) == "héllo")
        #expect(try codec.decode([0x61, 0xFF, 0x62]) == "a\u{FFFD}b")
        #expect(try codec.decode([0x61, 0xE2, 0x82]) == "a\u{FFFD}")
        #expect(try codec.decode([0xC0, 0x80]) == "\u{FFFD}\u{FFFD}")
        #expect(try codec.decode([0xED, 0xA0, 0x80]) == "\u{FFFD}\u{FFFD}\u{FFFD}")
        #expect(try codec.encode("a\nb") == [0x61, 0x0A, 0x62])
    }

    @Test func equalityComparesKindAndValues() throws {
        #expect(try Codec(.hex, values: [(key: "ON", value: "01")]) == Codec(.hex, values: [(key: "ON", value: "01")]))
        #expect(try Codec(.hex, values: [(key: "ON", value: "01")]) != Codec(.hex, values: [(key: "ON", value: "02")]))
        #expect(try Codec(.hex) != Codec(.base64))
    }

    @Test func everyKindHasAConfigSpellingAndEncodability() {
        #expect(CodecKind(rawValue: "heart_rate_measurement") == .heartRateMeasurement)
        #expect(CodecKind(rawValue: "battery_level") == .batteryLevel)
        #expect(CodecKind.allCases.filter { !$0.canEncode } == [.batteryLevel, .heartRateMeasurement])
    }
}
