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

    /// The integer rounding gives, bit for bit (the sign of a zero too), what the C library's decimal text gives:
    /// on readings as the decoders scale them, on halves and quarters (ties), and on random doubles of every size.
    @Test func exactRoundingAgreesWithTheDecimalText() {
        var values: [Double] = [0, -0.0, 2.675, 0.125, 0.375, -1.005, 1.75, 1e-300, -1e-300, 5e-324, 0x1p52 - 0.5,
                                0x1p52, 0x1p53, 123_456_789.123_456_789, -0.0049, 0.005, 0.015, 0.025]
        for factor in [0.01, 0.1, 0.001, 0.000001, 0.35, 0.005, 0.0625, 1.0 / 200, 1.0 / 400, 0.00980665] {
            for raw in stride(from: -70_000, through: 70_000, by: 61) { values.append(Double(raw) * factor) }
        }
        for k in -4_000...4_000 { values += [Double(k) / 8, Double(k) / 1024, Double(k) / 2] }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            let exponent = UInt64.random(in: 900...1_100, using: &generator) << 52
            values.append(Double(bitPattern: generator.next() & ~(UInt64(0x7FF) << 52) | exponent))
        }
        var compared = 0
        for value in values {
            for places in 1...8 {
                let viaText = DecimalRounding.viaDecimalText(value, places: places)
                guard let exact = DecimalRounding.exactly(value, places: places) else { continue }
                compared += 1
                #expect(exact.bitPattern == viaText.bitPattern, "round(\(value), \(places))")
            }
        }
        #expect(compared > 250_000)
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
