/// The life of one saved device, as a value type: events in, actions out, no I/O. The orchestrator owns the timers,
/// the bus and MQTT; this decides what they should do, so every path (including the odd ones: stale results, adapter
/// and bluetoothd outages, stop in the middle of a connect) is tested by driving it directly.
///
/// Invariants:
/// - the connect slot is released on every way out of `waitingForSlot` and `connecting`;
/// - availability is published on every change and only then;
/// - a result carrying another generation than the current one changes nothing (a late slot grant is given back);
/// - an event that makes no sense in the current state is ignored.
public struct SessionMachine: Sendable {
    public let policy: ReconnectPolicy
    public private(set) var state: SessionState = .stopped
    public private(set) var generation: SessionGeneration = 0
    /// Failures since the last stable connection; numbers the retries.
    public private(set) var attempt = 0
    public private(set) var bluezPresent = true
    public private(set) var adapterPowered = false
    public private(set) var deviceKnown = false
    /// The last `Connected` value seen.
    public private(set) var linkUp = false
    public private(set) var availability = AvailabilityTracker()
    /// The device's `pairing` is not `none`: an unpaired device is paired before it is connected (docs/pairing.md).
    public let pairingRequired: Bool
    /// The last `Paired` value seen (false while the device object is unknown).
    public private(set) var devicePaired = false
    /// Fleet (docs/fleet.md): false while another bridge owns the device. The session then only discovers (so adverts
    /// keep reporting RSSI for a takeover), never connects, and publishes no availability: the owner speaks for it.
    public private(set) var connectAllowed = true
    private var onlineSince: ContinuousClock.Instant?
    private let jitter: @Sendable () -> Double

    /// `jitter` returns a value in [-1, 1] for each scheduled retry; inject a constant for deterministic tests.
    public init(policy: ReconnectPolicy = .standard, pairing: Bool = false,
                jitter: @escaping @Sendable () -> Double = { Double.random(in: -1...1) }) {
        self.policy = policy
        self.pairingRequired = pairing
        self.jitter = jitter
    }

    public var isOnline: Bool { state == .online }

