import Testing
@testable import BridgeSession

@Suite struct ReconnectPolicyTests {
    let policy = ReconnectPolicy.standard

    @Test func everyCategoryHasARule() {
        for category in FailureKind.Category.allCases {
            #expect(policy.rules[category] != nil, "no rule for \(category)")
        }
    }

    @Test func abortByLocalRetriesSoonAndGrowsByHalfToTenSeconds() {
        let delays = (1...9).map { policy.delay(for: .connectAbortedLocally, attempt: $0, jitter: 0) }
        #expect(delays == [500, 750, 1125, 1688, 2531, 3797, 5695, 8543, 10_000].map { Duration.milliseconds($0) })
    }

    @Test func jitterIsPlusMinusTwentyPercentAndNeverExceedsTheCap() {
        #expect(policy.delay(for: .connectAbortedLocally, attempt: 1, jitter: 1) == .milliseconds(600))
        #expect(policy.delay(for: .connectAbortedLocally, attempt: 1, jitter: -1) == .milliseconds(400))
        #expect(policy.delay(for: .connectAbortedLocally, attempt: 1, jitter: 0.5) == .milliseconds(550))
        #expect(policy.delay(for: .connectAbortedLocally, attempt: 20, jitter: 1) == .seconds(10))
        #expect(policy.delay(for: .connectAbortedLocally, attempt: 20, jitter: -1) == .seconds(8))
        // Out-of-range and NaN jitter are tamed.
        #expect(policy.delay(for: .connectAbortedLocally, attempt: 1, jitter: 7) == .milliseconds(600))
        #expect(policy.delay(for: .connectAbortedLocally, attempt: 1, jitter: .nan) == .milliseconds(500))
    }

    @Test func inProgressWaitsTwoSecondsDoublingToThirty() {
        let delays = (1...6).map { policy.delay(for: .inProgress, attempt: $0, jitter: 0) }
        #expect(delays == [2, 4, 8, 16, 30, 30].map { Duration.seconds($0) })
    }

    @Test func timeoutsDoubleToOneMinute() {
        for kind in [FailureKind.connectTimeout, .resolveTimeout] {
            let delays = (1...7).map { policy.delay(for: kind, attempt: $0, jitter: 0) }
            #expect(delays == [2, 4, 8, 16, 32, 60, 60].map { Duration.seconds($0) })
        }
    }

    @Test func deviceGoneRediscoversImmediatelyThenBacksOff() {
        #expect(policy.rule(for: .deviceGone).then == .rediscover)
        let delays = (1...4).map { policy.delay(for: .deviceGone, attempt: $0, jitter: 1) }
        #expect(delays == [.zero, .milliseconds(1200), .milliseconds(2400), .milliseconds(4800)])
    }

    @Test func linkLossReconnectsWithinASecond() {
        #expect(policy.delay(for: .linkLost, attempt: 1, jitter: 0) == .seconds(1))
        #expect(policy.rule(for: .linkLost).then == .retryConnect)
    }

    @Test func outagesWaitForEventsNotTimers() {
        #expect(policy.delay(for: .adapterOff, attempt: 1, jitter: 0) == nil)
        #expect(policy.rule(for: .adapterOff).then == .waitForAdapter)
        #expect(policy.rule(for: .adapterMissing).then == .waitForAdapter)
        #expect(policy.delay(for: .bluezGone, attempt: 3, jitter: 1) == nil)
        #expect(policy.rule(for: .bluezGone).then == .waitForBlueZ)
    }

    @Test func missingCharacteristicFlushesTheDevice() {
        #expect(policy.rule(for: .characteristicMissing("2a37")).then == .removeDeviceAndRediscover)
    }

    @Test func associatedValuesShareTheirCategoryRule() {
        #expect(policy.rule(for: .connectFailed("Host is down")) == policy.rule(for: .connectFailed("page timeout")))
        #expect(policy.delay(for: .connectFailed("Software caused connection abort"), attempt: 2, jitter: 0) == .seconds(2))
    }

    @Test func missingRuleFallsBack() {
        var custom = policy
        custom.rules[.other] = nil
        custom.fallback = RetryRule(initialDelay: .seconds(7), maxDelay: .seconds(7), jitter: 0, then: .retryConnect)
        #expect(custom.delay(for: .other("?"), attempt: 1, jitter: 1) == .seconds(7))
    }

    @Test func attemptZeroCountsAsFirst() {
        #expect(policy.delay(for: .linkLost, attempt: 0, jitter: 0) == .seconds(1))
    }
}
