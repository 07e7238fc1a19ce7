import Testing
@testable import BridgeFeatures

@Suite struct ReportRateLimiterTests {
    @Test func admitsTenPerSecondAndSumsUpTheRest() {
        var limiter = ReportRateLimiter(limit: 10, window: .seconds(1))
        let t0 = ContinuousClock.now
        for _ in 0..<10 { #expect(limiter.admit(now: t0) == .publish) }
        #expect(limiter.admit(now: t0) == .suppress(firstInWindow: true))
        for _ in 0..<4 { #expect(limiter.admit(now: t0 + .milliseconds(500)) == .suppress(firstInWindow: false)) }
        #expect(limiter.summary(now: t0 + .milliseconds(999)) == nil, "not before the window is over")
        #expect(limiter.summary(now: t0 + .seconds(1)) == 5)
        #expect(limiter.summary(now: t0 + .seconds(2)) == nil, "reported once")
        #expect(limiter.admit(now: t0 + .seconds(1)) == .publish, "a new window")
    }
}
