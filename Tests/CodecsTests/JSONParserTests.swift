import Testing
@testable import Codecs

@Suite struct JSONParserTests {
    @Test func parsesDocuments() throws {
        let value = try JSONValue.parse(#" { "a" : [1, 2.5, -0.5e1, true, false, null], "b": {"c": "d"}, "a": 3 } "#)
        #expect(value == ["a": [1, 2.5, -5.0, true, false, nil], "b": ["c": "d"], "a": 3])
        #expect(value["a"]?[1]?.doubleValue == 2.5)
        #expect(value["b"]?["c"]?.stringValue == "d")
        #expect(value["missing"] == nil)
    }

    @Test func numbers() throws {
        #expect(try JSONValue.parse("0") == .int(0))
        #expect(try JSONValue.parse("-12") == .int(-12))
        #expect(try JSONValue.parse("1.0") == .double(1))
        #expect(try JSONValue.parse("1E3") == .double(1000))
        #expect(try JSONValue.parse("9223372036854775808") == .double(9223372036854775808))
        #expect(try JSONValue.parse("9223372036854775807") == .int(Int.max))
    }

    /// Negative zero survives a round trip (found by FuzzCodecs: "-0e10" was written "-0" and read back as 0).
    @Test func negativeZeroRoundTrips() throws {
        for text in ["-0", "-0e10", "-0.0"] {
            let value = try JSONValue.parse(text)
            #expect(value.serialized == "-0")
            #expect(try JSONValue.parse(value.serialized).serialized == "-0")
        }
        #expect(try JSONValue.parse("0").serialized == "0")
    }

    @Test func stringEscapes() throws {
        #expect(try JSONValue.parse(#""a\"\\\/\b\f\n\r\t\u00e9\u20AC""#) == .string("a\"\\/\u{08}\u{0C}\n\r\té€"))
        #expect(try JSONValue.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try JSONValue.parse(#""\ud83d x""#) == .string("\u{FFFD} x"))
        #expect(try JSONValue.parse(#""\ude00\ud83d\u0041""#) == .string("\u{FFFD}\u{FFFD}A"))
        #expect(try JSONValue.parse("\"héllo 😀\"") == .string("héllo 😀"))
    }

    @Test(arguments: [
        "", "   ", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "+1", "1e", "tru", "nul", "\"abc", "\"\\x\"",
        "\"\\u12\"", "\"a\nb\"", "[1] [2]", "{a:1}", "{\"a\" 1}", "NaN", "'x'", "[1 2]",
    ])
    func rejectsInvalid(text: String) {
        #expect(throws: CodecError.self) { try JSONValue.parse(text) }
    }

    @Test func errorsNameTheOffset() {
        #expect(throws: CodecError("invalid JSON at offset 6: expected ',' or ']'")) { try JSONValue.parse("[1, 2 3]") }
    }

    @Test func deepNestingIsRejectedNotACrash() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: CodecError.self) { try JSONValue.parse(deep) }
        let fine = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        #expect(throws: Never.self) { try JSONValue.parse(fine) }
    }
}
