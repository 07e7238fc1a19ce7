import Testing
@testable import Codecs

@Suite struct HexTests {
    let codec = try! Codec(.hex)

    @Test func decodesLowercaseWithoutSeparators() throws {
        #expect(try codec.decode([0x0A, 0x1B, 0xFF, 0x00]) == "0a1bff00")
        #expect(try codec.decode([]) == "")
    }

    @Test(arguments: [
        ("0a1b", [0x0A, 0x1B]), ("0A1B", [0x0A, 0x1B]), ("0a 1b", [0x0A, 0x1B]), ("0a:1b", [0x0A, 0x1B]),
        ("0x0a1b", [0x0A, 0x1B]), ("0x0a 0x1b", [0x0A, 0x1B]), ("  01\n", [0x01]), ("aa:bb:cc", [0xAA, 0xBB, 0xCC]),
        ("0102 0304", [1, 2, 3, 4]), ("", []),
    ] as [(String, [UInt8])])
    func encodesLeniently(payload: String, bytes: [UInt8]) throws {
        #expect(try codec.encode(payload) == bytes)
    }

    @Test(arguments: ["1", "abc", "0g", "1 2", "a:b", "0x", "zz", "01-02", "0x0x01"])
    func rejectsAmbiguousOrInvalid(payload: String) {
        #expect(throws: CodecError.self) { try codec.encode(payload) }
    }

    @Test func roundTripsEveryByte() throws {
        let bytes = (0...255).map(UInt8.init)
        #expect(try codec.encode(codec.decode(bytes)) == bytes)
    }
}
