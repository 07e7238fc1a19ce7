import Testing
@testable import BridgeSession

/// `stop` from every state, and invariants over long random event sequences.
@Suite struct SessionMachineStopTests {
    struct Start: Sendable, CustomTestStringConvertible {
        var name: String
        var drive: @Sendable (inout SessionHarness) -> Void
        /// What stopping must emit, given the generation at the time.
        var expected: @Sendable (SessionGeneration) -> [SessionAction]
        var testDescription: String { name }
    }

    static let starts: [Start] = [
        Start(name: "stopped", drive: { _ in }, expected: { _ in [] }),
        Start(name: "waitingForAdapter", drive: { $0.send(.start) }, expected: { _ in [] }),
        Start(name: "discovering", drive: { $0.send(.adapterAvailable(powered: true)); $0.send(.start) },
              expected: { _ in [.stopDiscovery] }),
        Start(name: "waitingForSlot", drive: { $0.toWaitingForSlot() }, expected: { [.releaseConnectSlot($0)] }),
        Start(name: "connecting", drive: { $0.toConnecting() }, expected: { [.releaseConnectSlot($0), .disconnect] }),
        Start(name: "resolvingServices", drive: { $0.toResolving() }, expected: { _ in [.disconnect] }),
        Start(name: "subscribing", drive: { $0.toSubscribing() }, expected: { _ in [.disconnect] }),
        Start(name: "online", drive: { $0.toOnline() }, expected: { _ in
            [.stopPolling, .disconnect, .emitEvent(.disconnected(reason: "stopped")), .publishAvailability(false)]
        }),
        Start(name: "backoff", drive: { $0.toConnecting(); $0.send(.failure(.inProgress, $0.generation)) },
              expected: { _ in [.cancelBackoff] }),
    ]

    @Test(arguments: starts) func stopFrom(_ start: Start) {
        var h = SessionHarness()
        start.drive(&h)
        #expect(String(describing: h.state).hasPrefix(start.name))
        let g = h.generation
        #expect(h.send(.stop) == start.expected(g))
        #expect(h.state == .stopped)
        #expect(h.machine.availability.published != true)
        #expect(h.machine.attempt == 0)
        #expect(h.send(.stop) == [])
        // Whatever was in flight is now stale.
        #expect(h.send(.subscribed(g)) == [])
        #expect(h.send(.failure(.linkLost, g)) == [])
        #expect(h.state == .stopped)
    }

    @Test func restartAfterStopDoesNotRepublishOffline() {
        var h = SessionHarness()
        h.toOnline()
        h.send(.stop)
        let restart = h.send(.start)
        #expect(restart == [.requestConnectSlot(h.generation)])
    }

    /// A small deterministic generator (SplitMix64), so a failing sequence can be replayed.
    struct SplitMix64: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64]) func randomEventsKeepInvariants(seed: UInt64) {
        var rng = SplitMix64(state: seed)
        var h = SessionHarness(jitter: 0.5)
        var slots = Set<SessionGeneration>()          // requested and not yet released
        var lastPublished: Bool?
        var visited = Set<String>()
        let kinds: [FailureKind] = [
            .connectAbortedLocally, .connectFailed("x"), .inProgress, .notReady, .deviceGone, .notConnected,
            .connectTimeout, .resolveTimeout, .subscribeFailed("x"), .noReply, .serviceUnknown,
            .characteristicMissing("x"), .linkLost, .adapterOff, .adapterMissing, .bluezGone, .other("x"),
        ]
        for step in 0..<5_000 {
            // Mostly current-generation results, sometimes stale or future ones.
            let g = h.generation &+ [0, 0, 0, 0, 0, 1, UInt64.max][Int.random(in: 0..<7, using: &rng)]
            let events: [SessionEvent] = [
                .start, .stop, .adapterAvailable(powered: true), .adapterAvailable(powered: false), .adapterGone,
                .bluezAvailable, .bluezGone, .deviceFound, .deviceGone, .connectSlotGranted(g), .connectSucceeded(g),
                .connected, .disconnected, .servicesResolved(g), .subscribed(g),
                .failure(kinds[Int.random(in: 0..<kinds.count, using: &rng)], g), .backoffElapsed(g),
            ]
            let event = step % 3 == 0 ? events[Int.random(in: 0..<events.count, using: &rng)]
                : [.adapterAvailable(powered: true), .deviceFound, .connectSlotGranted(h.generation),
                   .connectSucceeded(h.generation), .servicesResolved(h.generation), .subscribed(h.generation),
                   .backoffElapsed(h.generation), .start][Int.random(in: 0..<8, using: &rng)]
            h.advance(.seconds(Int.random(in: 0...20, using: &rng)))
            for action in h.send(event) {
                switch action {
                case .requestConnectSlot(let s): slots.insert(s)
                case .releaseConnectSlot(let s): slots.remove(s)
                case .publishAvailability(let v):
                    #expect(v != lastPublished, "availability republished unchanged at step \(step)")
                    lastPublished = v
                default: break
                }
            }
            visited.insert(String(describing: h.state).prefix { $0 != "(" }.description)
            let holdsSlot = h.state == .waitingForSlot || h.state == .connecting
            #expect(slots == (holdsSlot ? [h.generation] : []), "slot leak after \(event) at step \(step)")
            if let published = lastPublished {
                #expect(published == (h.state == .online), "availability wrong after \(event) at step \(step)")
            }
        }
        for case .releaseConnectSlot(let s) in h.send(.stop) { slots.remove(s) }
        #expect(slots.isEmpty)
        #expect(lastPublished == false)
        #expect(visited.count == 9, "states reached: \(visited.sorted())")
    }
}
