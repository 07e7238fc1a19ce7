import Testing
@testable import Bridge

/// When the daemon trims: once after start-up (every device online, or the fallback), then once after each burst of
/// changes has gone quiet, never closer together than the spacing.
@Suite struct PageTrimScheduleTests {
    private let t0 = ContinuousClock.now
    private let timing = PageTrimSchedule.Timing(settle: .seconds(5), fallback: .seconds(60), quiet: .seconds(30),
                                                 spacing: .seconds(60))

    private func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int64(seconds * 1000)) }

    /// A schedule whose start-up trim came at `seconds` (every device online 5 s before).
    private func trimmedAt(_ seconds: Double) -> PageTrimSchedule {
        var schedule = PageTrimSchedule(timing: timing, start: t0)
        schedule.handle(.allOnline, now: at(seconds - 5))
        _ = schedule.due(now: at(seconds))
        return schedule
    }

    @Test func startUpTrimComesSettleAfterEveryDeviceIsOnline() {
        var schedule = PageTrimSchedule(timing: timing, start: t0)
        #expect(schedule.deadline == at(65))
        schedule.handle(.allOnline, now: at(3))
        #expect(schedule.deadline == at(8))
        #expect(schedule.due(now: at(7.9)) == nil)
        #expect(schedule.due(now: at(8)) == .startup)
        #expect(schedule.deadline == nil)
        #expect(schedule.due(now: at(100)) == nil)
    }

    @Test func onlyTheFirstAllOnlineCountsAtStartUp() {
        var schedule = PageTrimSchedule(timing: timing, start: t0)
        schedule.handle(.allOnline, now: at(3))
        schedule.handle(.allOnline, now: at(6))     // a later status refresh does not postpone it
        #expect(schedule.deadline == at(8))
    }

    @Test func startUpTrimFallsBackWhenDevicesNeverAllComeOnline() {
        var schedule = PageTrimSchedule(timing: timing, start: t0)
        schedule.handle(.changed, now: at(10))      // start-up's own changes wait for the start-up trim
        #expect(schedule.deadline == at(65))
        #expect(schedule.due(now: at(64)) == nil)
        #expect(schedule.due(now: at(65)) == .startup)
    }

    @Test func allOnlineAfterTheFallbackPassedTrimsAtOnceAnyway() {
        var schedule = PageTrimSchedule(timing: timing, start: t0)
        schedule.handle(.allOnline, now: at(63))
        #expect(schedule.deadline == at(65))
    }

    @Test func noChangeNoFurtherTrim() {
        var schedule = trimmedAt(10)
        schedule.handle(.allOnline, now: at(20))
        #expect(schedule.deadline == nil)
        #expect(schedule.due(now: at(1000)) == nil)
    }

    @Test func changesTrimOnceTheyHaveBeenQuiet() {
        var schedule = trimmedAt(10)
        schedule.handle(.changed, now: at(100))
        #expect(schedule.deadline == at(130))
        schedule.handle(.changed, now: at(110))     // a burst: each change pushes the trim out
        schedule.handle(.allOnline, now: at(110))
        #expect(schedule.deadline == at(140))
        #expect(schedule.due(now: at(139)) == nil)
        #expect(schedule.due(now: at(140)) == .settled)
        #expect(schedule.deadline == nil)
    }

    @Test func trimsAreSpacedEvenWhenQuietComesSooner() {
        var schedule = trimmedAt(10)
        schedule.handle(.changed, now: at(12))
        #expect(schedule.deadline == at(70))        // quiet at 42, but the last trim was at 10
        #expect(schedule.due(now: at(70)) == .settled)
        schedule.handle(.changed, now: at(71))      // a device that flaps: at most one trim per spacing
        #expect(schedule.deadline == at(130))
        #expect(schedule.due(now: at(101)) == nil)
        #expect(schedule.due(now: at(130)) == .settled)
    }

    @Test func aLateTimerTrimsOnceOnly() {
        var schedule = trimmedAt(10)
        schedule.handle(.changed, now: at(100))
        #expect(schedule.due(now: at(500)) == .settled)
        #expect(schedule.due(now: at(501)) == nil)
    }
}
