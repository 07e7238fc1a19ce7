/// Conversions of `Duration` to the plain numbers C APIs, timers and messages need, in one place: a `Duration`
/// is (seconds, attoseconds), and hand-written conversions of that pair went wrong before (0.96 s printed as
/// "0.10": attoseconds are 10⁻¹⁸, not tenths). Whole-unit conversions truncate toward zero and saturate
/// instead of overflowing.
extension Duration {
    /// Seconds as a `Double`, to the nanosecond (dividing whole nanoseconds keeps 0.96 s exactly 0.96).
    public var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds / 1_000_000_000) / 1e9
    }

    /// Whole milliseconds, truncated toward zero; saturates at `Int64.min`/`Int64.max`.
    public var inMilliseconds: Int64 { whole(unitsPerSecond: 1_000, attosecondsPerUnit: 1_000_000_000_000_000) }

    /// Whole nanoseconds, truncated toward zero; saturates at `Int64.min`/`Int64.max` (±292 years).
    public var inNanoseconds: Int64 { whole(unitsPerSecond: 1_000_000_000, attosecondsPerUnit: 1_000_000_000) }

    /// Seconds for people to read, rounded to the millisecond without trailing zeros: "2", "0.96", "1.5",
    /// "0.001", "-3.25".
    public var secondsDescription: String {
        let (seconds, attoseconds) = components
        // components keep both parts of the same sign; round the magnitude half up to the millisecond.
        let negative = seconds < 0 || attoseconds < 0
        var whole = seconds.magnitude
        var millis = (attoseconds.magnitude + 500_000_000_000_000) / 1_000_000_000_000_000
        if millis == 1_000 {
            whole += 1
            millis = 0
        }
        var text = negative && (whole != 0 || millis != 0) ? "-\(whole)" : "\(whole)"
        if millis != 0 {
            var fraction = String(millis)
            fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
            while fraction.hasSuffix("0") { fraction.removeLast() }
            text += "." + fraction
        }
        return text
    }

    private func whole(unitsPerSecond: Int64, attosecondsPerUnit: Int64) -> Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: unitsPerSecond)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflowAdding) = scaled.addingReportingOverflow(attoseconds / attosecondsPerUnit)
        if overflowAdding { return seconds < 0 ? .min : .max }
        return sum
    }
}
