/// A duration given in seconds, as users write one: config durations (`interval`, `command_ttl`, `flush_after`) and
/// the command line's `--duration` and `--timeout`.
///
/// One rule for all of them, because an unchecked huge value is not just odd but fatal: `1e300` seconds overflows
/// every integer a `Duration` is converted to (milliseconds for a D-Bus timeout, nanoseconds for a sleep), and Swift
/// traps on that overflow, so `scan --duration 1e300` died with SIGILL.
public enum Seconds {
    /// 10⁹ s (about 31 years): far beyond any useful wait, and small enough that the value in nanoseconds still fits
    /// an `Int64` (9.2 × 10¹⁸) with room to add it to the current time.
    public static let maximum: Double = 1_000_000_000

    /// What a valid value is, for messages: "a number of seconds greater than 0 and at most 1000000000".
    public static let expectation = "a number of seconds greater than 0 and at most 1000000000"

    /// `value` seconds, or nil when it is not a number greater than 0 and at most `maximum`: NaN, infinities, zero,
    /// negative and too large values are all refused.
    public static func duration(_ value: Double) -> Duration? {
        guard value > 0, value <= maximum else { return nil }   // false for NaN as well
        return .seconds(value)
    }

    /// A decimal number as the config writes it (`30`, `0.5`, `1e3`; not `.inf`, `nan` or hex), then `duration`.
    public static func parse(_ text: String) -> Duration? {
        guard IntegerSyntax.isDecimal(text) || IntegerSyntax.isFloat(text), let value = Double(text) else { return nil }
        return duration(value)
    }
}
