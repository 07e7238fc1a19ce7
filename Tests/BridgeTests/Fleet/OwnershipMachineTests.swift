import Testing
@testable import BridgeFleet

@Suite struct OwnershipMachineTests {
    let b = OwnerRecord(bridge: "b", rssi: -70, since: 1)

    @Test func claimsADeviceNobodyOwnsAfterListeningAndSettling() {
        var h = OwnershipHarness(id: "a")
        h.send(.brokerConnected)
        #expect(h.state == .listening)
        h.send(.sighting(-60))
        #expect(!h.isArmed(.claim))                       // nothing decided while the retained state arrives
        #expect(h.fire(.listen) == [])
        #expect(h.isArmed(.claim))
        let claim = OwnerRecord(bridge: "a", rssi: -60, since: h.unixNow)
        #expect(h.fire(.claim) == [.publishOwner(claim)])
        #expect(h.state == .claiming)
        #expect(h.send(.owner(claim)) == [])                 // our own publish coming back
        #expect(h.fire(.settle) == [.own(true)])
        #expect(h.machine.owns)
    }

    @Test func aDeviceThisBridgeNeverSawIsNotClaimed() {
        var h = OwnershipHarness(id: "a")
        h.connect(rssi: nil)
        #expect(!h.isArmed(.claim))
        #expect(h.send(.sighting(-90)) == [])
        #expect(h.isArmed(.claim))
    }

    @Test func strongerSignalsClaimSooner() {
        #expect(OwnershipMachine.claimDelay(rssi: -40) < OwnershipMachine.claimDelay(rssi: -80))
        #expect(OwnershipMachine.claimDelay(rssi: 0) == .milliseconds(500))
        #expect(OwnershipMachine.claimDelay(rssi: -127) == .seconds(4))
    }

    @Test func aLiveOwnerIsLeftAlone() {
        var h = OwnershipHarness(id: "a")
        h.connect(record: b, rssi: -65)
        #expect(h.state == .idle)
        #expect(!h.isArmed(.claim))
        #expect(h.published().isEmpty)
    }

    @Test func anOfflineOwnerIsNoOwner() {
        var h = OwnershipHarness(id: "a")
        h.connect(record: b, offline: ["b"], rssi: -65)
        #expect(h.fire(.claim) == [.publishOwner(OwnerRecord(bridge: "a", rssi: -65, since: h.unixNow))])
    }

    @Test func theOwnersWillMarksTheDeviceOfflineAndStartsAClaim() {
        var h = OwnershipHarness(id: "a")
        h.connect(record: b, rssi: -65)
        #expect(h.send(.bridgeState("b", online: false)) == [.markOffline])
        #expect(h.send(.bridgeState("b", online: false)) == [])    // a repeated offline says nothing new
        #expect(h.fire(.claim)?.first == .publishOwner(OwnerRecord(bridge: "a", rssi: -65, since: h.unixNow)))
    }

    @Test func anotherBridgesWillIsNotAboutThisDevice() {
        var h = OwnershipHarness(id: "a")
        h.connect(record: b, rssi: -65)
        #expect(h.send(.bridgeState("c", online: false)) == [])
        #expect(h.send(.bridgeState("a", online: false)) == [])     // our own retained will from an earlier run
    }

    @Test func anOwnerBackBeforeTheClaimCancelsIt() {
        var h = OwnershipHarness(id: "a")
        h.connect(record: b, rssi: -65)
        h.send(.bridgeState("b", online: false))
        h.send(.bridgeState("b", online: true))
        #expect(h.fire(.claim) == [])
        #expect(h.state == .idle)
    }

    @Test func aRetainedRecordNamingThisBridgeIsClaimedAgain() {
        var h = OwnershipHarness(id: "a")
        h.connect(record: OwnerRecord(bridge: "a", rssi: -50, since: 5), rssi: nil)
        #expect(h.state == .claiming)
        #expect(h.published() == [OwnerRecord(bridge: "a", rssi: OwnershipMachine.unknownRSSI, since: h.unixNow)])
    }

    @Test func anOwnerSaysItselfAgainWhenTheRecordIsCleared() {
        var h = OwnershipHarness(id: "a")
        h.connect()
        h.claimAndOwn()
        #expect(h.send(.owner(nil)) == [.publishOwner(OwnerRecord(bridge: "a", rssi: -60, since: h.unixNow))])
        #expect(h.machine.owns)
    }

    @Test func anOwnerRefreshesItsReportedSignalAtMostEveryFewSeconds() {
        var h = OwnershipHarness(id: "a")
        h.connect()
        h.claimAndOwn()
        #expect(h.send(.sighting(-61)) == [])                     // within the margin
        h.advance(.seconds(6))
        #expect(h.send(.sighting(-70)) == [.publishOwner(OwnerRecord(bridge: "a", rssi: -70, since: h.unixNow))])
        #expect(h.send(.sighting(-80)) == [])                     // too soon after the last one
        h.advance(.seconds(6))
        #expect(h.send(.sighting(-80)).count == 1)
    }

