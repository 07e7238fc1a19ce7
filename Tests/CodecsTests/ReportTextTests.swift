import Testing
@testable import Codecs

@Suite struct ReportTextTests {
    @Test func controlCharactersAreEscapedSoNoLineCanBeForged() {
        #expect(ReportText.escaped("zz\nFORGED critical line") == "zz\\nFORGED critical line")
        #expect(ReportText.escaped("a\r\tb\u{1}\u{7f}\u{9b}") == "a\\r\\tb\\x01\\x7f\\x9b")
        let once = ReportText.escaped("zz\nFORGED")
        #expect(ReportText.escaped(once) == once, "escaping twice changes nothing")
        #expect(ReportText.escaped("x\u{2028}y") == "x\\u{2028}y")
    }

    @Test func cutAt64BytesOfTheOriginalNeverInsideACharacter() {
        let long = String(repeating: "a", count: 16 * 1024)
        #expect(ReportText.escaped(long) == String(repeating: "a", count: 64) + "…")
        let wide = String(repeating: "é", count: 40)          // 2 bytes each
        #expect(ReportText.escaped(wide) == String(repeating: "é", count: 32) + "…")
        #expect(ReportText.escaped([0xff, 0x41]) == "\u{FFFD}A")
    }

    @Test func codecErrorsQuoteThePayloadEscaped() throws {
        let codec = try Codec(.hex)
        #expect(throws: CodecError.self) { try codec.encode("zz\nFORGED critical line") }
        do {
            _ = try codec.encode("zz\nFORGED")
        } catch {
            #expect(!error.message.contains("\n"))
        }
    }
}
