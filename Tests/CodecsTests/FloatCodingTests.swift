import Testing
@testable import Codecs

@Suite struct FloatCodingTests {
    @Test(arguments: [
        (CodecKind.float32, [0x00, 0x00, 0xC0, 0x3F], "1.5"), (.float32be, [0x3F, 0xC0, 0x00, 0x00], "1.5"),
        (.float32, [0xCD, 0xCC, 0xCC, 0x3D], "0.1"), (.float32, [0x00, 0x00, 0x7A, 0x44], "1000"),
        (.float32, [0x00, 0x00, 0x00, 0x00], "0"), (.float32, [0x00, 0x00, 0x00, 0x80], "-0"),
        (.float64, [0x9A, 0x99, 0x99, 0x99, 0x99, 0x99, 0xB9, 0x3F], "0.1"),
        (.float64be, [0x40, 0x37, 0x80, 0, 0, 0, 0, 0], "23.5"), (.float64, [0, 0, 0, 0, 0, 0x40, 0x8F, 0xC0], "-1000"),
    ] as [(CodecKind, [UInt8], String)])
    func bothDirections(kind: CodecKind, bytes: [UInt8], text: String) throws {
        let codec = try Codec(kind)
        #expect(try codec.decode(bytes) == text)
        #expect(try codec.encode(text) == bytes)
    }

    @Test func nonFiniteValuesRoundTrip() throws {
        let codec = try Codec(.float32)
        #expect(try codec.decode([0x00, 0x00, 0x80, 0x7F]) == "inf")
        #expect(try codec.decode([0x00, 0x00, 0x80, 0xFF]) == "-inf")
        #expect(try codec.decode([0x00, 0x00, 0xC0, 0x7F]) == "nan")
        #expect(try codec.encode("inf") == [0x00, 0x00, 0x80, 0x7F])
        #expect(try codec.encode("-inf") == [0x00, 0x00, 0x80, 0xFF])
        #expect(Float(bitPattern: UInt32(littleEndianBytes: try codec.encode("nan"))).isNaN)
    }

    @Test func largeAndSmallValuesUseShortestSpelling() throws {
        let codec = try Codec(.float64)
        #expect(try codec.decode(ByteOrder.store(Double(1e20).bitPattern, kind: .float64)) == "1e+20")
        #expect(try codec.decode(ByteOrder.store(Double(123456789012345).bitPattern, kind: .float64)) == "123456789012345")
        #expect(try codec.decode(ByteOrder.store(Double(2.5e-7).bitPattern, kind: .float64)) == "2.5e-07")
        #expect(try codec.encode("2.5e-07") == ByteOrder.store(Double(2.5e-7).bitPattern, kind: .float64))
    }

    @Test func encodeAcceptsDecimalForms() throws {
        let codec = try Codec(.float32)
        #expect(try codec.encode(".5") == codec.encode("0.5"))
        #expect(try codec.encode("5.") == codec.encode("5"))
        #expect(try codec.encode("+1E2") == codec.encode("100"))
        #expect(try codec.encode(" 21.5\n") == codec.encode("21.5"))
    }

    @Test(arguments: ["", "abc", "0x1p3", "1e", ".", "1.2.3", "--1", "1e+", "NaNx"])
    func encodeRejectsNonDecimal(text: String) throws {
        #expect(throws: CodecError.self) { try Codec(.float64).encode(text) }
    }

    @Test func encodeIsRangeChecked() throws {
        #expect(throws: CodecError("1e39 is out of range for float32")) { try Codec(.float32).encode("1e39") }
        #expect(throws: CodecError("1e309 is out of range for float64")) { try Codec(.float64).encode("1e309") }
        #expect(try Codec(.float64).encode("1e39") == ByteOrder.store(Double(1e39).bitPattern, kind: .float64))
    }

    @Test func decodeRequiresExactLength() throws {
        #expect(throws: CodecError("codec float32 needs exactly 4 bytes, got 8")) { try Codec(.float32).decode([UInt8](repeating: 0, count: 8)) }
        #expect(throws: CodecError.self) { try Codec(.float64).decode([0, 0, 0, 0]) }
    }
}

private extension UInt32 {
    init(littleEndianBytes bytes: [UInt8]) {
        self = bytes.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }
}
