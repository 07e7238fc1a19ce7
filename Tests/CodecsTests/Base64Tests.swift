import Testing
@testable import Codecs

@Suite struct Base64Tests {
    let codec = try! Codec(.base64)

    @Test(arguments: [
        ([], ""), ([0x66], "Zg=="), ([0x66, 0x6F], "Zm8="), ([0x66, 0x6F, 0x6F], "Zm9v"),
        (Array("foobar".utf8), "Zm9vYmFy"), ([0xFB, 0xFF], "+/8="),
    ] as [([UInt8], String)])
    func bothDirections(bytes: [UInt8], text: String) throws {
        #expect(try codec.decode(bytes) == text)
        #expect(try codec.encode(text) == bytes)
    }

    @Test func acceptsMissingPaddingAndSurroundingWhitespace() throws {
        #expect(try codec.encode("Zg") == [0x66])
        #expect(try codec.encode("Zm8") == [0x66, 0x6F])
        #expect(try codec.encode(" Zm9v\n") == Array("foo".utf8))
    }

    @Test(arguments: ["Z", "Zg=", "Z===", "Zm9v=", "Zm 9v", "-_8=", "Zh==", "Zm9=", "=Zm9", "Zg==Zg==", "é"])
    func rejectsInvalid(text: String) {
        #expect(throws: CodecError.self) { try codec.encode(text) }
    }

    @Test func roundTripsManyLengths() throws {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(try codec.encode(codec.decode(bytes)) == bytes)
        }
    }
}
