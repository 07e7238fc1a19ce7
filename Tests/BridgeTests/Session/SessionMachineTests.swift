import Testing
@testable import BridgeSession

@Suite struct SessionMachineTests {
    @Test func happyPathFromUnknownDevice() {
        var h = SessionHarness()
        #expect(h.send(.adapterAvailable(powered: true)) == [])
        #expect(h.state == .stopped)

        #expect(h.send(.start) == [.publishAvailability(false), .startDiscovery])
        #expect(h.state == .discovering)

        let g = h.generation + 1
        #expect(h.send(.deviceFound) == [.stopDiscovery, .requestConnectSlot(g)])
        #expect(h.state == .waitingForSlot)
        #expect(h.send(.connectSlotGranted(g)) == [.connect(g, timeout: .seconds(20))])
        #expect(h.state == .connecting)
        #expect(h.send(.connected) == [])
        #expect(h.send(.connectSucceeded(g)) == [.releaseConnectSlot(g), .resolveServices(g, timeout: .seconds(30))])
        #expect(h.state == .resolvingServices)
        #expect(h.send(.servicesResolved(g)) == [.subscribeChannels(g)])
        #expect(h.state == .subscribing)
        #expect(h.send(.subscribed(g)) == [
            .publishAvailability(true), .emitEvent(.connected), .readChannelsOnce, .startPolling, .flushPendingCommands,
        ])
        #expect(h.machine.isOnline)
        #expect(h.generation == g)
    }

    @Test func startWaitsForTheAdapter() {
        var h = SessionHarness()
        #expect(h.send(.start) == [.publishAvailability(false)])
        #expect(h.state == .waitingForAdapter)
        #expect(h.send(.adapterAvailable(powered: false)) == [])
        #expect(h.state == .waitingForAdapter)
        #expect(h.send(.adapterAvailable(powered: true)) == [.startDiscovery])
        #expect(h.state == .discovering)
    }

    @Test func knownDeviceSkipsDiscovery() {
        var h = SessionHarness()
        h.send(.adapterAvailable(powered: true))
        h.send(.deviceFound)
        let started = h.send(.start)
        #expect(started == [.publishAvailability(false), .requestConnectSlot(h.generation)])
        #expect(h.state == .waitingForSlot)
    }

    @Test func deviceThatVanishesWhileQueuedIsRediscoveredWithoutHoldingTheSlot() {
        var h = SessionHarness()
        h.toWaitingForSlot()
        let g = h.generation
        #expect(h.send(.deviceGone) == [.releaseConnectSlot(g), .startDiscovery])
        #expect(h.state == .discovering)
    }

    @Test func startTwiceAndIrrelevantEventsChangeNothing() {
        var h = SessionHarness()
        h.toOnline()
        let g = h.generation
        #expect(h.send(.start) == [])
        #expect(h.send(.connected) == [])
        #expect(h.send(.deviceFound) == [])
        #expect(h.send(.bluezAvailable) == [])
        #expect(h.send(.adapterAvailable(powered: true)) == [])
        #expect(h.send(.servicesResolved(g)) == [])
        #expect(h.send(.subscribed(g)) == [])
        #expect(h.send(.connectSucceeded(g)) == [])
        #expect(h.send(.backoffElapsed(g)) == [])
        #expect(h.state == .online)
        #expect(h.generation == g)
    }

    // MARK: - Stale results

    @Test func lateConnectSuccessAfterTimeoutIsDisconnected() {
        var h = SessionHarness()
        h.toConnecting()
        let g = h.generation
        let actions = h.send(.failure(.connectTimeout, g))
        #expect(actions == [
            .releaseConnectSlot(g), .disconnect,
            .emitEvent(.error(message: "connection timed out")),
            .emitEvent(.reconnectAttempt(attempt: 1, delay: .seconds(2))),
            .scheduleBackoff(.seconds(2), g + 1),
        ])
        #expect(h.state == .backoff(.rediscover))
        #expect(h.send(.connectSucceeded(g)) == [.disconnect])
        #expect(h.state == .backoff(.rediscover))
        #expect(h.send(.servicesResolved(g)) == [])
        #expect(h.send(.failure(.linkLost, g)) == [])
        #expect(h.state == .backoff(.rediscover))
    }

    @Test func lateGrantIsGivenBack() {
        var h = SessionHarness()
        h.toWaitingForSlot()
        let old = h.generation
        h.send(.deviceGone)            // withdraws `old`, rediscovers
        h.send(.deviceFound)           // queues again under a new generation
        let current = h.generation
        #expect(current != old)
        #expect(h.send(.connectSlotGranted(old)) == [.releaseConnectSlot(old)])
        #expect(h.state == .waitingForSlot)
        #expect(h.send(.connectSlotGranted(current)) == [.connect(current, timeout: .seconds(20))])
        // A duplicate grant of the slot we hold must not release it.
        #expect(h.send(.connectSlotGranted(current)) == [])
        #expect(h.state == .connecting)
    }

    @Test func grantAfterStopIsGivenBackAndSuccessAfterStopDisconnects() {
        var h = SessionHarness()
        h.toWaitingForSlot()
        let g = h.generation
        #expect(h.send(.stop) == [.releaseConnectSlot(g)])
        #expect(h.send(.connectSlotGranted(g)) == [.releaseConnectSlot(g)])
        #expect(h.send(.connectSucceeded(g)) == [.disconnect])
        #expect(h.state == .stopped)
    }

    @Test func staleBackoffTimerIsIgnored() {
        var h = SessionHarness()
        h.toConnecting()
        h.send(.failure(.inProgress, h.generation))
        let timer = h.generation
        h.send(.stop)
        h.send(.start)
        #expect(h.state == .waitingForSlot)
        #expect(h.send(.backoffElapsed(timer)) == [])
        #expect(h.state == .waitingForSlot)
    }

    @Test func failuresAreIgnoredWhereNothingIsInFlight() {
        var h = SessionHarness()
        #expect(h.send(.failure(.linkLost, h.generation)) == [])
        h.send(.start)
        #expect(h.send(.failure(.linkLost, h.generation)) == [])
        #expect(h.state == .waitingForAdapter)
    }

    @Test func discoveryFailureBacksOffAndDiscoversAgain() {
        var h = SessionHarness()
        h.send(.adapterAvailable(powered: true))
        h.send(.start)
        let g = h.generation
        #expect(h.send(.failure(.notReady, g)) == [
            .stopDiscovery, .emitEvent(.error(message: "adapter not ready")),
            .emitEvent(.reconnectAttempt(attempt: 1, delay: .seconds(2))), .scheduleBackoff(.seconds(2), g + 1),
        ])
        #expect(h.send(.backoffElapsed(g + 1)) == [.startDiscovery])
    }
}
