import Bluetooth
import Codecs
import Config
import MQTT

/// Broadcasters' Home Assistant configs this bridge left behind in an earlier run. `HomeAssistantFeature` sweeps its
/// own leftovers by comparing with what the config announces; a broadcaster's entities come from what it was heard
/// to send, so the rule here is by device instead: a retained config under `gattbridge_<ADDRESS>_advert` whose
/// address no configured broadcaster has is stale, unless it is of an auto device that will be added again when
/// heard (named `<format>-<address>`, its format still in `adverts.auto`). Device triggers carry no availability: they
/// go with the entities of their device.
extension HomeAssistantDiscovery {
    /// The components broadcasters' entities use, one filter each: `<prefix>/<component>/+/+/config`.
    var advertConfigFilters: [String] {
        ["sensor", "binary_sensor", "event", "device_automation", "device_tracker"].map {
            "\(discoveryPrefix)/\($0)/+/+/config"
        }
    }

    /// The address of `<prefix>/<component>/gattbridge_<ADDRESS>_advert/<object>/config`; nil for any other topic.
    func advertAddress(_ topic: String) -> BluetoothAddress? {
        guard topic.hasPrefix(discoveryPrefix + "/") else { return nil }
        let levels = topic.dropFirst(discoveryPrefix.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 4, levels[3] == "config", levels[1].hasPrefix("gattbridge_"),
              levels[1].hasSuffix("_advert") else { return nil }
        let hex = levels[1].dropFirst("gattbridge_".count).dropLast("_advert".count)
        guard hex.count == 12, hex.unicodeScalars.allSatisfy(\.properties.isASCIIHexDigit),
              let value = UInt64(hex, radix: 16) else { return nil }
        return BluetoothAddress(rawValue: value)
    }

    /// What a retained config seen at start-up is, if it is a leftover of a broadcaster the config no longer has.
    enum AdvertLeftover: Equatable {
        /// This bridge's (its availability names this bridge's state): to clear.
        case stale(BluetoothAddress)
        /// A device trigger, which has no availability to tell whose it is: to clear once an entity of the same
        /// device is known to be a stale one of this bridge's.
        case trigger(BluetoothAddress)
    }

    /// Never in a fleet: a leftover there may be another bridge's device.
    func advertLeftover(_ message: MQTTMessage) -> AdvertLeftover? {
        guard config.fleet == nil, message.retain, !message.payload.isEmpty, let address = advertAddress(message.topic),
              !config.devices.contains(where: { $0.address == address && $0.advert != nil }),
              let json = try? JSONValue.parse(message.payloadString) else { return nil }
        let adverts = config.adverts
        if adverts.enabled, let name = json["device"]?["name"]?.stringValue,
           adverts.auto.contains(where: { name == "\($0.rawValue)-\(address.withoutColons.lowercased())" }) {
            return nil
        }
        if json["automation_type"] != nil { return .trigger(address) }
        let availability = json["availability"]?.arrayValue?.compactMap { $0["topic"]?.stringValue }
            ?? json["availability_topic"]?.stringValue.map { [$0] } ?? []
        return availability.contains(topics.bridgeState) ? .stale(address) : nil
    }
}

/// Which leftovers to clear as they arrive: stale entities at once, device triggers once an entity of their device
/// was found stale (before or after them). Bounded: at most `limit` addresses and waiting triggers are remembered,
/// whatever the broker holds.
struct AdvertLeftoverSweep: Sendable {
    static let limit = 10_000
    private var staleAddresses: Set<BluetoothAddress> = []
    private var waiting: [BluetoothAddress: [String]] = [:]
    private var waitingCount = 0

    /// The topics to clear now.
    mutating func admit(_ leftover: HomeAssistantDiscovery.AdvertLeftover, topic: String) -> [String] {
        switch leftover {
        case .stale(let address):
            if staleAddresses.count < Self.limit { staleAddresses.insert(address) }
            let triggers = waiting.removeValue(forKey: address) ?? []
            waitingCount -= triggers.count
            return [topic] + triggers
        case .trigger(let address):
            if staleAddresses.contains(address) { return [topic] }
            guard waitingCount < Self.limit else { return [] }
            waiting[address, default: []].append(topic)
            waitingCount += 1
            return []
        }
    }
}
