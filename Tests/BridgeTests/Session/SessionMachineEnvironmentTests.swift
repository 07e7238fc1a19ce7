import Testing
@testable import BridgeSession

/// Adapter, bluetoothd and link changes around a session.
@Suite struct SessionMachineEnvironmentTests {
    @Test func adapterOffWhileOnlineAndBack() {
        var h = SessionHarness()
        h.toOnline()
        #expect(h.send(.adapterAvailable(powered: false)) == [
            .stopPolling, .emitEvent(.disconnected(reason: "adapter powered off")), .publishAvailability(false),
        ])
        #expect(h.state == .waitingForAdapter)
        #expect(h.machine.attempt == 0)
        // The device object outlives a power cycle: reconnect without discovery.
        let back = h.send(.adapterAvailable(powered: true))
        #expect(back == [.requestConnectSlot(h.generation)])
        #expect(h.state == .waitingForSlot)
    }

    @Test func adapterOffWhileConnectingReleasesTheSlot() {
        var h = SessionHarness()
        h.toConnecting()
        let g = h.generation
        #expect(h.send(.adapterAvailable(powered: false)) == [.releaseConnectSlot(g)])
        #expect(h.state == .waitingForAdapter)
        #expect(h.send(.connectSucceeded(g)) == [])     // stale, and the adapter is off anyway
        #expect(h.send(.failure(.connectAbortedLocally, g)) == [])
    }

    @Test func adapterOffDuringBackoffCancelsTheTimer() {
        var h = SessionHarness()
        h.toConnecting()
        h.send(.failure(.inProgress, h.generation))
        #expect(h.send(.adapterAvailable(powered: false)) == [.cancelBackoff])
        #expect(h.state == .waitingForAdapter)
    }

    @Test func adapterRemovedForgetsTheDevice() {
        var h = SessionHarness()
        h.toResolving()
        #expect(h.send(.adapterGone) == [])
        #expect(h.state == .waitingForAdapter)
        #expect(h.send(.adapterAvailable(powered: true)) == [.startDiscovery])
    }

    @Test func adapterOffFailureWaitsForPowered() {
        var h = SessionHarness()
        h.toSubscribing()
        h.send(.failure(.adapterOff, h.generation))
        #expect(h.state == .waitingForAdapter)
        let back = h.send(.adapterAvailable(powered: true))
        #expect(back == [.requestConnectSlot(h.generation)])
    }

    @Test func bluezGoneAndBackResyncs() {
        var h = SessionHarness()
        h.toOnline()
        #expect(h.send(.bluezGone) == [
            .stopPolling, .emitEvent(.disconnected(reason: "bluetoothd gone")), .publishAvailability(false),
        ])
        #expect(h.state == .waitingForAdapter)
        #expect(!h.machine.bluezPresent && !h.machine.deviceKnown && !h.machine.linkUp)
        #expect(h.send(.bluezAvailable) == [])
        #expect(h.state == .waitingForAdapter)
        // The orchestrator's resync re-reports the adapter, then the device object.
        #expect(h.send(.adapterAvailable(powered: true)) == [.startDiscovery])
        let found = h.send(.deviceFound)
        #expect(found == [.stopDiscovery, .requestConnectSlot(h.generation)])
        h.send(.connectSlotGranted(h.generation))
        h.send(.connectSucceeded(h.generation))
        h.send(.servicesResolved(h.generation))
        #expect(h.send(.subscribed(h.generation)).first == .publishAvailability(true))
    }

    @Test func bluezGoneFailureWaitsEvenIfAdapterIsReportedLater() {
        var h = SessionHarness()
        h.toConnecting()
        h.send(.failure(.bluezGone, h.generation))
        #expect(h.state == .waitingForAdapter)
        #expect(!h.machine.bluezPresent)
        #expect(h.send(.bluezAvailable) == [])
        #expect(h.send(.adapterAvailable(powered: true)) == [.startDiscovery])
    }

    @Test func linkLossWhileOnlineGoesOfflineBacksOffAndReconnects() {
        var h = SessionHarness()
        h.toOnline()
        h.advance(.seconds(5))
        let g = h.generation
        #expect(h.send(.disconnected) == [
            .stopPolling, .emitEvent(.disconnected(reason: "link lost")), .publishAvailability(false),
            .emitEvent(.reconnectAttempt(attempt: 1, delay: .seconds(1))), .scheduleBackoff(.seconds(1), g + 1),
        ])
        #expect(h.state == .backoff(.retryConnect))
        #expect(!h.machine.linkUp)
        h.reconnect()
        #expect(h.state == .online)
        #expect(h.machine.availability.published == true)
    }

    @Test func flappingLinkBacksOffLongerUntilTheConnectionIsStable() {
        var h = SessionHarness()
        h.toOnline()
        func dropAfter(_ online: Duration, _ h: inout SessionHarness) -> Duration? {
            h.advance(online)
            for case .scheduleBackoff(let delay, _) in h.send(.disconnected) { return delay }
            return nil
        }
        #expect(dropAfter(.seconds(2), &h) == .seconds(1))
        h.reconnect()
        #expect(dropAfter(.seconds(2), &h) == .seconds(2))
        h.reconnect()
        #expect(dropAfter(.seconds(2), &h) == .seconds(4))
        h.reconnect()
        #expect(dropAfter(.seconds(30), &h) == .seconds(1))   // stable: counting starts over
    }

    @Test func disconnectWhileResolvingIsALinkLoss() {
        var h = SessionHarness()
        h.toResolving()
        let g = h.generation
        #expect(h.send(.disconnected) == [
            .emitEvent(.error(message: "link lost")),
            .emitEvent(.reconnectAttempt(attempt: 1, delay: .seconds(1))), .scheduleBackoff(.seconds(1), g + 1),
        ])
    }

    @Test func disconnectedWhileConnectingIsLeftToTheConnectCall() {
        var h = SessionHarness()
        h.toConnecting()
        #expect(h.send(.disconnected) == [])
        #expect(h.state == .connecting)
    }
}
