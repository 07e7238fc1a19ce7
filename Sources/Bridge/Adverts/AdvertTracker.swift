import Adverts
import Bluetooth
import Config

/// The passive half of the bridge (docs/adverts.md): broadcasts in, what to publish out. Pure: no I/O, the time is
/// passed in; `AdvertFeature` performs the actions. The rules:
///
/// - Who is tracked: every device of the config with `advert:`, by address; an unsaved address only when its
///   broadcast is in one of `adverts.auto`'s formats and fewer than `auto_limit` auto devices are tracked. Anything
///   else is dropped without a trace: the state is one `Advertiser` per configured device plus at most `auto_limit`,
///   however many addresses are heard (no per-address memory for strangers, not even for rate limits).
/// - A broadcast publishes nothing unless it decodes: a malformed one, or one that cannot be decrypted, never yields
///   a value. A missing or wrong bindkey is reported (`error`) at once, then at most once an hour per device, and so
///   is a plaintext frame from a keyed Xiaomi device (unless `allow_plaintext`): anyone can send one.
/// - An encrypted broadcast is believed only when its counter is above every counter accepted under the device's
///   key (`ReplayLedger`, saved by the feature and restored at start); a counter that went back is not believed and
///   is reported (`counterWentBack`) at once, then at most once an hour per device, until `rearm`.
/// - One broadcast is published once: the same bytes again within `repeatWindow` (a second adapter, or the device
///   repeating its advertisement) are ignored, and so is a packet id or frame counter seen in the last minute
///   (`AdvertDeduplicator`), and, for a broadcast without either, the bytes last decoded (BlueZ repeats them).
///   Readings are published only when their value changed; events every time they happen.
/// - Availability (passive devices only; a device with channels has its session's): `online` on the first decoded
///   broadcast while not online, `offline` after `timeout` without one (`expire`). RSSI (passive devices): on a
///   change of `rssiStep` dB, else at most once a `rssiPeriod`.
/// - An entity (reading or event name) is announced (`discovery`) when first heard, and again when its event types
///   grow; `announce()` repeats them all (Home Assistant's birth).
/// - Only a device this bridge speaks for publishes (owned and not held; without a fleet every device is owned).
///   The state of the others is kept current, so a device taken over says everything it knows at once.
public struct AdvertTracker: Sendable {
    public static let repeatWindow: Duration = .seconds(2)
    public static let rssiStep = 5
    public static let rssiPeriod: Duration = .seconds(60)
    public static let errorPeriod: Duration = .seconds(3600)

    public private(set) var settings = AdvertSettings()
    private var fleet = false
    private var advertisers: [BluetoothAddress: Advertiser] = [:]
    /// Configured devices without `advert:`: never taken for unsaved broadcasters.
    private var connectedOnly: Set<BluetoothAddress> = []
    /// The encryption counters' marks, per address and key.
    public private(set) var ledger = ReplayLedger()
    /// The deduplicator counts seconds; this is their zero.
    private var origin: ContinuousClock.Instant?

    public init() {}

    /// Devices tracked, configured and auto (the whole per-address state).
    public var trackedCount: Int { advertisers.count }
    public var autoCount: Int { advertisers.values.filter(\.auto).count }

    /// The earliest time `expire` has something to do.
    public var nextDeadline: ContinuousClock.Instant? {
        advertisers.values.compactMap { $0.online == true ? $0.lastHeard.map { $0 + settings.timeout } : nil }.min()
    }

    // MARK: Inputs

    /// At start, the marks saved before (before the first `configure`, which keeps those of configured keys).
    public mutating func restore(_ ledger: ReplayLedger) {
        self.ledger = ledger
    }

    /// The device named `name` counts from zero again (docs/adverts.md, "Re-arming"): its marks are forgotten, so its
    /// next encrypted broadcast is believed whatever its counter. False for a name that is no passive device.
    public mutating func rearm(_ name: String) -> [AdvertAction]? {
        guard let address = advertisers.first(where: { $0.value.device.name == name })?.key,
              var advertiser = advertisers[address] else { return nil }
        ledger.rearm(address: address.description)
        advertiser.lastBroadcast = nil
        advertiser.lastDecoded = nil
        advertiser.lastWentBack = nil
        advertiser.deduplicator = AdvertDeduplicator()
        advertisers[address] = advertiser
        return [.countersChanged(advertiser.device)]
    }

