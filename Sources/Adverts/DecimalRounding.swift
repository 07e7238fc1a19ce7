import Glibc

/// Rounding as Python's `round(x, n)` does it, which the reference parsers apply to every scaled reading: the exact
/// binary value rounded half-to-even at the n-th decimal, read back as the nearest double. `(x * 10^n).rounded() /
/// 10^n` differs from it in the last digit for some inputs (the multiplication itself rounds), so this goes through
/// the C library's correctly rounded decimal conversion instead.
enum DecimalRounding {
    static func round(_ value: Double, places: Int) -> Double {
        guard value.isFinite else { return value }
        if places <= 0 {
            let scale = powerOfTen(-places)
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
    /// (0.01 → 2, 0.35 → 1, 1 → 0), that is the largest n with 10ⁿ ≤ factor, for factors from 10⁻²² to 10²³ (the
    /// formats' are 10⁻⁶ to 1; beyond, the range's end). Compared with the table rather than through `log10` and
    /// `pow`: this runs for every reading of every broadcast, and libm's code and tables for those two functions
    /// were 0.3 MB of the daemon's resident set under broadcasts (docs/dev/MEMORY.md).
    static func places(of factor: Double) -> Int {
        guard factor > 0, factor.isFinite else { return 0 }
        var exponent = -exponentRange
        while exponent < exponentRange, powerOfTen(exponent + 1) <= factor { exponent += 1 }
        return -exponent
    }

    private static let exponentRange = 22

    private static let powersOfTen: [Double] = [
        1e-22, 1e-21, 1e-20, 1e-19, 1e-18, 1e-17, 1e-16, 1e-15, 1e-14, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7,
        1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
        1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// 10ⁿ for |n| ≤ 22 as the compiler spells the literals: correctly rounded, as `pow(10, n)` returns them (the
    /// positive ones are exact). Beyond the range, the range's end.
    private static func powerOfTen(_ n: Int) -> Double {
        powersOfTen[min(max(n, -exponentRange), exponentRange) + exponentRange]
    }

    /// A raw integer times a factor, rounded as the reference does; integral factors keep an integer value.
    static func scaled(_ raw: Int64, factor: Double) -> MeasurementValue {
        if factor == 1 { return .integer(raw) }
        return .number(round(Double(raw) * factor, places: places(of: factor)))
    }
}
