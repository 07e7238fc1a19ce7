import Testing
@testable import BridgeSession

@Suite struct AvailabilityTrackerTests {
    @Test func publishesFirstValueAndChangesOnly() {
        var tracker = AvailabilityTracker()
        #expect(tracker.published == nil)
        #expect(tracker.update(false) == false)
        #expect(tracker.update(false) == nil)
        #expect(tracker.update(true) == true)
        #expect(tracker.update(true) == nil)
        #expect(tracker.update(false) == false)
        #expect(tracker.published == false)
    }
}
