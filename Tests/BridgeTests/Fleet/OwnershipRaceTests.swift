import Testing
@testable import BridgeFleet

/// The races of `OwnershipMachine`'s doc comment, played between several machines over one simulated broker.
@Suite struct OwnershipRaceTests {
    /// Connected, listened, device seen: every bridge idle with a claim armed (or not, when an owner is live).
    func fleet(_ rssi: [String: Int], record: OwnerRecord? = nil) -> FleetHarness {
        var f = FleetHarness(rssi.keys.sorted())
        for id in rssi.keys.sorted() {
            f.send(id, .brokerConnected)
            if let record { f.send(id, .owner(record)) }
            f.send(id, .sighting(rssi[id]!))
            f.fire(id, .listen)
        }
        return f
    }

    /// Both claims are published before either bridge sees the other's; in either broker order the lower id wins.
    @Test(arguments: [["a", "b"], ["b", "a"]])
    func twoBridgesClaimingAtOnceConvergeOnTheLowerId(order: [String]) {
        var f = fleet(["a": -60, "b": -60])
        var claims: [String: OwnerRecord] = [:]
        for id in ["a", "b"] {
            let event = f.bridges[id]!.take(.claim)!
            let actions = f.bridges[id]!.send(event)
            guard case .publishOwner(let record) = actions.first else { Issue.record("no claim from \(id)"); return }
            claims[id] = record
        }
        // The broker delivers both, in its order; then whatever they publish in answer.
        for id in order {
            for (bridge, actions) in f.deliverOnly(claims[id]!) {
                for case .publishOwner(let again) in actions { _ = bridge; f.publish(again) }
            }
        }
        f.fire("a", .settle)
        f.fire("b", .settle)
        #expect(f.owners == ["a"])
        #expect(f.retained?.bridge == "a")
    }

    @Test func theStrongestBridgeClaimsAloneWhenItsClaimArrivesFirst() {
        var f = fleet(["a": -80, "b": -50, "c": -70])
        f.fire("b", .claim)                  // shortest delay
        f.fire("a", .claim)
        f.fire("c", .claim)
        f.fire("b", .settle)
        #expect(f.owners == ["b"])
        #expect(f.bridges["a"]!.published().isEmpty)
        #expect(f.bridges["c"]!.published().isEmpty)
    }

    @Test func handoverAfterTheHysteresisWindowThenNoFlapping() {
        var f = fleet(["a": -80, "b": -90])
        f.fire("a", .claim)
        f.fire("a", .settle)
        #expect(f.owners == ["a"])
        // The peripheral moves towards b: b sees it 15 dB stronger than a reports.
        f.send("b", .sighting(-65))
        #expect(f.bridges["b"]!.isArmed(.handover))
        f.fire("b", .handover)
        #expect(f.owners == ["b"])
        #expect(f.retained == OwnerRecord(bridge: "b", rssi: -65, since: f.bridges["a"]!.unixNow))
        // a still hears it at -80: nowhere near 10 dB over b's report. Noise of ±5 dB on both sides changes nothing.
        for (i, noise) in [5, -5, 3, -4, 5, -5].enumerated() {
            f.send("a", .sighting(-80 + noise))
            f.send("b", .sighting(-65 - noise))
            f.advanceAll(.seconds(10))
            #expect(!f.bridges["a"]!.isArmed(.handover), "step \(i)")
        }
        #expect(f.owners == ["b"])
        #expect(!f.bridges["a"]!.log.contains { if case .requestHandover = $0 { true } else { false } })
        #expect(f.bridges["b"]!.published().allSatisfy { $0.bridge == "b" })    // only its own refreshed reports
    }

    @Test func aSignalThatDipsBelowTheMarginRestartsTheWindow() {
        var f = fleet(["a": -80, "b": -90])
        f.fire("a", .claim)
        f.fire("a", .settle)
        f.send("b", .sighting(-68))                       // 12 dB over a's report: the window starts
        let first = f.bridges["b"]!.take(.handover)!
        f.send("b", .sighting(-72))                       // noise: only 8 dB over
        f.send("b", first)
        #expect(f.owners == ["a"])
        f.send("b", .sighting(-66))                       // a new window
        f.fire("b", .handover)
        #expect(f.owners == ["b"])
    }

    @Test func theOwnersRefreshedReportCanEndAWindow() {
        var f = fleet(["a": -80, "b": -90])
        f.fire("a", .claim)
        f.fire("a", .settle)
        f.send("b", .sighting(-66))
        f.advanceAll(.seconds(10))
        f.send("a", .sighting(-60))                       // the owner hears it better now and says so
        f.fire("b", .handover)
        #expect(f.owners == ["a"])
        #expect(f.bridges["b"]!.state == .idle)
    }

    /// SIGKILL: only the will speaks. The survivor that sees the device takes over; the old owner, back, stays idle.
    @Test func anOwnerReturningAfterItsWillFiredFindsTheDeviceTaken() {
        var f = fleet(["a": -60, "b": -70])
        f.fire("a", .claim)
        f.fire("a", .settle)
        f.down.insert("a")                               // a's link is cut: its will fires
        f.send("b", .bridgeState("a", online: false))
        #expect(f.bridges["b"]!.log.contains(.markOffline))
        f.fire("b", .claim)
        f.fire("b", .settle)
        #expect(f.bridges["b"]!.machine.owns)
        // a's link came back (it never knew it was gone): it listens, sees b's record, and lets go.
        f.down.remove("a")
        f.send("a", .brokerDisconnected)
        f.send("a", .brokerConnected)
        #expect(f.bridges["a"]!.machine.owns)             // the device stays up while it listens,
        // Held: its commands wait, its availability is not said.
        #expect(f.bridges["a"]!.log.filter(\.isNotSchedule).last == .hold(true))
        f.send("a", .owner(f.retained!))
        f.fire("a", .listen)
        #expect(f.owners == ["b"])
        // Released with the hold still on: the core drops the waiting commands (b ran them) and a's session says
        // no `offline` over b's `online`.
        #expect(f.bridges["a"]!.log.filter(\.isNotSchedule).suffix(2) == [.hold(true), .own(false)])
    }

