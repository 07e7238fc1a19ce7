import Durations
import Testing

@Suite struct DurationUnitsTests {
    @Test func secondsDescriptionKeepsWhatTheDurationSays() {
        #expect(Duration.milliseconds(960).secondsDescription == "0.96")
        #expect(Duration.seconds(2).secondsDescription == "2")
        #expect(Duration.milliseconds(1_500).secondsDescription == "1.5")
        #expect(Duration.milliseconds(1).secondsDescription == "0.001")
        #expect(Duration.microseconds(999_600).secondsDescription == "1", "rounds to the millisecond")
        #expect(Duration.milliseconds(-3_250).secondsDescription == "-3.25")
        #expect(Duration.zero.secondsDescription == "0")
    }

    @Test func wholeUnitsTruncateAndSaturate() {
        #expect(Duration.milliseconds(960).inMilliseconds == 960)
        #expect(Duration.microseconds(1_999).inMilliseconds == 1)
        #expect(Duration.seconds(3).inNanoseconds == 3_000_000_000)
        #expect(Duration.nanoseconds(-1_500_000).inMilliseconds == -1)
        #expect(Duration.seconds(Int64.max / 10).inMilliseconds == .max)
        #expect(Duration.seconds(Int64.min / 10).inNanoseconds == .min)
    }

    @Test func inSecondsIsExactForMilliseconds() {
        #expect(Duration.milliseconds(960).inSeconds == 0.96)
        #expect(Duration.seconds(90).inSeconds == 90)
    }
}
