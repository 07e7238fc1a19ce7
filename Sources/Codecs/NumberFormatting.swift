/// Shortest decimal spelling of a floating-point value, shared by the float codecs and the JSON writer.
enum NumberFormatting {
    /// Swift's `description` is already the shortest text that reads back to the same value; this only
    /// drops the needless ".0" of integral values (1000 rather than 1000.0) and spells integral values below
    /// 10^15 in plain digits. Non-finite values come out as "nan", "inf", "-inf".
    static func shortest<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F) -> String {
        if let integral = integralText(value) { return integral }
        return described(value)
    }

    /// The same text for a double, made without `description` when the value has a short plain decimal spelling
    /// (`plainDecimal`): a broadcast's readings are such values, and `description`'s shortest-digits search kept the
    /// standard library's code for it resident under broadcasts (docs/dev/MEMORY.md).
    static func shortest(_ value: Double) -> String {
        if let integral = integralText(value) { return integral }
        return plainDecimal(value) ?? described(value)
    }

    private static func integralText<F: BinaryFloatingPoint>(_ value: F) -> String? {
        guard value.isFinite, value == value.rounded(.towardZero), abs(value) < 1e15 else { return nil }
        let integer = Int64(value)
        if integer == 0, value.sign == .minus { return "-0" }
        return String(integer)
    }

    private static func described<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F) -> String {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text
    }

    /// A non-integral value from 0.001 to 10¹⁵ that some decimal q / 10ⁿ of at most 15 significant digits reads
    /// back to: that decimal, in plain digits. It is then the only such decimal (two different decimals of 15 digits
    /// or fewer never read back to the same double), so it is `description`'s shortest one, and `description` spells
    /// values of that range without an exponent. Nil otherwise (the caller asks `description`).
    static func plainDecimal(_ value: Double) -> String? {
        let magnitude = value.magnitude
        guard magnitude >= 0.001, magnitude < 1e15 else { return nil }
        var scale: Double = 1
        for places in 1...15 {
            scale *= 10
            let scaled = magnitude * scale
            guard scaled < 1e15 else { return nil }
            // Rounded to the nearest integer; one off (the product rounds) only fails the check below.
            let digits = UInt64(scaled + 0.5)
            // Both exact, so the quotient is the double nearest digits / 10ⁿ: it reads back to the value.
            guard Double(digits) / scale == magnitude else { continue }
            return spell(digits, places: places, negative: value < 0)
        }
        return nil
    }

    /// `digits` / 10^`places` in plain decimal digits, trailing zeros of the fraction dropped.
    private static func spell(_ digits: UInt64, places: Int, negative: Bool) -> String {
        var reversed: [UInt8] = []
        var rest = digits
        while rest > 0 || reversed.count <= places {
            reversed.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        }
        var fraction = reversed.prefix(places)
        while fraction.first == UInt8(ascii: "0") { fraction = fraction.dropFirst() }
        var text: [UInt8] = negative ? [UInt8(ascii: "-")] : []
        text += reversed.dropFirst(places).reversed()
        if !fraction.isEmpty { text += [UInt8(ascii: ".")] + fraction.reversed() }
        return String(decoding: text, as: UTF8.self)
    }
}
