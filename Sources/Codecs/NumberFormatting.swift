/// Shortest decimal spelling of a floating-point value, shared by the float codecs and the JSON writer.
enum NumberFormatting {
    /// Swift's `description` is already the shortest text that reads back to the same value; this only
    /// drops the needless ".0" of integral values (1000 rather than 1000.0) and spells integral values below
    /// 10^15 in plain digits. Non-finite values come out as "nan", "inf", "-inf".
    static func shortest<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F) -> String {
        if value.isFinite, value == value.rounded(.towardZero), abs(value) < 1e15 {
            let integer = Int64(value)
            if integer == 0, value.sign == .minus { return "-0" }
            return String(integer)
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text
    }
}