    /// At start and after every config change. Unchanged devices keep their state, removed ones are forgotten, an
    /// auto device the core has not added yet is kept (its add is under way).
    public mutating func configure(settings: AdvertSettings, devices: [DeviceConfig], fleet: Bool) -> [AdvertAction] {
        self.settings = settings
        let fleetChanged = fleet != self.fleet
        self.fleet = fleet
        connectedOnly = Set(devices.filter { $0.advert == nil }.map(\.address))
        var next: [BluetoothAddress: Advertiser] = [:]
        for device in devices where device.advert != nil {
            if var known = advertisers[device.address], known.device == device {
                known.device = device
                known.confirmed = true
                known.auto = device.source.kind == .advert
                next[device.address] = known
            } else {
                next[device.address] = Advertiser(device: device, auto: device.source.kind == .advert, confirmed: true,
                                                  owned: !fleet)
            }
        }
        for (address, known) in advertisers where next[address] == nil && known.auto && !known.confirmed
            && !known.refused && settings.enabled && known.formats.isSubset(of: Set(settings.auto)) {
            next[address] = known
        }
        let keyed = Set(next.values.compactMap(\.counterEntry))
        let marks = ledger.marks.count
        ledger.keep(keyed)
        var out: [AdvertAction] = []
        if ledger.marks.count != marks, let device = next.values.first?.device { out.append(.countersChanged(device)) }
        if fleetChanged {
            for address in next.keys.sorted() {
                let wasSpeaking = next[address]!.speaking
                next[address]!.owned = !fleet
                next[address]!.held = false
                if !wasSpeaking, next[address]!.speaking {
                    out += next[address]!.everything(discovery: true, states: true)
                }
            }
        }
        advertisers = next
        return out
    }

    /// The core refused to add an auto device (`addAutoDevice`): it is not asked for again until the next config.
    public mutating func autoRefused(_ address: BluetoothAddress) {
        advertisers[address]?.refused = true
    }

    /// Fleet: this bridge took (`owned`) or gave up the device named `name`.
    public mutating func ownership(_ name: String, owned: Bool) -> [AdvertAction] {
        update(name) { $0.owned = owned }
    }

    /// Fleet: an owned device is held (its availability is not said until the hold ends).
    public mutating func held(_ name: String, _ held: Bool) -> [AdvertAction] {
        update(name) { $0.held = held }
    }

    /// Repeats what the broker should hold (after a reconnect): entities with `discovery`, and with `states` the
    /// availability, RSSI and last readings of every device this bridge speaks for.
    public func republish(discovery: Bool = false, states: Bool = true) -> [AdvertAction] {
        advertisers.keys.sorted().flatMap { address in
            let advertiser = advertisers[address]!
            return advertiser.speaking ? advertiser.everything(discovery: discovery, states: states) : []
        }
    }

    /// Every entity again (Home Assistant announced itself online).
    public func announce() -> [AdvertAction] { republish(discovery: true, states: false) }

    /// Devices silent for `timeout` go offline (a beacon: `not_home`).
    public mutating func expire(now: ContinuousClock.Instant) -> [AdvertAction] {
        var out: [AdvertAction] = []
        for address in advertisers.keys.sorted() {
            guard var advertiser = advertisers[address], advertiser.online == true, let heard = advertiser.lastHeard,
                  now - heard >= settings.timeout else { continue }
            advertiser.online = false
            if advertiser.speaking, !advertiser.connects { out.append(.availability(advertiser.device, online: false)) }
            if advertiser.entities[AdvertPayloads.presence] == .presence {
                set(AdvertPayloads.presence, "not_home", on: &advertiser, &out)
            }
            advertisers[address] = advertiser
        }
        return out
    }

