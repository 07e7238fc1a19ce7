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

    /// Finite floats and doubles are written from the standard library's digits as bytes (`UTF8Buffer` is the stream),
    /// not through a `String`: `write(to:)` hands them over as ASCII, and the text is `description`'s.
    @Test func finiteNumbersReachTheBufferAsBytes() {
        struct Probe: TextOutputStream {
            var strings = 0
            var ascii: [UInt8] = []
            mutating func write(_ string: String) { strings += 1 }
            mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) { ascii += buffer }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let float = Float(bitPattern: UInt32(truncatingIfNeeded: generator.next()))
            let double = Double(bitPattern: generator.next())
            guard float.isFinite, double.isFinite else { continue }
            var probe = Probe()
            float.write(to: &probe)
            #expect(probe.strings == 0 && String(decoding: probe.ascii, as: UTF8.self) == float.description)
            probe = Probe()
            double.write(to: &probe)
            #expect(probe.strings == 0 && String(decoding: probe.ascii, as: UTF8.self) == double.description)
            var out = UTF8Buffer()
            NumberFormatting.write(float, to: &out)
            var expected = float.description
            if expected.hasSuffix(".0") { expected.removeLast(2) }
            if float == float.rounded(.towardZero), abs(float) < 1e15 { continue }   // written as an integer
            #expect(out.string == expected)
        }
    }
}

/// The `text` codec passes well-formed UTF-8 through as bytes and leaves anything else to `String(decoding:as:)`: the
/// check must call well-formed exactly what the standard library does.
@Suite struct UTF8ValidationTests {
    static func agrees(_ bytes: [UInt8]) -> Bool {
        let wellFormed = bytes.withUnsafeBytes { UTF8Validation.isWellFormed($0) }
        return wellFormed == String(decoding: bytes, as: UTF8.self).utf8.elementsEqual(bytes)
    }

    @Test func everyShortSequenceIsJudgedAsTheStandardLibraryDoes() {
        var mismatches = 0
        // Every first and second byte; for the third and fourth, one of each class (ASCII, continuation at the range
        // limits table 3-7 uses, lead, invalid). About 200,000 sequences: two or three seconds in a debug build.
        let tails: [UInt8] = [0x41, 0x80, 0x8F, 0x90, 0xA0, 0xBF, 0xC2, 0xFF]
        for first in 0...255 {
            for second in 0...255 {
                var bytes = [UInt8(first), UInt8(second)]
                if !Self.agrees(bytes) { mismatches += 1 }
                guard first >= 0xE0 else { continue }
                for third in tails {
                    bytes = [UInt8(first), UInt8(second), third]
                    if !Self.agrees(bytes) { mismatches += 1 }
                    guard first >= 0xF0 else { continue }
                    for fourth: UInt8 in [0x80, 0xC0] where !Self.agrees(bytes + [fourth]) { mismatches += 1 }
                }
            }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let bytes = (0..<Int.random(in: 0...12, using: &generator)).map { _ in
                Bool.random(using: &generator) ? UInt8.random(in: 0x80...0xF5, using: &generator) : UInt8(ascii: "a")
            }
            if !Self.agrees(bytes) { mismatches += 1 }
        }
        #expect(mismatches == 0)
    }
}
