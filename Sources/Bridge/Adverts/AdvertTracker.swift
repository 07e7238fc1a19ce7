import Adverts
import Bluetooth
import BridgeModel
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
/// - Bounds (docs/security.md): at most `maxEntitiesPerDevice` readings and events per device, numbered repeats of one
///   BTHome object (`name_1`, `name_2`, …) up to `maxRepeats`, at most `maxAutoEntities` across the auto devices, and
///   new entities at `entityRate` bridge-wide with a burst; beyond, a reading is dropped (counted, reported once per
///   device: `readingsDropped`), or, over the rate, left for a later broadcast. New auto devices are admitted at
///   `autoRate` with a burst, so one radio cannot take every slot in a moment; a full table is reported
///   (`autoTableFull`) at once, then at most hourly.
/// - An auto device silent for `timeout` (heard at all, decoded or not) gives its slot back: it leaves the running
///   config (`removeAutoDevice`), which clears its retained topics.
/// - Only a device this bridge speaks for publishes (owned and not held; without a fleet every device is owned).
///   The state of the others is kept current, so a device taken over says everything it knows at once.
public struct AdvertTracker: Sendable {
    public static let repeatWindow: Duration = .seconds(2)
    public static let rssiStep = 5
    public static let rssiPeriod: Duration = .seconds(60)
    public static let errorPeriod: Duration = .seconds(3600)
    /// A real sensor names a dozen readings; 32 leaves room and keeps a device's Home Assistant configs near 100
    /// with its RSSI and triggers.
    public static let maxEntitiesPerDevice = 32
    /// `name_1` … `name_4`: a packet may carry a few of one object (four buttons, two temperatures), not hundreds.
    public static let maxRepeats = 4
    /// Across the auto devices: with their availability, RSSI and Home Assistant configs, the broker holds a few
    /// thousand retained topics from them at most.
    public static let maxAutoEntities = 1000
    /// New entities bridge-wide: one a `entityInterval`, `entityBurst` at once.
    public static let entityInterval: Duration = .milliseconds(50)
    public static let entityBurst = 40
    /// New auto devices: one a second, `autoBurst` at once.
    public static let autoInterval: Duration = .seconds(1)
    public static let autoBurst = 5

    public private(set) var settings = AdvertSettings()
    private var fleet = false
    private var advertisers: [BluetoothAddress: Advertiser] = [:]
    /// Configured devices without `advert:`: never taken for unsaved broadcasters.
    private var connectedOnly: Set<BluetoothAddress> = []
    private var entityBucket = TokenBucket(capacity: AdvertTracker.entityBurst, interval: AdvertTracker.entityInterval)
    private var autoBucket = TokenBucket(capacity: AdvertTracker.autoBurst, interval: AdvertTracker.autoInterval)
    /// The last `autoTableFull` report.
    private var lastFullReport: ContinuousClock.Instant?
    /// The encryption counters' marks, per address and key.
    public private(set) var ledger = ReplayLedger()
    /// Readings and events dropped by a bound, and broadcasts of unsaved broadcasters not admitted, since start.
    public private(set) var droppedTotal = 0
    public private(set) var refusedTotal = 0
    /// The deduplicator counts seconds; this is their zero.
    private var origin: ContinuousClock.Instant?

    public init() {}

    /// Devices tracked, configured and auto (the whole per-address state).
    public var trackedCount: Int { advertisers.count }
    public var autoCount: Int { advertisers.values.filter(\.auto).count }

    /// Whether a device of this name is tracked, configured or auto (one whose add is under way included).
    public func tracks(_ name: String) -> Bool { advertisers.values.contains { $0.device.name == name } }