    /// One advertisement one adapter heard.
    public mutating func heard(_ heard: HeardBroadcast, now: ContinuousClock.Instant) -> [AdvertAction] {
        guard settings.enabled else { return [] }
        var out: [AdvertAction] = []
        var broadcast = heard.broadcast
        if broadcast.address == nil { broadcast.address = heard.address }
        var advertiser: Advertiser
        // Taken out of the table while it changes, so that its arrays (the deduplicator's packet ids) are not shared
        // with the table's copy and change in place instead of being copied for every broadcast.
        if let known = advertisers.removeValue(forKey: heard.address) {
            guard !known.refused else {
                advertisers[heard.address] = known
                return []
            }
            advertiser = known
        } else {
            guard let new = admitAuto(broadcast, address: heard.address) else { return [] }
            advertiser = new
            out.append(.addAutoDevice(new.device))
        }
        defer { advertisers[heard.address] = advertiser }

        if let last = advertiser.lastBroadcast, last.broadcast == broadcast, now - last.at < Self.repeatWindow {
            guard last.decoded else { return out }
            advertiser.lastHeard = now
            noteRSSI(heard.rssi, now: now, on: &advertiser, &out)
            return out
        }
        let result: AdvertResult
        do {
            result = try AdvertDecoder.decode(broadcast, trying: advertiser.device.advert?.ordered ?? [],
                                              bindkey: advertiser.device.bindkey?.bytes)
        } catch {
            advertiser.lastBroadcast = (broadcast, now, false)
            if Self.isKeyProblem(error), advertiser.speaking,
               advertiser.admitError(now: now, period: Self.errorPeriod) {
                out.append(.error(advertiser.device, reason: error.description))
            }
            return out
        }
        if result.encryptionCounter == nil, advertiser.device.bindkey != nil, !advertiser.device.allowPlaintext {
            // A plaintext MiBeacon frame with a keyed device's address: anyone can send one (BTHome's decoder refuses
            // it already).
            advertiser.lastBroadcast = (broadcast, now, false)
            if advertiser.speaking, advertiser.admitError(now: now, period: Self.errorPeriod) {
                out.append(.error(advertiser.device, reason: AdvertError.unencryptedWithBindkey.description))
            }
            return out
        }
        var counterMoved = false, counterRepeated = false
        if let counter = result.encryptionCounter, let entry = advertiser.counterEntry {
            switch ledger.admit(counter, under: entry) {
            case .fresh:
                counterMoved = true
            case .repeated:
                counterRepeated = true
            case .wentBack(let mark):
                advertiser.lastBroadcast = (broadcast, now, false)
                if advertiser.speaking, advertiser.admitWentBack(now: now, period: Self.errorPeriod) {
                    out.append(.counterWentBack(advertiser.device, counter: counter, mark: mark))
                }
                return out
            }
        }
        advertiser.lastBroadcast = (broadcast, now, true)
        // BlueZ reports a device's cached data again with every RSSI change: without a packet id or counter, the
        // bytes last decoded are the same broadcast however late they come (a button press is not pressed again).
        let sameAsLast = advertiser.lastDecoded == broadcast
        advertiser.lastDecoded = broadcast
        advertiser.lastHeard = now
        if advertiser.online != true {
            advertiser.online = true
            if advertiser.speaking, !advertiser.connects { out.append(.availability(advertiser.device, online: true)) }
        }
        noteRSSI(heard.rssi, now: now, on: &advertiser, &out)
        if result.format.isBeacon {
            // Presence is being heard, whatever the bytes: a beacon sends the same ones all its life.
            announce(.presence, on: &advertiser, &out)
            set(AdvertPayloads.presence, "home", on: &advertiser, &out)
        }
        if counterMoved { out.append(.countersChanged(advertiser.device)) }
        guard !counterRepeated, !sameAsLast || result.packetID != nil || result.encryptionCounter != nil,
              advertiser.deduplicator.admit(result, now: seconds(now)) == .fresh else { return out }
        publish(result, on: &advertiser, &out)
        return out
    }

    // MARK: Rules

    /// Errors that mean the key, not the bytes: reported to the user, who can fix them.
    static func isKeyProblem(_ error: AdvertError) -> Bool {
        switch error {
        case .bindkeyNeeded, .badBindkey, .decryptionFailed, .unencryptedWithBindkey: true
        case .notRecognised, .malformed, .unsupported, .addressNeeded: false
        }
    }

