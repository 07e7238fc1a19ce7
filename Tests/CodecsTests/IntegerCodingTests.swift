import Testing
@testable import Codecs

@Suite struct IntegerCodingTests {
    @Test(arguments: [
        (CodecKind.uint8, [0xFF], "255"), (.int8, [0xFF], "-1"), (.int8, [0x80], "-128"),
        (.uint16, [0x34, 0x12], "4660"), (.uint16be, [0x12, 0x34], "4660"),
        (.int16, [0xFE, 0xFF], "-2"), (.int16be, [0xFF, 0xFE], "-2"), (.int16, [0x00, 0x80], "-32768"),
        (.uint32, [0x78, 0x56, 0x34, 0x12], "305419896"), (.uint32be, [0x12, 0x34, 0x56, 0x78], "305419896"),
        (.int32, [0xFF, 0xFF, 0xFF, 0x7F], "2147483647"), (.int32be, [0x80, 0x00, 0x00, 0x00], "-2147483648"),
        (.uint32, [0xFF, 0xFF, 0xFF, 0xFF], "4294967295"),
    ] as [(CodecKind, [UInt8], String)])
    func bothDirections(kind: CodecKind, bytes: [UInt8], text: String) throws {
        let codec = try Codec(kind)
        #expect(try codec.decode(bytes) == text)
        #expect(try codec.encode(text) == bytes)
    }

    @Test(arguments: [(CodecKind.uint8, 2), (.uint8, 0), (.uint16, 1), (.int16be, 3), (.uint32, 2), (.int32, 5)])
    func decodeRequiresExactLength(kind: CodecKind, count: Int) throws {
        let codec = try Codec(kind)
        #expect(throws: CodecError.self) { try codec.decode([UInt8](repeating: 1, count: count)) }
    }

    @Test(arguments: [
        (CodecKind.uint8, "256"), (.uint8, "-1"), (.int8, "128"), (.int8, "-129"), (.uint16, "65536"),
        (.int16, "32768"), (.uint32, "4294967296"), (.int32, "-2147483649"), (.uint8, "99999999999999999999999"),
    ] as [(CodecKind, String)])
    func encodeIsRangeChecked(kind: CodecKind, text: String) throws {
        let codec = try Codec(kind)
        #expect(throws: CodecError("\(text) is out of range for \(kind) (\(range(kind)))")) { try codec.encode(text) }
    }

    @Test(arguments: ["", "abc", "1.0", "0x10", "1e3", "- 1", "+"])
    func encodeRejectsNonDecimal(text: String) throws {
        #expect(throws: CodecError.self) { try Codec(.uint16).encode(text) }
    }

    @Test func encodeTrimsWhitespaceAndAcceptsSign() throws {
        #expect(try Codec(.uint8).encode(" 42\n") == [42])
        #expect(try Codec(.int8).encode("+7") == [7])
        #expect(try Codec(.int16).encode("-300") == [0xD4, 0xFE])
    }

    private func range(_ kind: CodecKind) -> String {
        switch kind {
        case .uint8: "0...255"
        case .int8: "-128...127"
        case .uint16: "0...65535"
        case .int16: "-32768...32767"
        case .uint32: "0...4294967295"
        default: "-2147483648...2147483647"
        }
    }
}
