import ESPHomeAPI

/// The last advertisement of every device BlueZ holds now, for what an ESPHome proxy gives that BlueZ does not:
/// BlueZ reports a device again only when what it advertises changes or its RSSI moves by 8 dBm or more, while
/// Home Assistant expects every packet (it marks a device unseen after 195 s without one) and a client that subscribes
/// later (Home Assistant restarting) expects to hear what is around now. So the proxy sends this cache to a client as
/// it subscribes and to every listening client each `refreshInterval`; a device leaves it when BlueZ drops its object
/// (not heard for a while), so a device gone is not kept alive.
///
/// Bounded (`limit`): past it the device heard longest ago goes.
struct AdvertisementCache {
    static let refreshInterval: Duration = .seconds(60)

    let limit: Int
    /// Each device's last advertisement and when it was heard, as a count (the cache's own clock).
    private var latest: [UInt64: (advertisement: APIMessage.RawAdvertisement, heard: UInt64, adapter: String)] = [:]
    private var clock: UInt64 = 0

    init(limit: Int = 512) {
        self.limit = limit
    }

    var count: Int { latest.count }

    /// One dictionary write per advertisement; the walk for the oldest only when a new device finds the cache full.
    /// `adapter`: the object path of the adapter that heard it (`/org/bluez/hci0`).
    mutating func heard(_ advertisement: APIMessage.RawAdvertisement, adapter: String = "") {
        clock += 1
        latest[advertisement.address] = (advertisement, clock, adapter)
        if latest.count > limit, let oldest = latest.min(by: { $0.value.heard < $1.value.heard })?.key {
            latest[oldest] = nil
        }
    }

    /// The adapter (its object path) that last heard the device: an adapter of the config, where the proxy connects it.
    func adapter(of address: UInt64) -> String? { latest[address]?.adapter }

    mutating func forget(_ address: UInt64) {
        latest[address] = nil
    }

    mutating func clear() {
        latest = [:]
    }

    /// Everything, in messages of at most `AdvertisementBatch.capacity`, least recently heard first.
    var batches: [[APIMessage.RawAdvertisement]] {
        let ordered = latest.values.sorted { $0.heard < $1.heard }.map(\.advertisement)
        return stride(from: 0, to: ordered.count, by: AdvertisementBatch.capacity).map {
            Array(ordered[$0..<min($0 + AdvertisementBatch.capacity, ordered.count)])
        }
    }
}
