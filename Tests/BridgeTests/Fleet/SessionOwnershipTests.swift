import Testing
@testable import BridgeSession

/// The session's side of a fleet (docs/fleet.md): a device another bridge owns is watched (discovery, for RSSI), never
/// connected, and never spoken for (no availability).
@Suite struct SessionOwnershipTests {
    @Test func notOwnedAtStartDiscoversSilentlyAndNeverConnects() {
        var h = SessionHarness()
        #expect(h.send(.ownership(false)) == [])
        h.send(.adapterAvailable(powered: true))
        #expect(h.send(.start) == [.startDiscovery])
        #expect(h.state == .discovering)
        #expect(h.send(.deviceFound) == [])
        #expect(h.state == .discovering)
        #expect(!h.log.contains { if case .publishAvailability = $0 { true } else { false } })
        #expect(!h.log.contains { if case .requestConnectSlot = $0 { true } else { false } })
    }

    @Test func takingOverConnectsAKnownDeviceAndSaysOfflineUntilOnline() {
        var h = SessionHarness()
        h.send(.ownership(false))
        h.send(.adapterAvailable(powered: true))
        h.send(.start)
        h.send(.deviceFound)
        let taken = h.send(.ownership(true))
        #expect(taken == [.publishAvailability(false), .stopDiscovery, .requestConnectSlot(h.generation)])
        h.send(.connectSlotGranted(h.generation))
        h.send(.connectSucceeded(h.generation))
        h.send(.servicesResolved(h.generation))
        #expect(h.send(.subscribed(h.generation)).first == .publishAvailability(true))
    }

    @Test func takingOverAnUnseenDeviceKeepsDiscoveringUntilFound() {
        var h = SessionHarness()
        h.send(.ownership(false))
        h.send(.adapterAvailable(powered: true))
        h.send(.start)
        #expect(h.send(.ownership(true)) == [.publishAvailability(false)])
        #expect(h.send(.deviceFound) == [.stopDiscovery, .requestConnectSlot(h.generation)])
    }

    /// The release order of a handover: offline is said while still the owner, the link goes, and only then (after
    /// the disconnect, which `confirmRelease` waits for) may the next owner be named.
    @Test func givingUpAnOnlineDeviceDisconnectsThenConfirms() {
        var h = SessionHarness()
        h.toOnline()
        let actions = h.send(.ownership(false))
        #expect(actions == [
            .stopPolling, .disconnect, .emitEvent(.disconnected(reason: "another bridge owns the device")),
            .publishAvailability(false), .startDiscovery, .confirmRelease,
        ])
        #expect(h.state == .discovering)
        #expect(!h.machine.connectAllowed)
        // Adverts keep coming; nothing connects.
        #expect(h.send(.deviceFound) == [])
    }

    @Test func givingUpWhileConnectingReleasesTheSlot() {
        var h = SessionHarness()
        h.toConnecting()
        let g = h.generation
        let actions = h.send(.ownership(false))
        #expect(actions.contains(.releaseConnectSlot(g)))
        #expect(actions.contains(.disconnect))
        #expect(actions.last == .confirmRelease)
        // The late result of the abandoned connect changes nothing: the disconnect already cancelled it.
        #expect(h.send(.connectSucceeded(g)) == [])
    }

    @Test func givingUpInBackoffRetriesAsAWatcherOnly() {
        var h = SessionHarness()
        h.toOnline()
        h.send(.disconnected)
        let actions = h.send(.ownership(false))
        #expect(actions.contains(.cancelBackoff))
        #expect(actions.last == .confirmRelease)
        #expect(h.state == .discovering)
    }

    @Test func ownershipUnchangedIsIgnoredAndALoneBridgeOwnsEverything() {
        var h = SessionHarness()
        #expect(h.machine.connectAllowed)
        h.toOnline()
        #expect(h.send(.ownership(true)) == [])
        #expect(h.machine.isOnline)
    }

    @Test func aStoppedSessionConfirmsNothing() {
        var h = SessionHarness()
        #expect(h.send(.ownership(false)) == [])
        #expect(h.send(.ownership(true)) == [])
    }

    @Test func failuresWhileNotOwnedNeverLeadToAConnect() {
        var h = SessionHarness()
        h.toOnline()
        h.send(.ownership(false))
        h.send(.deviceGone)
        h.send(.adapterAvailable(powered: false))
        h.send(.adapterAvailable(powered: true))
        h.send(.deviceFound)
        #expect(h.state == .discovering)
        let afterRelease = h.log.split(separator: .confirmRelease).last ?? []
        #expect(!afterRelease.contains { if case .requestConnectSlot = $0 { true } else { false } })
        #expect(!afterRelease.contains { if case .publishAvailability = $0 { true } else { false } })
    }
}
