import Glibc

/// Rounding as Python's `round(x, n)` does it, which the reference parsers apply to every scaled reading: the exact
/// binary value rounded half-to-even at the n-th decimal, read back as the nearest double. `(x * 10^n).rounded() /
/// 10^n` differs from it in the last digit for some inputs (the multiplication itself rounds), so the rounding is done
/// on the exact value in integers (`exactly`), and the C library's correctly rounded decimal conversion is the
/// fallback for the values integers cannot hold.
enum DecimalRounding {
    static func round(_ value: Double, places: Int) -> Double {
        guard value.isFinite else { return value }
        if places <= 0 {
            let scale = powerOfTen(-places)
            return (value / scale).rounded(.toNearestOrEven) * scale
        }
        if let rounded = exactly(value, places: places) { return rounded }
        return viaDecimalText(value, places: places)
    }

    /// `vsnprintf("%.*f")`, then `strtod`: correctly rounded both ways in glibc.
    static func viaDecimalText(_ value: Double, places: Int) -> Double {
        var buffer = [CChar](repeating: 0, count: 400)
        let written = buffer.withUnsafeMutableBufferPointer { out in
            withVaList([Int32(places), value]) { vsnprintf(out.baseAddress, out.count, "%.*f", $0) }
        }
        guard written > 0, written < Int32(buffer.count) else { return value }
        return buffer.withUnsafeBufferPointer { strtod($0.baseAddress!, nil) }
    }

    /// The same rounding without formatting a decimal string: a double is m·2^e exactly, so m·10ⁿ·2^e, shifted
    /// right by -e with ties to even, is the exact value rounded at the n-th decimal, q; and q / 10ⁿ as one IEEE
    /// division of two exactly held doubles is the double nearest that decimal, which is what `strtod` returns.
    /// Nil where that does not hold (more than 15 places, q of 2⁵³ or more): those take the C library's way. This
    /// runs for every reading of every broadcast, and `vsnprintf`, `strtod` and the standard library's
    /// variadic-argument list kept their code resident under broadcasts (docs/dev/MEMORY.md).
    static func exactly(_ value: Double, places: Int) -> Double? {
        guard places >= 1, places <= 15 else { return nil }
        let magnitude = value.magnitude
        guard magnitude != 0 else { return value }
        let exponent = magnitude.isNormal ? magnitude.exponent : Double.leastNormalMagnitude.exponent
        // value = significand · 2^-shift.
        let shift = Double.significandBitCount - Int(exponent)
        let significand = UInt128(magnitude.significandBitPattern)
            | (magnitude.isNormal ? UInt128(1) << Double.significandBitCount : 0)
        // An integer (every double from 2^52 on is one) is its own rounding, at any number of places. Tested on the
        // bits: `rounded(.towardZero)` is a call into libm on x86-64 without SSE4.1.
        if shift <= 0 || (shift <= Double.significandBitCount && significand & ((UInt128(1) << shift) - 1) == 0) {
            return value
        }
        var scale: UInt128 = 1
        for _ in 0..<places { scale *= 10 }
        let scaled = significand * scale
        let quotient: UInt128
        if shift >= 127 {
            // A value below 2⁻⁷⁴: even times 10¹⁵ far under half of the last decimal place.
            quotient = 0
        } else {
            let truncated = scaled >> shift
            let remainder = scaled - (truncated << shift)
            let half = UInt128(1) << (shift - 1)
            quotient = remainder > half || (remainder == half && truncated & 1 == 1) ? truncated + 1 : truncated
        }
        guard quotient < 1 << 53 else { return nil }
        let rounded = Double(UInt64(quotient)) / powerOfTen(places)
        return value < 0 ? -rounded : rounded
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