    /// Feeds one event; returns what to do, in order. `now` only matters when an online session fails (to tell a
    /// stable connection from a flapping one).
    public mutating func handle(_ event: SessionEvent, now: ContinuousClock.Instant = .now) -> [SessionAction] {
        var out: [SessionAction] = []
        switch event {
        case .start:
            guard state == .stopped else { break }
            publish(false, &out)
            proceed(&out)

        case .stop:
            guard state != .stopped else { break }
            tearDown(reason: "stopped", disconnect: true, &out)
            newGeneration()
            attempt = 0
            state = .stopped

        case .adapterAvailable(let powered):
            bluezPresent = true
            adapterPowered = powered
            if !powered {
                lose(reason: "adapter powered off", &out)
            } else if state == .waitingForAdapter {
                proceed(&out)
            }

        case .adapterGone:
            adapterPowered = false
            deviceKnown = false
            linkUp = false
            lose(reason: "adapter removed", &out)

        case .bluezAvailable:
            bluezPresent = true

        case .bluezGone:
            bluezPresent = false
            adapterPowered = false
            deviceKnown = false
            devicePaired = false
            linkUp = false
            lose(reason: "bluetoothd gone", &out)

        case .deviceFound:
            deviceKnown = true
            if state == .discovering && connectAllowed {
                out.append(.stopDiscovery)
                startAttempt(&out)
            }

        case .deviceGone:
            deviceKnown = false
            devicePaired = false
            switch state {
            case .waitingForSlot:
                out.append(.releaseConnectSlot(generation))
                startDiscovering(&out)
            case .pairing, .connecting, .resolvingServices, .subscribing, .online:
                fail(.deviceGone, now: now, &out)
            default:
                break
            }

        case .connectSlotGranted(let g):
            if state == .waitingForSlot && g == generation && pairingRequired && !devicePaired {
                // Pair connects by itself and holds the slot until the link is up.
                state = .pairing
                out.append(.pair(g, timeout: policy.pairTimeout))
            } else if state == .waitingForSlot && g == generation {
                state = .connecting
                out.append(.connect(g, timeout: policy.connectTimeout))
            } else if !((state == .connecting || state == .pairing) && g == generation) {
                out.append(.releaseConnectSlot(g))    // a grant nobody waits for any more must not keep the slot
            }

        case .connectSucceeded(let g):
            if state == .connecting && g == generation {
                linkUp = true
                state = .resolvingServices
                out.append(.releaseConnectSlot(g))
                out.append(.resolveServices(g, timeout: policy.resolveTimeout))
            } else if g != generation, state == .stopped || state.isBackoff {
                out.append(.disconnect)               // a connect we gave up on succeeded late: drop that link
            }

        case .paired(let paired):
            devicePaired = paired

        case .pairSucceeded(let g):
            if state == .pairing && g == generation {
                devicePaired = true
                state = .connecting
                out.append(.connect(g, timeout: policy.connectTimeout))
            } else if g != generation, state == .stopped || state.isBackoff {
                out.append(.disconnect)               // a pairing we gave up on succeeded late: drop its link
            }

        case .connected:
            linkUp = true

        case .disconnected:
            linkUp = false
            if state == .resolvingServices || state == .subscribing || state == .online {
                fail(.linkLost, now: now, &out)
            }

        case .servicesResolved(let g):
            guard state == .resolvingServices && g == generation else { break }
            state = .subscribing
            out.append(.subscribeChannels(g))

        case .subscribed(let g):
            guard state == .subscribing && g == generation else { break }
            state = .online
            onlineSince = now
            publish(true, &out)
            out += [.emitEvent(.connected), .readChannelsOnce, .startPolling, .flushPendingCommands]

        case .failure(let kind, let g):
            guard state.acceptsFailures && g == generation else { break }
            fail(kind, now: now, &out)

        case .backoffElapsed(let g):
            guard case .backoff(let next) = state, g == generation else { break }
            perform(next, &out)

        case .ownership(let owned):
            ownership(owned, &out)
        }
        return out
    }

    /// Giving a device up tears its link down as its owner (publishing `offline` while still the one who speaks for
    /// it), then keeps discovering; `confirmRelease` follows the disconnect so the next owner finds the device free.
    /// Taking it says `offline` until connected (the previous owner's `online` may still be retained) and connects.
    private mutating func ownership(_ owned: Bool, _ out: inout [SessionAction]) {
        guard owned != connectAllowed else { return }
        if owned {
            connectAllowed = true
            guard state != .stopped else { return }
            publish(false, &out)
            if state == .discovering && deviceKnown {
                out.append(.stopDiscovery)
                startAttempt(&out)
            }
            return
        }
        switch state {
        case .stopped, .waitingForAdapter, .discovering:
            connectAllowed = false
        default:
            tearDown(reason: "another bridge owns the device", disconnect: true, &out)
            connectAllowed = false
            attempt = 0
            proceed(&out)
        }
        if state != .stopped { out.append(.confirmRelease) }
    }

    // MARK: - Transitions

    /// Moves on from a resting state: connect if the device object is known, else discover it; or wait for the adapter.
    private mutating func proceed(_ out: inout [SessionAction]) {
        guard bluezPresent && adapterPowered else {
            newGeneration()
            state = .waitingForAdapter
            return
        }
        if deviceKnown && connectAllowed { startAttempt(&out) } else { startDiscovering(&out) }
    }

    private mutating func startAttempt(_ out: inout [SessionAction]) {
        newGeneration()
        state = .waitingForSlot
        out.append(.requestConnectSlot(generation))
    }

    private mutating func startDiscovering(_ out: inout [SessionAction]) {
        newGeneration()
        state = .discovering
        out.append(.startDiscovery)
    }

    /// The adapter or bluetoothd went away: nothing to disconnect (the link is gone with it), nothing to back off from.
    private mutating func lose(reason: String, _ out: inout [SessionAction]) {
        guard state != .stopped && state != .waitingForAdapter else { return }
        tearDown(reason: reason, disconnect: false, &out)
        newGeneration()
        attempt = 0
        state = .waitingForAdapter
    }

