import Testing
@testable import Config

/// The one rule for durations in seconds, shared by the config and the command line's `--duration`/`--timeout`.
@Suite struct SecondsTests {
    @Test(arguments: [0.001, 0.5, 1, 10, 86_400, 1e9])
    func acceptsPositiveValuesUpToTheMaximum(value: Double) {
        #expect(Seconds.duration(value) == .seconds(value))
    }

    /// `1e300` and `9.3e18` overflowed the conversion to integer milliseconds and killed the process with SIGILL.
    @Test(arguments: [0, -0.0, -1, -1e300, 1e9 + 1, 9.3e18, 1e300, .infinity, -.infinity, .nan, .signalingNaN,
                      .greatestFiniteMagnitude])
    func refusesZeroNegativeNonFiniteAndHugeValues(value: Double) {
        #expect(Seconds.duration(value) == nil)
    }

    @Test func parsesTheConfigsNumberSyntaxOnly() {
        #expect(Seconds.parse("30") == .seconds(30))
        #expect(Seconds.parse("0.25") == .seconds(0.25))
        #expect(Seconds.parse("1e3") == .seconds(1000))
        for text in ["1e300", "1e10", "0", "-5", ".inf", "nan", "NaN", "0x10", "", "ten", "1_000"] {
            #expect(Seconds.parse(text) == nil, "\(text)")
        }
    }

    /// Config durations: a huge value is an error at its position, never a crash.
    @Test func hugeConfigDurationsAreErrorsAtTheirPosition() {
        #expect(issues(channelYAML(codec: "text", "interval: 1e300", "command_ttl: 9.3e18", "flush_after: 1e9")) == [
            "config.yaml:8:19: interval in channel \"ch\" must be a number of seconds greater than 0 and at most 1000000000, got 1e300",
            "config.yaml:9:22: command_ttl in channel \"ch\" must be a number of seconds greater than 0 and at most 1000000000, got 9.3e18",
        ])
        #expect(issues("mqtt:\n  keepalive: 99999999999999999999999\n") == [
            "config.yaml:2:14: keepalive in mqtt must be an integer from 5 to 65535, got 99999999999999999999999",
        ])
    }
}
