import ESPHomeAPI

/// Advertisements waiting to be sent, as ESPHome batches them: at most 16 per message, a batch sent when full or
/// when its first advertisement has waited `flushDelay`. Holds at most one batch: a full one is handed out at once.
package struct AdvertisementBatch {
    package static let capacity = 16
    package static let flushDelay: Duration = .milliseconds(100)

    private(set) var pending: [APIMessage.RawAdvertisement] = []

    package init() {}

    package var isEmpty: Bool { pending.isEmpty }

    /// Adds `advertisement`; returns a full batch to send now, if this one filled it.
    package mutating func add(_ advertisement: APIMessage.RawAdvertisement) -> [APIMessage.RawAdvertisement]? {
        if pending.isEmpty { pending.reserveCapacity(Self.capacity) }
        pending.append(advertisement)
        guard pending.count >= Self.capacity else { return nil }
        return take()
    }

    /// Whatever waits, to send now (the flush timer fired).
    package mutating func take() -> [APIMessage.RawAdvertisement] {
        defer { pending = [] }
        return pending
    }
}