    private mutating func fail(_ kind: FailureKind, now: ContinuousClock.Instant, _ out: inout [SessionAction]) {
        let rule = policy.rule(for: kind)
        let wasOnline = state == .online
        if wasOnline, let since = onlineSince, now - since >= policy.stableAfter { attempt = 0 }
        // A failed Connect leaves no link, but one that timed out is still pending in bluetoothd: cancel it.
        let cut = state == .connecting ? kind == .connectTimeout : state.hasLink && !kind.meansLinkGone
        tearDown(reason: kind.description, disconnect: cut, &out)
        if !wasOnline { out.append(.emitEvent(.error(message: kind.description))) }

        switch kind {
        case .deviceGone: deviceKnown = false
        case .linkLost, .notConnected: linkUp = false
        case .adapterOff: adapterPowered = false
        case .adapterMissing: adapterPowered = false; deviceKnown = false; linkUp = false
        case .bluezGone: bluezPresent = false; adapterPowered = false; deviceKnown = false; linkUp = false
        default: break
        }

        switch rule.then {
        case .waitForAdapter, .waitForBlueZ:
            // Only an event can end this wait, so the machine's knowledge must say what it waits for.
            adapterPowered = false
            if rule.then == .waitForBlueZ { bluezPresent = false }
            attempt = 0
            newGeneration()
            state = .waitingForAdapter
        case .retryConnect, .rediscover, .removeDeviceAndRediscover:
            attempt += 1
            if rule.then != .retryConnect { deviceKnown = false }
            let delay = rule.delay(attempt: attempt, jitter: jitter()) ?? .zero
            out.append(.emitEvent(.reconnectAttempt(attempt: attempt, delay: delay)))
            newGeneration()
            if delay <= .zero {
                perform(rule.then, &out)
            } else {
                state = .backoff(rule.then)
                out.append(.scheduleBackoff(delay, generation))
            }
        }
    }

    private mutating func perform(_ next: RetryRule.Next, _ out: inout [SessionAction]) {
        switch next {
        case .retryConnect, .rediscover:
            proceed(&out)
        case .removeDeviceAndRediscover:
            out.append(.removeDevice)
            deviceKnown = false
            proceed(&out)
        case .waitForAdapter, .waitForBlueZ:
            newGeneration()
            state = .waitingForAdapter
        }
    }

    /// Undoes whatever the current state holds or runs, and publishes offline.
    private mutating func tearDown(reason: String, disconnect: Bool, _ out: inout [SessionAction]) {
        switch state {
        case .stopped, .waitingForAdapter:
            break
        case .discovering:
            out.append(.stopDiscovery)
        case .waitingForSlot:
            out.append(.releaseConnectSlot(generation))
        case .connecting, .pairing:
            out.append(.releaseConnectSlot(generation))
            if disconnect { out.append(.disconnect) }
        case .resolvingServices, .subscribing:
            if disconnect { out.append(.disconnect) }
        case .online:
            out.append(.stopPolling)
            if disconnect { out.append(.disconnect) }
            out.append(.emitEvent(.disconnected(reason: reason)))
        case .backoff:
            out.append(.cancelBackoff)
        }
        onlineSince = nil
        publish(false, &out)
    }

    private mutating func publish(_ online: Bool, _ out: inout [SessionAction]) {
        guard connectAllowed else { return }
        if let value = availability.update(online) { out.append(.publishAvailability(value)) }
    }

    private mutating func newGeneration() {
        generation &+= 1
    }
}

extension SessionState {
    var isBackoff: Bool {
        if case .backoff = self { true } else { false }
    }
}

extension FailureKind {
    /// Failures after which there is no link (or no bluetoothd) to disconnect.
    var meansLinkGone: Bool {
        switch self {
        case .deviceGone, .linkLost, .adapterOff, .adapterMissing, .bluezGone, .serviceUnknown: true
        default: false
        }
    }
}
