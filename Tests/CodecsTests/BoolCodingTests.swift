import Testing
@testable import Codecs

@Suite struct BoolCodingTests {
    let codec = try! Codec(.bool)

    @Test(arguments: [([0], "false"), ([1], "true"), ([0xFF], "true"), ([0, 0], "false"), ([0, 2], "true")] as [([UInt8], String)])
    func decodesAnyNonZeroByteAsTrue(bytes: [UInt8], text: String) throws {
        #expect(try codec.decode(bytes) == text)
    }

    @Test func decodeRejectsEmpty() {
        #expect(throws: CodecError.self) { try codec.decode([]) }
    }

    @Test(arguments: [("true", 1), ("false", 0), ("1", 1), ("0", 0), ("TRUE", 1), ("False", 0), (" true\n", 1)] as [(String, UInt8)])
    func encodes(text: String, byte: UInt8) throws {
        #expect(try codec.encode(text) == [byte])
    }

    @Test(arguments: ["", "yes", "on", "2", "t", "01"])
    func encodeRejectsOthers(text: String) {
        #expect(throws: CodecError.self) { try codec.encode(text) }
    }
}
