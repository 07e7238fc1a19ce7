import Testing
@testable import Adverts

@Suite struct DecimalRoundingTests {
    @Test func roundsAsPythonDoes() {
        // 2.675 is 2.67499999… in binary: Python's round gives 2.67, not 2.68.
        #expect(DecimalRounding.round(2.675, places: 2) == 2.67)
        #expect(DecimalRounding.round(0.125, places: 2) == 0.12)  // exactly half: to even
        #expect(DecimalRounding.round(0.375, places: 2) == 0.38)
        #expect(DecimalRounding.round(-1.005, places: 2) == -1.0)
        #expect(DecimalRounding.round(5 * 0.35, places: 1) == 1.8)  // the product is exactly 1.75: to even
        #expect(DecimalRounding.round(123.4, places: 0) == 123)
    }

    @Test func placesOfAFactor() {
        #expect(DecimalRounding.places(of: 0.01) == 2)
        #expect(DecimalRounding.places(of: 0.001) == 3)
        #expect(DecimalRounding.places(of: 0.35) == 1)
        #expect(DecimalRounding.places(of: 0.000001) == 6)
        #expect(DecimalRounding.places(of: 1) == 0)
    }

    @Test func scaledKeepsIntegersWhole() {
        #expect(DecimalRounding.scaled(42, factor: 1) == .integer(42))
        #expect(DecimalRounding.scaled(2506, factor: 0.01) == .number(25.06))
        #expect(DecimalRounding.scaled(-3_123_456, factor: 0.000001) == .number(-3.123456))
    }

    @Test func timestamps() {
        #expect(Timestamps.iso8601(secondsSince1970: 0) == "1970-01-01T00:00:00+00:00")
        #expect(Timestamps.iso8601(secondsSince1970: 1_684_093_277) == "2023-05-14T19:41:17+00:00")
        #expect(Timestamps.iso8601(secondsSince1970: 951_782_400) == "2000-02-29T00:00:00+00:00")
        #expect(Timestamps.iso8601(secondsSince1970: UInt64(UInt32.max)) == "2106-02-07T06:28:15+00:00")
    }
}
