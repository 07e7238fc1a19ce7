import Testing
@testable import BridgeAdapters

@Suite struct AdapterChoiceTests {
    typealias Candidate = AdapterChoice.Candidate
    let t0 = ContinuousClock.now

    func seen(_ rssi: Int?, _ secondsAgo: Int = 0) -> AdapterChoice.Sighting {
        AdapterChoice.Sighting(rssi: rssi, at: t0 - .seconds(secondsAgo))
    }

    @Test func strongestRecentSightingWins() {
        let candidates = [Candidate(name: "hci0", powered: true, seen: seen(-80)),
                          Candidate(name: "hci1", powered: true, seen: seen(-50))]
        #expect(AdapterChoice.choose(pinned: nil, current: nil, candidates: candidates) == "hci1")
    }

    @Test func anOldStrongSightingDoesNotBeatAFreshOne() {
        let candidates = [Candidate(name: "hci0", powered: true, seen: seen(-80, 1)),
                          Candidate(name: "hci1", powered: true, seen: seen(-40, 120))]
        #expect(AdapterChoice.choose(pinned: nil, current: nil, candidates: candidates) == "hci0")
    }

    @Test func unpoweredFullOrUnhealthyAdaptersAreSkipped() {
        let off = [Candidate(name: "hci0", powered: false, seen: seen(-40)),
                   Candidate(name: "hci1", powered: true, seen: seen(-90))]
        #expect(AdapterChoice.choose(pinned: nil, current: "hci0", candidates: off) == "hci1")
        let full = [Candidate(name: "hci0", powered: true, devices: 1, maxConnections: 1, seen: seen(-40)),
                    Candidate(name: "hci1", powered: true)]
        #expect(AdapterChoice.choose(pinned: nil, current: nil, candidates: full) == "hci1")
        let wedged = [Candidate(name: "hci0", powered: true, healthy: false, seen: seen(-40)),
                      Candidate(name: "hci1", powered: true)]
        #expect(AdapterChoice.choose(pinned: nil, current: "hci0", candidates: wedged) == "hci1")
    }

    @Test func anUnhealthyAdapterBeatsNone() {
        let only = [Candidate(name: "hci0", powered: true, healthy: false)]
        #expect(AdapterChoice.choose(pinned: nil, current: "hci0", candidates: only) == "hci0")
        #expect(AdapterChoice.choose(pinned: nil, current: "hci0",
                                     candidates: [Candidate(name: "hci0", powered: false)]) == nil)
    }

    @Test func smallDifferencesDoNotMoveADevice() {
        let candidates = [Candidate(name: "hci0", powered: true, seen: seen(-60)),
                          Candidate(name: "hci1", powered: true, seen: seen(-57))]
        #expect(AdapterChoice.choose(pinned: nil, current: "hci0", candidates: candidates) == "hci0")
        #expect(AdapterChoice.choose(pinned: nil, current: nil, candidates: candidates) == "hci1")
        let far = [Candidate(name: "hci0", powered: true, seen: seen(-70)),
                   Candidate(name: "hci1", powered: true, seen: seen(-50))]
        #expect(AdapterChoice.choose(pinned: nil, current: "hci0", candidates: far) == "hci1")
        // A fresher sighting of unknown or equal strength elsewhere does not move it either.
        let unknown = [Candidate(name: "hci0", powered: true, seen: seen(nil, 5)),
                       Candidate(name: "hci1", powered: true, seen: seen(-40))]
        #expect(AdapterChoice.choose(pinned: nil, current: "hci0", candidates: unknown) == "hci0")
        let equal = [Candidate(name: "hci0", powered: true, seen: seen(0, 5)),
                     Candidate(name: "hci1", powered: true, seen: seen(0))]
        #expect(AdapterChoice.choose(pinned: nil, current: "hci0", candidates: equal) == "hci0")
    }

    /// A device just placed stays on its usable adapter though its sighting there is stale, unless another is clearly
    /// stronger; an unhealthy one does not hold it.
    @Test func aSettlingDeviceStaysUnlessAnotherIsClearlyStronger() {
        let fresher = [Candidate(name: "hci0", powered: true, seen: seen(-50, 60)),
                       Candidate(name: "hci1", powered: true, seen: seen(-50))]
        #expect(AdapterChoice.choose(pinned: nil, current: "hci0", candidates: fresher) == "hci1")
        #expect(AdapterChoice.choose(pinned: nil, current: "hci0", candidates: fresher, settling: true) == "hci0")
        let stronger = [Candidate(name: "hci0", powered: true, seen: seen(-50, 60)),
                        Candidate(name: "hci1", powered: true, seen: seen(-45))]
        #expect(AdapterChoice.choose(pinned: nil, current: "hci0", candidates: stronger, settling: true) == "hci1")
        let unhealthy = [Candidate(name: "hci0", powered: true, healthy: false, seen: seen(-50, 60)),
                         Candidate(name: "hci1", powered: true, seen: seen(-50))]
        #expect(AdapterChoice.choose(pinned: nil, current: "hci0", candidates: unhealthy, settling: true) == "hci1")
    }

    @Test func unseenDevicesGoToTheFirstAdapterWithRoomOrStay() {
        let candidates = [Candidate(name: "hci1", powered: true, devices: 2),
                          Candidate(name: "hci0", powered: true, devices: 4)]
        #expect(AdapterChoice.choose(pinned: nil, current: nil, candidates: candidates) == "hci0")
        #expect(AdapterChoice.choose(pinned: nil, current: "hci1", candidates: candidates) == "hci1")
        // Seen elsewhere: it moves there even from a usable adapter that does not see it.
        let elsewhere = [Candidate(name: "hci0", powered: true),
                         Candidate(name: "hci1", powered: true, seen: seen(nil))]
        #expect(AdapterChoice.choose(pinned: nil, current: "hci0", candidates: elsewhere) == "hci1")
    }

    @Test func pinnedDevicesUseTheirAdapterEvenWhenItIsOff() {
        let candidates = [Candidate(name: "hci0", powered: false), Candidate(name: "hci1", powered: true, seen: seen(-30))]
        #expect(AdapterChoice.choose(pinned: "hci0", current: nil, candidates: candidates) == "hci0")
        #expect(AdapterChoice.choose(pinned: "hci2", current: nil, candidates: candidates) == nil)
    }

    /// `max_connections` holds for pinned devices too: on a full adapter the device waits for a slot.
    @Test func aPinnedDeviceWaitsForRoomOnItsAdapter() {
        let full = [Candidate(name: "hci0", powered: true, devices: 2, maxConnections: 2),
                    Candidate(name: "hci1", powered: true)]
        #expect(AdapterChoice.choose(pinned: "hci0", current: nil, candidates: full) == nil)
        let room = [Candidate(name: "hci0", powered: true, devices: 1, maxConnections: 2)]
        #expect(AdapterChoice.choose(pinned: "hci0", current: "hci0", candidates: room) == "hci0")
    }
}
