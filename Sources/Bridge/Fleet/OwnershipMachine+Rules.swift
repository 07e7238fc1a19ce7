/// The rules behind `handle`: who counts as a live owner, when to claim, ask or hand over, and what to publish.
extension OwnershipMachine {
    var ownerLive: Bool {
        guard let record else { return false }
        return record.bridge == id ? state == .owned : live.contains(record.bridge)
    }

    mutating func fired(_ timer: OwnershipTimer, now: ContinuousClock.Instant, unixNow: Int64,
                                _ out: inout [OwnershipAction]) {
        switch timer {
        case .listen:
            let wasOwned = listeningWhileOwned
            listeningWhileOwned = false
            if wasOwned {
                if let record, record.bridge != id, live.contains(record.bridge) {
                    // Someone took the device while we were cut off (our will fired): theirs now, released silently
                    // (the hold stays until this bridge owns the device again).
                    state = .idle
                    out.append(.own(false))
                    break
                }
                out.append(.hold(false))
                if record?.bridge != id || record?.rssi != reportedRSSI {
                    // Lost with the broker's retained state, or naming a dead bridge: ours, said again.
                    let since = record?.bridge == id ? record?.since ?? unixNow : unixNow
                    publishRecord(rssi: reportedRSSI, since: since, now: now, &out)
                }
                break
            }
            guard state == .listening else { break }
            state = .idle
            if let record, record.bridge == id {
                claim(unixNow: unixNow, now: now, &out)
            } else {
                considerClaim(&out)
                sighted(now: now, unixNow: unixNow, &out)
            }

        case .claim:
            guard claimPending else { break }
            claimPending = false
            guard state == .idle, brokerUp, !ownerLive, rssi != nil, hasRoom else { break }
            claim(unixNow: unixNow, now: now, &out)

        case .settle:
            guard state == .claiming else { break }
            if record?.bridge == id {
                state = .owned
                yieldedTo = nil
                out.append(.own(true))
                owned(&out)
            } else {
                state = .idle
                considerClaim(&out)
            }

        case .handover:
            guard state == .idle, brokerUp, hasRoom, let since = strongerSince, now - since >= handoverAfter,
                  let rssi, let record, ownerLive, rssi >= record.rssi + Self.handoverMargin else { break }
            strongerSince = nil
            state = .requested
            out.append(.requestHandover(rssi: rssi))
            arm(.requestExpired, after: Self.requestTimeout, &out)

        case .requestExpired:
            guard state == .requested else { break }
            state = .idle
            sighted(now: now, unixNow: unixNow, &out)

        case .unreachable:
            guard state == .owned, !linkUp, !unreachable else { break }
            if listeningWhileOwned {
                arm(.unreachable, after: Self.listenTime, &out)   // decided once the retained state is known
                break
            }
            unreachable = true
            let since = record?.bridge == id ? record?.since ?? unixNow : unixNow
            publishRecord(rssi: reportedRSSI, since: since, now: now, &out)
        }
    }