    /// The earliest time `expire` has something to do.
    public var nextDeadline: ContinuousClock.Instant? {
        advertisers.values.compactMap { advertiser in
            if advertiser.auto { return advertiser.lastSeen.map { $0 + settings.timeout } }
            return advertiser.online == true ? advertiser.lastHeard.map { $0 + settings.timeout } : nil
        }.min()
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

    /// Devices silent for `timeout` go offline (a beacon: `not_home`); auto devices leave.
    public mutating func expire(now: ContinuousClock.Instant) -> [AdvertAction] {
        var out: [AdvertAction] = []
        for address in advertisers.keys.sorted() {
            if let advertiser = advertisers[address], advertiser.auto, let seen = advertiser.lastSeen,
               now - seen >= settings.timeout {
                advertisers[address] = nil
                if advertiser.confirmed { out.append(.removeAutoDevice(advertiser.device)) }
                continue
            }
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
            guard let new = admitAuto(broadcast, address: heard.address, now: now, &out) else { return out }
            advertiser = new
            out.append(.addAutoDevice(new.device))
        }
        defer { advertisers[heard.address] = advertiser }
        advertiser.lastSeen = now

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
            if announce(.presence, on: &advertiser, now: now, &out) {
                set(AdvertPayloads.presence, "home", on: &advertiser, &out)
            }
        }
        if counterMoved { out.append(.countersChanged(advertiser.device)) }
        guard !counterRepeated, !sameAsLast || result.packetID != nil || result.encryptionCounter != nil,
              advertiser.deduplicator.admit(result, now: seconds(now)) == .fresh else { return out }
        publish(result, on: &advertiser, now: now, &out)
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
    private mutating func admitAuto(_ broadcast: Broadcast, address: BluetoothAddress, now: ContinuousClock.Instant,
                                    _ out: inout [AdvertAction]) -> Advertiser? {
        guard !settings.auto.isEmpty, !connectedOnly.contains(address) else { return nil }
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
            guard autoCount < settings.autoLimit else {
                refusedTotal += 1
                if settings.autoLimit > 0, lastFullReport.map({ now - $0 >= Self.errorPeriod }) ?? true {
                    lastFullReport = now
                    out.append(.autoTableFull(device, limit: settings.autoLimit))
                }
                return nil
            }
            guard autoBucket.take(now: now) else {
                refusedTotal += 1
                return nil
            }
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

    private mutating func publish(_ result: AdvertResult, on advertiser: inout Advertiser, now: ContinuousClock.Instant,
                                  _ out: inout [AdvertAction]) {
        let names = result.format == .bthome ? Set(result.measurements.map(\.name) + result.events.map(\.name)) : []
        for measurement in result.measurements {
            guard let payload = AdvertPayloads.payload(measurement.value) else { continue }
            if Self.repeatBeyondLimit(measurement.name, among: names) {
                drop("more than \(Self.maxRepeats) of one object in a broadcast", on: &advertiser, &out)
                continue
            }
            let name = sanitizeTopicLevel(measurement.name)
            guard !advertiser.reserves(name), !(result.format.isBeacon && name == AdvertPayloads.presence) else {
                continue
            }
            guard announce(.measurement(name: name, unit: measurement.unit, kind: AdvertPayloads.kind(measurement.value)),
                           on: &advertiser, now: now, &out) else { continue }
            set(name, payload, on: &advertiser, &out)
        }
        for event in result.events {
            if Self.repeatBeyondLimit(event.name, among: names) {
                drop("more than \(Self.maxRepeats) of one object in a broadcast", on: &advertiser, &out)
                continue
            }
            let name = sanitizeTopicLevel(event.name)
            guard !advertiser.reserves(name) else { continue }
            var types = AdvertEventTypes.types(of: event.name)
            if case .event(_, let known)? = advertiser.entities[name] {
                types = known + types.filter { !known.contains($0) }
            }
            if !types.contains(event.type) { types.append(event.type) }
            guard announce(.event(name: name, types: types), on: &advertiser, now: now, &out) else { continue }
            if advertiser.speaking {
                out.append(.event(advertiser.device, name: name, payload: AdvertPayloads.event(event)))
            }
        }
    }

    /// False when the entity is new and a bound keeps it out (it is then not published at all).
    private mutating func announce(_ entity: AdvertEntity, on advertiser: inout Advertiser, now: ContinuousClock.Instant,
                                   _ out: inout [AdvertAction]) -> Bool {
        if let known = advertiser.entities[entity.name] {
            guard known != entity else { return true }
        } else {
            guard advertiser.entities.count < Self.maxEntitiesPerDevice else {
                drop("more than \(Self.maxEntitiesPerDevice) readings and events", on: &advertiser, &out)
                return false
            }
            // The advertiser is out of the table while it changes (`heard`): its own entities are added here.
            guard !advertiser.auto || autoEntityCount + advertiser.entities.count < Self.maxAutoEntities else {
                drop("the auto devices have \(Self.maxAutoEntities) readings and events together", on: &advertiser, &out)
                return false
            }
            // Over the rate, nothing is counted: the next broadcast that carries the entity tries again.
            guard entityBucket.take(now: now) else { return false }
        }
        advertiser.entities[entity.name] = entity
        if advertiser.speaking { out.append(.discovery(advertiser.device, entity)) }
        return true
    }

    private var autoEntityCount: Int {
        advertisers.values.reduce(0) { $0 + ($1.auto ? $1.entities.count : 0) }
    }

    private mutating func drop(_ reason: String, on advertiser: inout Advertiser, _ out: inout [AdvertAction]) {
        droppedTotal += 1
        advertiser.dropped += 1
        if advertiser.dropped == 1, advertiser.speaking { out.append(.readingsDropped(advertiser.device, reason: reason)) }
    }

    /// BTHome numbers several objects of one kind in a packet `name_1`, `name_2`, …: a name `<base>_<k>` with k
    /// beyond `maxRepeats` whose `<base>_1` the same broadcast carries is such a repeat (`pm2_5` alone is not).
    static func repeatBeyondLimit(_ name: String, among names: Set<String>) -> Bool {
        guard !names.isEmpty, let underscore = name.lastIndex(of: "_"),
              let k = Int(name[name.index(after: underscore)...]), k > maxRepeats else { return false }
        return names.contains(name[..<underscore] + "_1")
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
