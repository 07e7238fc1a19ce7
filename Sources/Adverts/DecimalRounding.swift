import Glibc

/// Rounding as Python's `round(x, n)` does it, which the reference parsers apply to every scaled reading: the exact
/// binary value rounded half-to-even at the n-th decimal, read back as the nearest double. `(x * 10^n).rounded() /
/// 10^n` differs from it in the last digit for some inputs (the multiplication itself rounds), so this goes through
/// the C library's correctly rounded decimal conversion instead.
enum DecimalRounding {
    static func round(_ value: Double, places: Int) -> Double {
        guard value.isFinite else { return value }
        if places <= 0 {
            let scale = pow(10.0, Double(-places))
            return (value / scale).rounded(.toNearestOrEven) * scale
        }
        var buffer = [CChar](repeating: 0, count: 400)
        let written = buffer.withUnsafeMutableBufferPointer { out in
            withVaList([Int32(places), value]) { vsnprintf(out.baseAddress, out.count, "%.*f", $0) }
        }
        guard written > 0, written < Int32(buffer.count) else { return value }
        return buffer.withUnsafeBufferPointer { strtod($0.baseAddress!, nil) }
    }

    /// The decimal places Python's reference parsers derive from a factor: `-exponent` of its scientific spelling
    /// (0.01 → 2, 0.35 → 1, 1 → 0).
    static func places(of factor: Double) -> Int {
        guard factor > 0, factor.isFinite else { return 0 }
        var exponent = Int(log10(factor).rounded(.down))
        // log10 of an exact power of ten may land just below the integer.
        if pow(10.0, Double(exponent + 1)) <= factor { exponent += 1 }
        return -exponent
    }

    /// A raw integer times a factor, rounded as the reference does; integral factors keep an integer value.
    static func scaled(_ raw: Int64, factor: Double) -> MeasurementValue {
        if factor == 1 { return .integer(raw) }
        return .number(round(Double(raw) * factor, places: places(of: factor)))
    }
}
