import Testing
@testable import Codecs

@Suite struct NumberFormattingTests {
    /// The double's own spelling without `description` gives `description`'s text (less a trailing ".0"), on the
    /// readings a broadcast's decoders make (raw integers times their factors, rounded to the factor's places), on
    /// decimals of every length and on random doubles (where it mostly declines and `description` answers). Sized to
    /// take about a second in a debug build: the whole suite runs in parallel, beside tests with timeouts.
    @Test func plainDecimalsAreWhatDescriptionSays() {
        func described(_ value: Double) -> String {
            var text = value.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            return text
        }
        var values: [Double] = [0.001, 0.0011, 0.000999, 0.1, 0.2, 0.3, 0.1 + 0.2, 1.0 / 3, 2.0 / 3, 25.06, -25.06,
                                123_456_789_012.345, 999_999_999_999.999, 1e15 - 0.5, 0.123456789012345,
                                5e-324, 1e-5, 0.0001, 1e300]
        for scale in [0.01, 0.1, 0.001, 0.000001, 0.35, 0.005, 0.0625, 1.0 / 200, 1.0 / 400, 0.00980665, 0.0001] {
            for raw in stride(from: -200_000, through: 200_000, by: 37) { values.append(Double(raw) * scale) }
        }
        for digits in 1...17 {
            var power = 1.0
            for _ in 0..<digits { power *= 10 }
            for _ in 0..<500 { values.append(Double(Int64.random(in: 1...Int64(min(power, 9e18)))) / power * 1000) }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let exponent = UInt64.random(in: 1_000...1_070, using: &generator) << 52
            values.append(Double(bitPattern: generator.next() & ~(UInt64(0x7FF) << 52) | exponent))
        }
        var plain = 0
        for value in values {
            #expect(NumberFormatting.shortest(value) == described(value), "\(value)")
            if NumberFormatting.plainDecimal(value) != nil { plain += 1 }
        }
        #expect(plain > 50_000)
    }
}