    mutating func recordChanged(from previous: OwnerRecord?, now: ContinuousClock.Instant, unixNow: Int64,
                                        _ out: inout [OwnershipAction]) {
        guard let record else {
            // Cleared: an owner says itself again; anyone else may claim.
            if state == .owned { out.append(.publishOwner(OwnerRecord(bridge: id, rssi: reportedRSSI, since: unixNow))) }
            else if state == .idle { considerClaim(&out) }
            return
        }
        if record.bridge == id {
            switch state {
            case .claiming, .owned, .releasing:
                break                                   // our own publish coming back
            case .requested:
                state = .owned                          // the owner released the device to us
                strongerSince = nil
                out.append(.own(true))
                owned(&out)
            case .idle:
                if yieldedTo != nil { break }           // the echo of a claim we yielded; the lower id follows
                claimPending = false
                claim(unixNow: unixNow, now: now, &out)
            case .listening:
                break
            }
            return
        }
        // The hysteresis runs against one owner's reports: a new owner starts it again, a refresh re-checks it.
        if previous?.bridge != record.bridge || (rssi ?? Self.unknownRSSI) < record.rssi + Self.handoverMargin {
            strongerSince = nil
            bump(.handover)
        }
        switch state {
        case .claiming:
            if record.bridge < id, live.contains(record.bridge) {
                state = .idle
                yieldedTo = record.bridge
            } else {
                claim(unixNow: unixNow, now: now, &out)  // the retained last write must be the lower id's
            }
        case .owned:
            if record.bridge < id, live.contains(record.bridge) {
                state = .idle
                out.append(.own(false))
            } else {
                // A higher id, or a bridge that is not live (a forged or stale record): the device stays ours,
                // and the record says so again.
                publishRecord(rssi: reportedRSSI, since: unixNow, now: now, &out)
            }
        case .requested:
            break
        case .idle:
            if record.bridge != yieldedTo { yieldedTo = nil }
            if ownerLive {
                claimPending = false
                bump(.claim)
                sighted(now: now, unixNow: unixNow, &out)   // a weaker report (an unreachable owner) starts the window
            } else {
                considerClaim(&out)
            }
        case .releasing, .listening:
            break
        }
    }

    mutating func sighted(now: ContinuousClock.Instant, unixNow: Int64, _ out: inout [OwnershipAction]) {
        guard let rssi else { return }
        switch state {
        case .owned where !listeningWhileOwned && !unreachable:
            guard let record, record.bridge == id, abs(rssi - record.rssi) >= Self.refreshMargin,
                  lastPublish.map({ now - $0 >= Self.refreshInterval }) ?? true else { break }
            publishRecord(rssi: rssi, since: record.since, now: now, &out)
        case .idle:
            guard ownerLive, let record else {
                considerClaim(&out)
                break
            }
            if hasRoom, rssi >= record.rssi + Self.handoverMargin {
                if strongerSince == nil {
                    strongerSince = now
                    arm(.handover, after: handoverAfter, &out)
                }
            } else {
                strongerSince = nil
                bump(.handover)
            }
        default:
            break
        }
    }

    /// The device became this bridge's: a link not up by `unreachableAfter` makes the owner say it cannot reach it.
    mutating func owned(_ out: inout [OwnershipAction]) {
        unreachable = false
        if linkUp { bump(.unreachable) } else { arm(.unreachable, after: unreachableAfter, &out) }
    }

    /// Arms a claim when nobody live owns the device and this bridge sees it.
    mutating func considerClaim(_ out: inout [OwnershipAction]) {
        guard state == .idle, brokerUp, hasRoom, !ownerLive, !claimPending, let rssi else { return }
        claimPending = true
        arm(.claim, after: Self.claimDelay(rssi: rssi), &out)
    }

    mutating func claim(unixNow: Int64, now: ContinuousClock.Instant, _ out: inout [OwnershipAction]) {
        state = .claiming
        yieldedTo = nil
        let claim = OwnerRecord(bridge: id, rssi: rssi ?? Self.unknownRSSI, since: unixNow)
        record = claim
        lastPublish = now
        out.append(.publishOwner(claim))
        arm(.settle, after: Self.settleTime, &out)
    }

    mutating func publishRecord(rssi: Int, since: Int64, now: ContinuousClock.Instant,
                                        _ out: inout [OwnershipAction]) {
        let mine = OwnerRecord(bridge: id, rssi: rssi, since: since)
        record = mine
        lastPublish = now
        out.append(.publishOwner(mine))
    }

    mutating func arm(_ timer: OwnershipTimer, after delay: Duration, _ out: inout [OwnershipAction]) {
        let token = bump(timer)
        out.append(.schedule(timer, after: delay, token: token))
    }

    @discardableResult
    mutating func bump(_ timer: OwnershipTimer) -> UInt64 {
        let token = (tokens[timer] ?? 0) &+ 1
        tokens[timer] = token
        return token
    }
}
