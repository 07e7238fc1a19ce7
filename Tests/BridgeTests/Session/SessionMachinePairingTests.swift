import BlueZ
import Testing
@testable import BridgeSession

/// The pairing step of docs/pairing.md: before connecting, a device configured to pair that BlueZ does not list as paired is
/// paired; a refused pairing backs off slowly.
@Suite struct SessionMachinePairingTests {
    private func harness(pairing: Bool = true) -> SessionHarness {
        var h = SessionHarness()
        h.machine = SessionMachine(policy: .standard, pairing: pairing, jitter: { 0 })
        return h
    }

    @Test func anUnpairedDeviceIsPairedWhileHoldingTheSlotThenConnected() {
        var h = harness()
        h.toWaitingForSlot()
        let g = h.generation
        #expect(h.send(.connectSlotGranted(g)) == [.pair(g, timeout: .seconds(60))])
        #expect(h.state == .pairing)
        #expect(h.send(.pairSucceeded(g)) == [.connect(g, timeout: .seconds(20))])
        #expect(h.state == .connecting)
        #expect(h.machine.devicePaired)
        #expect(h.send(.connectSucceeded(g)) == [.releaseConnectSlot(g), .resolveServices(g, timeout: .seconds(30))])
    }

    @Test func aPairedDeviceConnectsAtOnce() {
        var h = harness()
        h.send(.paired(true))
        h.toWaitingForSlot()
        #expect(h.send(.connectSlotGranted(h.generation)) == [.connect(h.generation, timeout: .seconds(20))])
    }

    @Test func withoutPairingNothingChanges() {
        var h = harness(pairing: false)
        h.toWaitingForSlot()
        #expect(h.send(.connectSlotGranted(h.generation)) == [.connect(h.generation, timeout: .seconds(20))])
    }

    @Test func aRefusedPairingIsAnErrorAndBacksOffSlowlyUpToTenMinutes() {
        var h = harness()
        h.toWaitingForSlot()
        var delays: [Duration] = []
        for attempt in 1...7 {
            if attempt > 1 {
                h.send(.backoffElapsed(h.generation))
            }
            let g = h.generation
            #expect(h.send(.connectSlotGranted(g)) == [.pair(g, timeout: .seconds(60))])
            let kind = FailureKind(BlueZError.authenticationFailed, stage: .connect)
            let out = h.send(.failure(kind, g))
            #expect(out.contains(.releaseConnectSlot(g)))
            #expect(out.contains(.emitEvent(.error(message: kind.description))))
            guard case .scheduleBackoff(let delay, _)? = out.last else {
                Issue.record("attempt \(attempt): no backoff scheduled: \(out)")
                return
            }
            delays.append(delay)
        }
        #expect(delays == [.seconds(60), .seconds(120), .seconds(240), .seconds(480), .seconds(600), .seconds(600),
                           .seconds(600)])
        #expect(FailureKind(BlueZError.authenticationRejected, stage: .connect).category == .authentication)
        #expect(FailureKind(BlueZError.authenticationCanceled, stage: .connect).category == .authentication)
    }

    @Test func stopWhilePairingGivesBackTheSlotAndCutsTheLink() {
        var h = harness()
        h.toWaitingForSlot()
        let g = h.generation
        h.send(.connectSlotGranted(g))
        let out = h.send(.stop)
        #expect(out.contains(.releaseConnectSlot(g)))
        #expect(out.contains(.disconnect))
        #expect(h.state == .stopped)
        // A pairing that finished after all leaves a link nobody wants.
        #expect(h.send(.pairSucceeded(g)) == [.disconnect])
    }

    @Test func aRemovedDeviceObjectIsPairedAgain() {
        var h = harness()
        h.send(.paired(true))
        h.toOnline()
        h.send(.deviceGone)             // `unpair`, or BlueZ dropping the device: its bond is gone with it
        #expect(!h.machine.devicePaired)
        h.send(.backoffElapsed(h.generation))
        h.send(.deviceFound)
        #expect(h.send(.connectSlotGranted(h.generation)) == [.pair(h.generation, timeout: .seconds(60))])
    }

    @Test func theSlowRowIsInThePolicyTable() {
        let rule = ReconnectPolicy.standard.rule(for: .authentication("authentication failed"))
        #expect(rule.initialDelay == .seconds(60))
        #expect(rule.maxDelay == .seconds(600))
        #expect(rule.then == .retryConnect)
    }
}
