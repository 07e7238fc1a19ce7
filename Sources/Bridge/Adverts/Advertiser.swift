import Adverts
import BridgeModel
import Config

/// What `AdvertTracker` remembers of one broadcaster: a saved device with `advert:`, or an `auto` one. Its size is
/// bounded by what the decoders can name (a few dozen readings), never by how often or how much it broadcasts.
struct Advertiser: Sendable {
    var device: DeviceConfig
    /// Unsaved, heard in an `adverts.auto` format: counts against `auto_limit`.
    var auto: Bool
    /// In the running config. An auto device is tracked from its first broadcast on, before the core has added it.
    var confirmed: Bool
    /// The core would not add this auto device (its name was taken): kept only to count against the limit and to
    /// stop asking again, until the next config.
    var refused = false
    /// Fleet (docs/fleet.md): only the owner publishes; without a fleet every device is owned.
    var owned: Bool
    /// Fleet: owned but not to be said until the hold ends (`CoreEvent.held`).
    var held = false

    var deduplicator = AdvertDeduplicator()
    /// Where the device's encryption counters are judged (`ReplayLedger`): its address and key; nil without a key.
    var counterEntry: ReplayLedger.Entry?
    /// The last `counterWentBack` report: the first at once, then at most one a `period`.
    var lastWentBack: ContinuousClock.Instant?
    /// The last broadcast heard, when, and whether it decoded: the same bytes again soon after (a second adapter,
    /// or the device repeating its advertisement) are one broadcast.
    var lastBroadcast: (broadcast: Broadcast, at: ContinuousClock.Instant, decoded: Bool)?
    /// The last broadcast that decoded, and when: availability counts from it.
    var lastDecoded: Broadcast?
    var lastHeard: ContinuousClock.Instant?
    /// The last broadcast of any kind (decoded or not): an auto device silent this long leaves.
    var lastSeen: ContinuousClock.Instant?
    /// nil until the first decoded broadcast.
    var online: Bool?
    /// The last payload of each reading (by topic level), as published or to publish when the device is owned.
    var values: [String: String] = [:]
    /// Every entity heard so far, by topic level.
    var entities: [String: AdvertEntity] = [:]
    /// The RSSI last published and when.
    var rssi: (value: Int, at: ContinuousClock.Instant)?
    var lastError: ContinuousClock.Instant?
    /// Readings and events dropped by the bounds (`AdvertTracker.maxEntitiesPerDevice`, `maxRepeats`); reported once.
    var dropped = 0

    init(device: DeviceConfig, auto: Bool, confirmed: Bool, owned: Bool) {
        self.device = device
        self.auto = auto
        self.confirmed = confirmed
        self.owned = owned
        counterEntry = Self.counterEntry(of: device)
    }

    static func counterEntry(of device: DeviceConfig) -> ReplayLedger.Entry? {
        guard let key = device.bindkey, let fingerprint = KeyFingerprint(key: key.bytes) else { return nil }
        return ReplayLedger.Entry(address: device.address.description, key: fingerprint)
    }

    /// What this bridge may say about the device now.
    var speaking: Bool { owned && !held }
    /// A device with channels also connects: its availability and RSSI are its session's.
    var connects: Bool { !device.channels.isEmpty }

    /// The formats its broadcasts are read as.
    var formats: Set<AdvertFormat> { device.advert?.formats ?? [] }

    /// Topic levels a reading must not take: the device's channels (a channel wins over a reading of the same
    /// name) and the topics the bridge keeps for every device. Compared, not looked up in a set built for every
    /// broadcast (docs/dev/MEMORY.md).
    func reserves(_ level: String) -> Bool {
        level == "availability" || level == "rssi" || level == "owner"
            || device.channels.contains { $0.topicLevel == level }
    }

    /// An RSSI is published when it moved by `step` dB or more, else at most once a `period`: BlueZ reports one
    /// with every advertisement, and a reading a second that jitters by 1 dB is noise, not news.
    mutating func admitRSSI(_ value: Int, now: ContinuousClock.Instant, step: Int, period: Duration) -> Bool {
        if let last = rssi {
            guard value != last.value else { return false }
            guard abs(value - last.value) >= step || now - last.at >= period else { return false }
        }
        rssi = (value, now)
        return true
    }

    /// The undecryptable error: the first at once, then at most one a `period`.
    mutating func admitError(now: ContinuousClock.Instant, period: Duration) -> Bool {
        if let last = lastError, now - last < period { return false }
        lastError = now
        return true
    }

    /// A counter that went back: the first report at once, then at most one a `period`.
    mutating func admitWentBack(now: ContinuousClock.Instant, period: Duration) -> Bool {
        if let last = lastWentBack, now - last < period { return false }
        lastWentBack = now
        return true
    }

    /// Everything this bridge says about the device, in order: entities, availability, RSSI, readings. For a
    /// device this bridge starts speaking for, and after a broker reconnect.
    func everything(discovery: Bool, states: Bool) -> [AdvertAction] {
        var out: [AdvertAction] = []
        if discovery {
            out += entities.keys.sorted().compactMap { entities[$0].map { .discovery(device, $0) } }
        }
        guard states else { return out }
        if !connects {
            if let online { out.append(.availability(device, online: online)) }
            if let rssi { out.append(.rssi(device, rssi.value)) }
        }
        out += values.keys.sorted().compactMap { name in values[name].map { .measurement(device, name: name, payload: $0) } }
        return out
    }
}