    /// An unsaved broadcaster becomes an auto device when there is room and its broadcast is in an `auto` format:
    /// it decodes, or is encrypted (it can be adopted with a bindkey). Junk that merely carries the UUID does not.
    private func admitAuto(_ broadcast: Broadcast, address: BluetoothAddress) -> Advertiser? {
        guard !settings.auto.isEmpty, !connectedOnly.contains(address), autoCount < settings.autoLimit else { return nil }
        for format in AdvertDecoder.order where settings.auto.contains(format) {
            do {
                _ = try AdvertDecoder.decode(broadcast, as: format)
            } catch .bindkeyNeeded {
            } catch {
                continue
            }
            let device = DeviceConfig(name: "\(format.rawValue)-\(address.withoutColons.lowercased())", address: address,
                                      channels: [], source: DeviceSource(kind: .advert, file: "", line: 0),
                                      advert: .format(format))
            return Advertiser(device: device, auto: true, confirmed: false, owned: !fleet)
        }
        return nil
    }

    private func noteRSSI(_ rssi: Int?, now: ContinuousClock.Instant, on advertiser: inout Advertiser,
                          _ out: inout [AdvertAction]) {
        guard let rssi, !advertiser.connects,
              advertiser.admitRSSI(rssi, now: now, step: Self.rssiStep, period: Self.rssiPeriod) else { return }
        if advertiser.speaking { out.append(.rssi(advertiser.device, rssi)) }
    }

    private func publish(_ result: AdvertResult, on advertiser: inout Advertiser, _ out: inout [AdvertAction]) {
        for measurement in result.measurements {
            guard let payload = AdvertPayloads.payload(measurement.value) else { continue }
            let name = sanitizeTopicLevel(measurement.name)
            guard !advertiser.reserves(name), !(result.format.isBeacon && name == AdvertPayloads.presence) else {
                continue
            }
            announce(.measurement(name: name, unit: measurement.unit, kind: AdvertPayloads.kind(measurement.value)),
                     on: &advertiser, &out)
            set(name, payload, on: &advertiser, &out)
        }
        for event in result.events {
            let name = sanitizeTopicLevel(event.name)
            guard !advertiser.reserves(name) else { continue }
            var types = AdvertEventTypes.types(of: event.name)
            if case .event(_, let known)? = advertiser.entities[name] {
                types = known + types.filter { !known.contains($0) }
            }
            if !types.contains(event.type) { types.append(event.type) }
            announce(.event(name: name, types: types), on: &advertiser, &out)
            if advertiser.speaking {
                out.append(.event(advertiser.device, name: name, payload: AdvertPayloads.event(event)))
            }
        }
    }

    private func announce(_ entity: AdvertEntity, on advertiser: inout Advertiser, _ out: inout [AdvertAction]) {
        guard advertiser.entities[entity.name] != entity else { return }
        advertiser.entities[entity.name] = entity
        if advertiser.speaking { out.append(.discovery(advertiser.device, entity)) }
    }

    private func set(_ name: String, _ payload: String, on advertiser: inout Advertiser, _ out: inout [AdvertAction]) {
        guard advertiser.values[name] != payload else { return }
        advertiser.values[name] = payload
        if advertiser.speaking { out.append(.measurement(advertiser.device, name: name, payload: payload)) }
    }

    private mutating func update(_ name: String, _ change: (inout Advertiser) -> Void) -> [AdvertAction] {
        guard let address = advertisers.first(where: { $0.value.device.name == name })?.key,
              var advertiser = advertisers[address] else { return [] }
        let wasSpeaking = advertiser.speaking
        change(&advertiser)
        advertisers[address] = advertiser
        guard !wasSpeaking, advertiser.speaking else { return [] }
        return advertiser.everything(discovery: true, states: true)
    }

    private mutating func seconds(_ now: ContinuousClock.Instant) -> Double {
        let origin = self.origin ?? now
        self.origin = origin
        let elapsed = (now - origin).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }
}