    @Test func aRequestFromABridgeNotStrongerEnoughIsAnsweredWithTheTruth() {
        var h = OwnershipHarness(id: "a")
        h.connect(rssi: -62)
        h.claimAndOwn()
        #expect(h.send(.handoverRequested(by: "b", rssi: -55)) == [
            .publishOwner(OwnerRecord(bridge: "a", rssi: -62, since: h.unixNow)),
        ])
        #expect(h.machine.owns)
    }

    @Test func aRequestFromADeadBridgeOrToANonOwnerIsIgnored() {
        var h = OwnershipHarness(id: "a")
        h.connect(rssi: -90)
        #expect(h.send(.handoverRequested(by: "b", rssi: -40)) == [])   // not the owner
        h.claimAndOwn()
        h.send(.bridgeState("b", online: false))
        #expect(h.send(.handoverRequested(by: "b", rssi: -40)) == [])
    }

    @Test func theOwnerReleasesOnlyAfterTheSessionLetGo() {
        var h = OwnershipHarness(id: "a")
        h.connect(rssi: -80)
        h.claimAndOwn()
        #expect(h.send(.handoverRequested(by: "b", rssi: -60)) == [.own(false)])
        #expect(h.state == .releasing(to: "b", rssi: -60))
        #expect(h.published().count == 1)                         // no record yet: the device is still connected
        #expect(h.send(.released) == [.publishOwner(OwnerRecord(bridge: "b", rssi: -60, since: h.unixNow))])
        #expect(h.state == .idle)
        #expect(h.send(.released) == [])
    }

    @Test func aRequestOrRecordNamingNoLiveBridgeMovesNothing() {
        var h = OwnershipHarness(id: "b")
        h.connect(rssi: -60)
        h.claimAndOwn()
        // A request from a bridge nobody has seen online, with the best signal there is: ignored.
        #expect(h.send(.handoverRequested(by: "zz", rssi: 20)) == [])
        #expect(h.machine.owns)
        // A record naming a lower id that is no bridge: the owner says its own record again.
        let mine = h.published().last!
        #expect(h.send(.owner(OwnerRecord(bridge: "0", rssi: 20, since: 1))) == [.publishOwner(mine)])
        #expect(h.machine.owns)
        // Once that bridge is really there (its state online), a lower id's record wins as ever.
        h.send(.bridgeState("0", online: true))
        #expect(h.send(.owner(OwnerRecord(bridge: "0", rssi: -70, since: 2))) == [.own(false)])
    }

    @Test func aRecordNamingNoLiveBridgeIsNoOwner() {
        var h = OwnershipHarness(id: "b")
        h.connect(record: OwnerRecord(bridge: "ghost", rssi: -40, since: 1), rssi: -60)
        #expect(h.isArmed(.claim))                                // nobody live owns it: claimed as usual
    }

    @Test func aLowerIdClaimWinsOverAnOwner() {
        var h = OwnershipHarness(id: "b")
        h.connect()
        h.claimAndOwn()
        #expect(h.send(.owner(OwnerRecord(bridge: "a", rssi: -90, since: 9))) == [.own(false)])
        #expect(h.state == .idle)
    }

    @Test func aHigherIdClaimIsAnsweredByTheOwnersRecord() {
        var h = OwnershipHarness(id: "a")
        h.connect()
        h.claimAndOwn()
        #expect(h.send(.owner(OwnerRecord(bridge: "c", rssi: -90, since: 9))) == [
            .publishOwner(OwnerRecord(bridge: "a", rssi: -60, since: h.unixNow)),
        ])
        #expect(h.machine.owns)
    }

    /// A broker restart without persistence: the owner keeps its device and publishes its record again.
    @Test func anOwnerKeepsItsDeviceThroughABrokerRestartThatLostTheRecord() {
        var h = OwnershipHarness(id: "a")
        h.connect()
        h.claimAndOwn()
        let since = h.unixNow
        h.send(.owner(OwnerRecord(bridge: "a", rssi: -60, since: since)))
        h.send(.brokerDisconnected)
        h.unixNow += 100
        // Held: the link stays, but the bridge does not speak for the device until it knows it is still its own.
        #expect(h.send(.brokerConnected) == [.hold(true)])
        #expect(h.machine.owns)
        #expect(h.send(.handoverRequested(by: "b", rssi: 0)) == [])    // not while the retained state is unknown
        #expect(h.fire(.listen) == [.hold(false), .publishOwner(OwnerRecord(bridge: "a", rssi: -60, since: h.unixNow))])
        #expect(h.machine.owns)
        // With the record kept by the broker, nothing needs saying.
        h.send(.brokerDisconnected)
        #expect(h.send(.brokerConnected) == [.hold(true)])
        h.send(.owner(OwnerRecord(bridge: "a", rssi: -60, since: since)))
        #expect(h.fire(.listen) == [.hold(false)])
        #expect(h.machine.owns)
    }

    @Test func aDeviceNoLongerHeardIsNotClaimed() {
        var h = OwnershipHarness(id: "a")
        h.connect(record: b, rssi: -50)
        h.send(.bridgeState("b", online: false))
        #expect(h.isArmed(.claim))
        h.send(.unseen)
        #expect(h.fire(.claim) == [])
        #expect(h.published().isEmpty)
        h.send(.sighting(-70))                                    // heard again
        #expect(h.fire(.claim)?.first == .publishOwner(OwnerRecord(bridge: "a", rssi: -70, since: h.unixNow)))
    }

    @Test func aDeviceNoLongerHeardEndsTheHandoverWindow() {
        var h = OwnershipHarness(id: "a")
        h.connect(record: b, rssi: -50)                           // 20 dB over b's report
        let window = h.take(.handover)!
        h.send(.unseen)
        #expect(h.send(window) == [])
        #expect(h.state == .idle)
    }

    @Test func aStaleTimerChangesNothing() {
        var h = OwnershipHarness(id: "a")
        h.connect()
        let stale = h.take(.claim)!
        h.send(.brokerDisconnected)
        h.send(.brokerConnected)
        #expect(h.send(stale) == [])
        #expect(h.state == .listening)
    }

    // MARK: - Room and reach

    @Test func aBridgeWithoutRoomDoesNotClaimUntilASlotFrees() {
        var h = OwnershipHarness(id: "a")
        h.send(.room(false))
        h.connect(rssi: -50)
        #expect(!h.isArmed(.claim))
        h.send(.sighting(-52))
        #expect(!h.isArmed(.claim))
        h.send(.room(true))
        #expect(h.fire(.claim)?.first == .publishOwner(OwnerRecord(bridge: "a", rssi: -52, since: h.unixNow)))
    }

    @Test func losingRoomCancelsAPendingClaimAndAHandoverWindow() {
        var h = OwnershipHarness(id: "a")
        h.connect(rssi: -50)
        let claim = h.take(.claim)!
        h.send(.room(false))
        #expect(h.send(claim) == [])
        var g = OwnershipHarness(id: "a")
        g.connect(record: b, rssi: -50)                           // 20 dB over b's report: the window runs
        let window = g.take(.handover)!
        g.send(.room(false))
        #expect(g.send(window) == [])
        g.send(.sighting(-49))
        #expect(!g.isArmed(.handover))                            // no window without room
    }

    @Test func anOwnerThatCannotReachItsDeviceReportsNoSignal() {
        var h = OwnershipHarness(id: "a")
        h.connect(rssi: -60)
        h.claimAndOwn()
        #expect(h.isArmed(.unreachable))
        let since = h.published().last!.since
        #expect(h.fire(.unreachable) == [.publishOwner(OwnerRecord(bridge: "a", rssi: OwnershipMachine.unknownRSSI,
                                                                   since: since))])
        #expect(h.machine.unreachable)
        h.advance(.seconds(10))
        #expect(h.send(.sighting(-40)) == [])                     // what it hears does not count while it cannot connect
        // Any bridge that hears the device is stronger now: its request is granted.
        #expect(h.send(.handoverRequested(by: "b", rssi: -95)) == [.own(false)])
    }

    @Test func anOwnerOnlineAgainReportsItsSignal() {
        var h = OwnershipHarness(id: "a")
        h.connect(rssi: -60)
        h.claimAndOwn()
        h.fire(.unreachable)
        h.send(.sighting(-58))
        #expect(h.send(.link(up: true)) == [.publishOwner(OwnerRecord(bridge: "a", rssi: -58,
                                                                      since: h.published().first!.since))])
        #expect(!h.machine.unreachable)
        #expect(h.send(.handoverRequested(by: "b", rssi: -55)).first != .own(false))
    }

    @Test func anOwnerWhoseLinkCameUpInTimeStaysReachable() {
        var h = OwnershipHarness(id: "a")
        h.connect(rssi: -60)
        h.claimAndOwn()
        let stale = h.take(.unreachable)!
        h.send(.link(up: true))
        #expect(h.send(stale) == [])
        h.send(.link(up: false))                                  // a later link loss starts a new window
        #expect(h.isArmed(.unreachable))
        #expect(h.fire(.unreachable)?.first == .publishOwner(OwnerRecord(bridge: "a", rssi: OwnershipMachine.unknownRSSI,
                                                                         since: h.published().first!.since)))
    }
}
