import Testing
@testable import BridgeAdapters

@Suite struct AdapterHealthMachineTests {
    typealias Machine = AdapterHealthMachine
    let t0 = ContinuousClock.now

    func at(_ seconds: Int) -> ContinuousClock.Instant { t0 + .seconds(seconds) }

    /// A machine whose device is missing and whose operations failed from t0 on.
    func failing() -> Machine {
        var machine = Machine()
        _ = machine.handle(.deviceMissing(true), now: at(0))
        _ = machine.handle(.operationFailed("Connect: InProgress"), now: at(0))
        return machine
    }

    @Test func failuresShorterThanTheWindowOnlyArmAWakeUp() {
        var machine = Machine()
        _ = machine.handle(.deviceMissing(true), now: at(0))
        #expect(machine.handle(.operationFailed("x"), now: at(0)) == [.changed, .wake(at: at(60))])
        #expect(machine.handle(.operationFailed("x"), now: at(30)) == [.wake(at: at(60))])
        #expect(machine.state == .ok)
    }

    @Test func sixtySecondsOfFailuresWithADeviceMissingStartTheLadder() {
        var machine = failing()
        #expect(machine.handle(.tick, now: at(60)) == [.changed, .run(.restartDiscovery)])
        #expect(machine.state == .recovering)
        #expect(machine.recoveries == 1)
    }

    @Test func noWedgeWhileEveryDeviceIsOnline() {
        var machine = Machine()
        _ = machine.handle(.deviceMissing(false), now: at(0))
        _ = machine.handle(.operationFailed("x"), now: at(0))
        #expect(machine.handle(.tick, now: at(300)) == [])
        #expect(machine.state == .ok)
    }

    @Test func aSuccessResetsTheWindow() {
        var machine = failing()
        _ = machine.handle(.operationSucceeded, now: at(50))
        #expect(machine.handle(.tick, now: at(60)) == [])
        #expect(machine.handle(.operationFailed("y"), now: at(70)) == [.changed, .wake(at: at(130))])
    }

    @Test func aFailedDiscoveryRestartGoesStraightToAPowerCycle() {
        var machine = failing()
        _ = machine.handle(.tick, now: at(60))
        let actions = machine.handle(.stepFinished(.restartDiscovery, ok: false, error: "InProgress"), now: at(61))
        #expect(actions == [.announce(.restartDiscovery, ok: false), .changed, .changed, .run(.powerCycle)])
        #expect(machine.lastError == "InProgress")
    }

    @Test func aWorkingPowerCycleEndsInOkOnceAnOperationSucceeds() {
        var machine = failing()
        _ = machine.handle(.tick, now: at(60))
        _ = machine.handle(.stepFinished(.restartDiscovery, ok: false, error: nil), now: at(61))
        #expect(machine.handle(.stepFinished(.powerCycle, ok: true, error: nil), now: at(63))
                == [.announce(.powerCycle, ok: true)])
        #expect(machine.state == .recovering)
        #expect(machine.handle(.operationSucceeded, now: at(65)) == [.changed])
        #expect(machine.state == .ok)
        // A later wedge starts from the first step again.
        _ = machine.handle(.operationFailed("z"), now: at(100))
        #expect(machine.handle(.tick, now: at(160)).contains(.run(.restartDiscovery)))
        #expect(machine.recoveries == 2)
    }

    @Test func stillWedgedAfterEveryStepMeansFailedWithBackoffUpToTenMinutes() {
        var machine = failing()
        _ = machine.handle(.tick, now: at(60))
        _ = machine.handle(.stepFinished(.restartDiscovery, ok: true, error: nil), now: at(61))
        _ = machine.handle(.operationFailed("x"), now: at(62))
        #expect(machine.handle(.tick, now: at(122)) == [.changed, .run(.powerCycle)])
        _ = machine.handle(.stepFinished(.powerCycle, ok: true, error: nil), now: at(125))
        _ = machine.handle(.operationFailed("x"), now: at(126))
        #expect(machine.handle(.tick, now: at(186)) == [.changed, .wake(at: at(216))])
        #expect(machine.state == .failed)
        // The backoff ends: the ladder runs again from the start, and each failure doubles the wait, capped.
        var retry = at(216)
        var delays: [Int] = []
        for _ in 0..<7 {
            #expect(machine.handle(.tick, now: retry) == [.changed, .run(.restartDiscovery)])
            _ = machine.handle(.stepFinished(.restartDiscovery, ok: false, error: nil), now: retry)
            let actions = machine.handle(.stepFinished(.powerCycle, ok: false, error: "Powered: NotReady"), now: retry)
            guard case .wake(let next)? = actions.last else { Issue.record("no wake-up in \(actions)"); return }
            delays.append(Int((next - retry).components.seconds))
            retry = next
        }
        #expect(delays == [60, 120, 240, 480, 600, 600, 600])
        #expect(machine.state == .failed)
        #expect(machine.handle(.operationSucceeded, now: retry) == [.changed])
        #expect(machine.state == .ok)
    }

    /// After a discovery restart that answered, a recovering adapter gets no operation to prove it either way (its
    /// `any` devices went elsewhere, and it runs no discovery for others): a window later it is re-checked.
    @Test func aRestartThatAnsweredIsRecheckedAWindowLater() {
        var stillMissing = failing()
        _ = stillMissing.handle(.tick, now: at(60))
        #expect(stillMissing.handle(.stepFinished(.restartDiscovery, ok: true, error: nil), now: at(61))
                == [.announce(.restartDiscovery, ok: true), .wake(at: at(121))])
        #expect(stillMissing.handle(.tick, now: at(121)) == [.changed, .run(.powerCycle)])

        var movedAway = failing()
        _ = movedAway.handle(.tick, now: at(60))
        _ = movedAway.handle(.stepFinished(.restartDiscovery, ok: true, error: nil), now: at(61))
        _ = movedAway.handle(.deviceMissing(false), now: at(70))
        #expect(movedAway.state == .recovering)
        #expect(movedAway.handle(.tick, now: at(121)) == [.changed])
        #expect(movedAway.state == .ok)
        #expect(movedAway.recoveries == 1)
    }

    @Test func aStepResultAfterTheAdapterRecoveredOnItsOwnChangesNothing() {
        var machine = failing()
        _ = machine.handle(.tick, now: at(60))
        _ = machine.handle(.operationSucceeded, now: at(61))
        #expect(machine.handle(.stepFinished(.restartDiscovery, ok: false, error: nil), now: at(62))
                == [.announce(.restartDiscovery, ok: false)])
        #expect(machine.state == .ok)
    }
}
