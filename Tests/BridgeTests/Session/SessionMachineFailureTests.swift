import Testing
@testable import BridgeSession

/// Every failure kind, raised while connecting and while online, leads to the table's delay and next step.
@Suite struct SessionMachineFailureTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var kind: FailureKind
        /// nil: waits for an event instead of a timer.
        var delay: Duration?
        var next: RetryRule.Next
        var testDescription: String { "\(kind.category)" }
    }

    static let cases: [Case] = [
        Case(kind: .connectAbortedLocally, delay: .milliseconds(500), next: .retryConnect),
        Case(kind: .connectFailed("br-connection-page-timeout"), delay: .seconds(1), next: .retryConnect),
        Case(kind: .inProgress, delay: .seconds(2), next: .retryConnect),
        Case(kind: .notReady, delay: .seconds(2), next: .retryConnect),
        Case(kind: .deviceGone, delay: .zero, next: .rediscover),
        Case(kind: .notConnected, delay: .seconds(1), next: .retryConnect),
        Case(kind: .connectTimeout, delay: .seconds(2), next: .rediscover),
        Case(kind: .resolveTimeout, delay: .seconds(2), next: .retryConnect),
        Case(kind: .subscribeFailed("Notify not supported"), delay: .seconds(2), next: .retryConnect),
        Case(kind: .noReply, delay: .seconds(2), next: .retryConnect),
        Case(kind: .serviceUnknown, delay: .seconds(2), next: .retryConnect),
        Case(kind: .characteristicMissing("2a37"), delay: .seconds(5), next: .removeDeviceAndRediscover),
        Case(kind: .linkLost, delay: .seconds(1), next: .retryConnect),
        Case(kind: .adapterOff, delay: nil, next: .waitForAdapter),
        Case(kind: .adapterMissing, delay: nil, next: .waitForAdapter),
        Case(kind: .bluezGone, delay: nil, next: .waitForBlueZ),
        Case(kind: .other("boom"), delay: .seconds(5), next: .retryConnect),
    ]

    @Test(arguments: cases) func whileConnecting(_ c: Case) {
        var h = SessionHarness()
        h.toConnecting()
        let g = h.generation
        let actions = h.send(.failure(c.kind, g))

        var expected: [SessionAction] = [.releaseConnectSlot(g)]
        if c.kind == .connectTimeout { expected.append(.disconnect) }
        expected.append(.emitEvent(.error(message: c.kind.description)))
        expectRetry(c, after: expected, actions, &h)
    }

    @Test(arguments: cases) func whileOnline(_ c: Case) {
        var h = SessionHarness()
        h.toOnline()
        let g = h.generation
        let actions = h.send(.failure(c.kind, g))

        var expected: [SessionAction] = [.stopPolling]
        if !c.kind.meansLinkGone { expected.append(.disconnect) }
        expected += [.emitEvent(.disconnected(reason: c.kind.description)), .publishAvailability(false)]
        expectRetry(c, after: expected, actions, &h)
    }

    /// Checks the retry part of `actions` (after the teardown `prefix`) and what the timer then does.
    private func expectRetry(_ c: Case, after prefix: [SessionAction], _ actions: [SessionAction],
                             _ h: inout SessionHarness) {
        let g = h.generation
        guard let delay = c.delay else {
            #expect(actions == prefix)
            #expect(h.state == .waitingForAdapter)
            #expect(!h.machine.adapterPowered)
            #expect(h.machine.bluezPresent == (c.next != .waitForBlueZ))
            #expect(h.send(.backoffElapsed(g)) == [])
            return
        }
        let attempt: [SessionAction] = [.emitEvent(.reconnectAttempt(attempt: 1, delay: delay))]
        if delay == .zero {
            // Immediate: the next step runs at once.
            #expect(actions == prefix + attempt + [.startDiscovery])
            #expect(h.state == .discovering)
            return
        }
        #expect(actions == prefix + attempt + [.scheduleBackoff(delay, g)])
        #expect(h.state == .backoff(c.next))
        #expect(h.machine.attempt == 1)

        let fired = h.send(.backoffElapsed(g))
        switch c.next {
        case .retryConnect:
            #expect(fired == [.requestConnectSlot(g + 1)])
            #expect(h.state == .waitingForSlot)
        case .removeDeviceAndRediscover:
            #expect(fired == [.removeDevice, .startDiscovery])
            #expect(h.state == .discovering)
        case .rediscover:
            // Through discovery, whose start tells a stuck controller from an absent device.
            #expect(fired == [.startDiscovery])
            #expect(h.state == .discovering)
        case .waitForAdapter, .waitForBlueZ:
            Issue.record("unexpected next step \(c.next)")
        }
    }

    @Test func deviceGoneTwiceBacksOffTheSecondTime() {
        var h = SessionHarness()
        h.toConnecting()
        h.send(.failure(.deviceGone, h.generation))
        #expect(h.state == .discovering)
        h.send(.deviceFound)
        h.send(.connectSlotGranted(h.generation))
        let g = h.generation
        #expect(h.send(.failure(.deviceGone, g)) == [
            .releaseConnectSlot(g), .emitEvent(.error(message: "device object is gone")),
            .emitEvent(.reconnectAttempt(attempt: 2, delay: .seconds(1))), .scheduleBackoff(.seconds(1), g + 1),
        ])
        #expect(h.state == .backoff(.rediscover))
        #expect(!h.machine.deviceKnown)
        // The object came back during the backoff: connect directly.
        h.send(.deviceFound)
        #expect(h.send(.backoffElapsed(g + 1)) == [.requestConnectSlot(g + 2)])
    }

    @Test func deviceObjectRemovedWhileConnectingCountsAsDeviceGone() {
        var h = SessionHarness()
        h.toConnecting()
        let g = h.generation
        #expect(h.send(.deviceGone) == [
            .releaseConnectSlot(g), .emitEvent(.error(message: "device object is gone")),
            .emitEvent(.reconnectAttempt(attempt: 1, delay: .zero)), .startDiscovery,
        ])
    }

    @Test func repeatedFailuresGrowTheDelayUpToTheCap() {
        var h = SessionHarness()
        h.toConnecting()
        var delays: [Duration] = []
        for _ in 0..<8 {
            let actions = h.send(.failure(.connectTimeout, h.generation))
            for case .scheduleBackoff(let delay, _) in actions { delays.append(delay) }
            h.send(.backoffElapsed(h.generation))
            h.send(.connectSlotGranted(h.generation))
        }
        #expect(delays == [2, 4, 8, 16, 32, 60, 60, 60].map { Duration.seconds($0) })
        #expect(h.machine.attempt == 8)
    }

    @Test func jitterIsAppliedToScheduledDelays() {
        var h = SessionHarness(jitter: -1)
        h.toConnecting()
        let actions = h.send(.failure(.connectFailed("Host is down"), h.generation))
        #expect(actions.contains(.scheduleBackoff(.milliseconds(800), h.generation)))
    }
}
