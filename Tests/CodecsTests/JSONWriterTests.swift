import Testing
@testable import Codecs

@Suite struct JSONWriterTests {
    @Test func scalars() {
        #expect(JSONValue.null.serialized == "null")
        #expect(JSONValue.bool(true).serialized == "true")
        #expect(JSONValue.int(-42).serialized == "-42")
        #expect(JSONValue.string("x").serialized == #""x""#)
    }

    @Test(arguments: [
        (812.5, "812.5"), (1000.0, "1000"), (796.875, "796.875"), (0.1, "0.1"), (-2.5, "-2.5"), (0, "0"),
        (1e20, "1e+20"), (1.5e-9, "1.5e-09"), (123456789.125, "123456789.125"),
    ] as [(Double, String)])
    func doublesWithoutNeedlessDigits(value: Double, text: String) throws {
        #expect(JSONValue.double(value).serialized == text)
        #expect(try JSONValue.parse(text).doubleValue == value)
    }

    @Test func nonFiniteDoublesAreNull() {
        #expect(JSONValue.array([.double(.nan), .double(.infinity), .double(-.infinity)]).serialized == "[null,null,null]")
    }

    @Test func stringEscaping() {
        let value = JSONValue.string("q\"b\\s/\n\r\t\u{08}\u{0C}\u{01}\u{1F}\u{7F}é😀\u{2028}\u{2029}")
        #expect(value.serialized == #""q\"b\\s/\n\r\t\b\f\u0001\u001f"# + "\u{7F}é😀" + #"\u2028\u2029""#)
    }

    @Test func containersKeepOrder() {
        let value: JSONValue = ["type": "connected", "device": "strap", "n": 1, "list": [true, nil, 2.5], "empty": [:]]
        #expect(value.serialized == #"{"type":"connected","device":"strap","n":1,"list":[true,null,2.5],"empty":{}}"#)
        #expect(JSONValue.array([]).serialized == "[]")
    }

    @Test func roundTripsThroughTheParser() throws {
        let value: JSONValue = ["a": ["b": [1, -2.75, "c\u{0}d", false, nil]], "\u{1F600}": ""]
        #expect(try JSONValue.parse(value.serialized) == value)
    }
}
