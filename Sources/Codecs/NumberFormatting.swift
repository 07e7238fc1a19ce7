/// Shortest decimal spelling of a floating-point value, shared by the float codecs and the JSON writer.
enum NumberFormatting {
    /// Swift's `description` is already the shortest text that reads back to the same value; this only
    /// drops the needless ".0" of integral values (1000 rather than 1000.0) and spells integral values below
    /// 10^15 in plain digits. Non-finite values come out as "nan", "inf", "-inf".
    static func shortest<F: BinaryFloatingPoint & LosslessStringConvertible & TextOutputStreamable>(_ value: F) -> String {
        var out = UTF8Buffer()
        write(value, to: &out)
        return out.string
    }

    /// The same text for a double, made without `description` when the value has a short plain decimal spelling
    /// (`plainDecimal`): a broadcast's readings are such values, and `description`'s shortest-digits search kept the
    /// standard library's code for it resident under broadcasts (docs/dev/MEMORY.md).
    static func shortest(_ value: Double) -> String {
        var out = UTF8Buffer()
        write(value, to: &out)
        return out.string
    }

    /// `shortest`'s text appended to `out`. Only values without a short plain spelling make a `String` (`description`).
    static func write<F: BinaryFloatingPoint & LosslessStringConvertible & TextOutputStreamable>(_ value: F, to out: inout UTF8Buffer) {
        if writeIntegral(value, to: &out) { return }
        writeDescribed(value, to: &out)
    }

    static func write(_ value: Double, to out: inout UTF8Buffer) {
        if writeIntegral(value, to: &out) { return }
        if writePlainDecimal(value, to: &out) { return }
        writeDescribed(value, to: &out)
    }

    /// A JSON number: non-finite values, which JSON cannot express, as `null`.
    static func writeJSON(_ value: Double, to out: inout UTF8Buffer) {
        if value.isFinite { write(value, to: &out) } else { out.append("null") }
    }

    private static func writeIntegral<F: BinaryFloatingPoint>(_ value: F, to out: inout UTF8Buffer) -> Bool {
        guard value.isFinite, value == value.rounded(.towardZero), abs(value) < 1e15 else { return false }
        let integer = Int64(value)
        if integer == 0, value.sign == .minus {
            out.append("-0")
        } else {
            out.append(integer: integer)
        }
        return true
    }

    /// `description`'s text without a needless ".0". A finite value is written through its `TextOutputStreamable`
    /// conformance, which hands the standard library's shortest digits to `UTF8Buffer` as ASCII bytes: the same digits
    /// as `description` (the two differ only in how a NaN is spelled), and no `String` (issue 45).
    private static func writeDescribed<F: BinaryFloatingPoint & LosslessStringConvertible & TextOutputStreamable>(_ value: F, to out: inout UTF8Buffer) {
        guard value.isFinite else {
            var text = value.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            out.append(contentsOf: text.utf8)
            return
        }
        let start = out.count
        value.write(to: &out)
        out.dropSuffix(".0", after: start)
    }

    /// A non-integral value from 0.001 to 10¹⁵ that some decimal q / 10ⁿ of at most 15 significant digits reads
    /// back to: that decimal, in plain digits. It is then the only such decimal (two different decimals of 15 digits
    /// or fewer never read back to the same double), so it is `description`'s shortest one, and `description` spells
    /// values of that range without an exponent. Nil otherwise (the caller asks `description`).
    static func plainDecimal(_ value: Double) -> String? {
        var out = UTF8Buffer()
        return writePlainDecimal(value, to: &out) ? out.string : nil
    }

    /// `plainDecimal` appended to `out`; false, with nothing written, where it is nil.
    static func writePlainDecimal(_ value: Double, to out: inout UTF8Buffer) -> Bool {
        let magnitude = value.magnitude
        guard magnitude >= 0.001, magnitude < 1e15 else { return false }
        var scale: Double = 1
        var power: UInt64 = 1
        for places in 1...15 {
            scale *= 10
            power &*= 10
            let scaled = magnitude * scale
            guard scaled < 1e15 else { return false }
            // Rounded to the nearest integer; one off (the product rounds) only fails the check below.
            let digits = UInt64(scaled + 0.5)
            // Both exact, so the quotient is the double nearest digits / 10ⁿ: it reads back to the value.
            guard Double(digits) / scale == magnitude else { continue }
            spell(digits, places: places, power: power, negative: value < 0, to: &out)
            return true
        }
        return false
    }

    /// `digits` / 10^`places` (`power` is 10^`places`) in plain decimal digits, trailing zeros of the fraction dropped.
    private static func spell(_ digits: UInt64, places: Int, power: UInt64, negative: Bool, to out: inout UTF8Buffer) {
        if negative { out.append(UInt8(ascii: "-")) }
        out.append(decimal: digits / power)
        var fraction = digits % power
        var width = places
        while width > 0, fraction % 10 == 0 {
            fraction /= 10
            width -= 1
        }
        guard width > 0 else { return }
        out.append(UInt8(ascii: "."))
        out.append(decimal: fraction, minimumDigits: width)
    }
}
