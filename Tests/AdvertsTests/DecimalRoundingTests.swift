import Glibc
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

    /// The table lookup gives what the formula through libm (`log10`, then `pow` to correct it) gave, on every power
    /// of ten in range and on factors between them; just below a power of ten, where `log10` rounds up to the integer,
    /// it follows the scientific spelling (0.009999999999999998 is 9.999999999999998e-03: 3 places).
    @Test func placesAgreeWithTheLogarithm() {
        func viaLog(_ factor: Double) -> Int {
            var exponent = Int(log10(factor).rounded(.down))
            if pow(10.0, Double(exponent + 1)) <= factor { exponent += 1 }
            return -exponent
        }
        var factors: [Double] = [0.35, 0.005, 0.0625, 0.25, 2.5, 0.1 * 3, 0.00980665, 1.0 / 256, 1.0 / 400, 7, 1234]
        for n in -22...22 {
            let power = pow(10.0, Double(n))
            factors += [power, power.nextUp, power * 3, power * 9.99]
            if n > -22 { #expect(DecimalRounding.places(of: power.nextDown) == 1 - n, "below 1e\(n)") }
        }
        for factor in factors where factor >= 1e-22 && factor < 1e23 {
            #expect(DecimalRounding.places(of: factor) == viaLog(factor), "factor \(factor)")
        }
        #expect(DecimalRounding.round(1234.5, places: -1) == 1230)
        #expect(DecimalRounding.round(1250, places: -2) == 1200)
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