    @Test func anOwnerReturningBeforeAnyClaimKeepsTheDevice() {
        var f = fleet(["a": -60, "b": -70])
        f.fire("a", .claim)
        f.fire("a", .settle)
        f.send("b", .bridgeState("a", online: false))
        f.send("a", .brokerDisconnected)
        f.send("a", .brokerConnected)
        f.send("a", .owner(f.retained!))
        f.fire("a", .listen)
        f.send("b", .bridgeState("a", online: true))      // a's `online`, published on its reconnect
        f.fire("b", .claim)
        #expect(f.owners == ["a"])
        #expect(f.bridges["b"]!.published().isEmpty)
    }

    /// The broker restarts (retained state lost) after the owner let go but before its release reached anyone.
    @Test func aBrokerRestartLosingTheReleaseStillEndsWithOneOwner() {
        var f = fleet(["a": -80, "b": -90])
        f.fire("a", .claim)
        f.fire("a", .settle)
        f.send("b", .sighting(-65))
        // b asks; a lets go, but the broker goes down before the release is delivered.
        let window = f.bridges["b"]!.take(.handover)!
        let asked = f.bridges["b"]!.send(window)
        #expect(asked == [.requestHandover(rssi: -65)])
        _ = f.bridges["a"]!.send(.handoverRequested(by: "b", rssi: -65))
        f.send("a", .brokerDisconnected)
        f.send("b", .brokerDisconnected)
        _ = f.bridges["a"]!.send(.released)            // published into the void
        f.retained = nil
        for id in ["a", "b"] {
            f.send(id, .brokerConnected)
            f.fire(id, .listen)
        }
        f.fire("b", .claim)                              // stronger: shorter delay
        f.fire("a", .claim)
        f.fire("b", .settle)
        f.fire("a", .settle)
        #expect(f.owners == ["b"])
    }

    /// The same, but the release was buffered and arrives after the reconnect.
    @Test func aBrokerRestartDeliveringTheReleaseLateEndsWithTheChallenger() {
        var f = fleet(["a": -80, "b": -90])
        f.fire("a", .claim)
        f.fire("a", .settle)
        f.send("b", .sighting(-65))
        let window = f.bridges["b"]!.take(.handover)!
        _ = f.bridges["b"]!.send(window)
        _ = f.bridges["a"]!.send(.handoverRequested(by: "b", rssi: -65))
        f.send("a", .brokerDisconnected)
        f.send("b", .brokerDisconnected)
        let release = f.bridges["a"]!.send(.released)
        guard case .publishOwner(let record) = release.first else { Issue.record("no release"); return }
        for id in ["a", "b"] { f.send(id, .brokerConnected) }
        f.send("a", .owner(record))
        f.send("b", .owner(record))
        f.fire("a", .listen)
        f.fire("b", .listen)
        f.fire("b", .settle)
        f.fire("a", .claim)
        #expect(f.owners == ["b"])
        #expect(f.retained?.bridge == "b")
    }

    @Test func threeBridgesClaimingAfterAWillConvergeOnOne() {
        var f = fleet(["a": -70, "b": -70, "c": -70], record: OwnerRecord(bridge: "z", rssi: -50, since: 1))
        for id in ["a", "b", "c"] { f.send(id, .bridgeState("z", online: false)) }
        var claims: [OwnerRecord] = []
        for id in ["c", "b", "a"] {
            let event = f.bridges[id]!.take(.claim)!
            for case .publishOwner(let record) in f.bridges[id]!.send(event) { claims.append(record) }
        }
        for claim in claims {
            for (bridge, actions) in f.deliverOnly(claim) {
                for case .publishOwner(let again) in actions { _ = bridge; f.publish(again) }
            }
        }
        for id in ["a", "b", "c"] { f.fire(id, .settle) }
        #expect(f.owners == ["a"])
    }

    /// An owner whose adapter cannot connect the device (wedged, full) while another bridge hears it: after the
    /// unreachable window and the usual hysteresis, the other bridge asks and gets it; then it stays there.
    @Test func anUnreachableOwnerHandsTheDeviceToABridgeThatHearsIt() {
        var f = fleet(["a": -60, "b": -85])
        f.fire("a", .claim)
        f.fire("a", .settle)
        #expect(f.owners == ["a"])
        f.fire("b", .handover)                                    // nothing armed: b is 25 dB weaker
        #expect(f.owners == ["a"])
        f.fire("a", .unreachable)
        #expect(f.retained?.rssi == OwnershipMachine.unknownRSSI)
        #expect(f.bridges["b"]!.isArmed(.handover))               // the weaker report starts b's window at once
        f.fire("b", .handover)
        #expect(f.owners == ["b"])
        #expect(f.retained?.bridge == "b")
        f.send("b", .link(up: true))
        f.send("a", .unseen)                                      // a's wedged radio has stopped hearing it too
        f.fire("a", .handover)
        #expect(f.owners == ["b"])
        #expect(f.retained == OwnerRecord(bridge: "b", rssi: -85, since: f.retained!.since))
    }
}

extension OwnershipAction {
    var isNotSchedule: Bool {
        if case .schedule = self { false } else { true }
    }
}
