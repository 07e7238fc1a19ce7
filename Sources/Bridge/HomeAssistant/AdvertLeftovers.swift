import Bluetooth
import Codecs
import Config
import MQTT

/// Broadcasters' Home Assistant configs this bridge left behind in an earlier run. `HomeAssistantFeature` sweeps its
/// own leftovers by comparing with what the config announces; a broadcaster's entities come from what it was heard
/// to send, so the rule here is by device instead: a retained config under `gattbridge_<ADDRESS>_advert` whose
/// address no configured broadcaster has is stale, an auto device's too (issue 40: a hundred forged addresses left a
/// hundred ghost devices in Home Assistant; a real one is announced again when next heard). Device triggers carry no
/// availability: they go with the entities of their device. The sweep runs for a few seconds after a connect
/// (`HomeAssistantDiscovery.sweepWindow`).
extension HomeAssistantDiscovery {
    /// The components broadcasters' entities use, one filter each: `<prefix>/<component>/+/+/config`.
    package var advertConfigFilters: [String] {
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
    package enum AdvertLeftover: Equatable {
        /// This bridge's (its availability names this bridge's state): to clear.
        case stale(BluetoothAddress)
        /// A device trigger, which has no availability to tell whose it is: to clear once an entity of the same
        /// device is known to be a stale one of this bridge's.
        case trigger(BluetoothAddress)
    }

    /// Never in a fleet: a leftover there may be another bridge's device.
    package func advertLeftover(_ message: MQTTMessage) -> AdvertLeftover? {
        guard config.fleet == nil, message.retain, !message.payload.isEmpty, let address = advertAddress(message.topic),
              !config.devices.contains(where: { $0.address == address && $0.advert != nil }),
              let json = try? JSONValue.parse(message.payloadString) else { return nil }
        if json["automation_type"] != nil { return .trigger(address) }
        let availability = json["availability"]?.arrayValue?.compactMap { $0["topic"]?.stringValue }
            ?? json["availability_topic"]?.stringValue.map { [$0] } ?? []
        return availability.contains(topics.bridgeState) ? .stale(address) : nil
    }
}

extension HomeAssistantDiscovery {
    /// The retained topics a stale config's device left under the base topic: the config's reading
    /// (`B/<level>/<reading>`) and the device's availability and RSSI. None when the level is a configured device's
    /// (a saved device took the name) or the bridge's own.
    package func advertStateTopics(_ message: MQTTMessage) -> [String] {
        guard let json = try? JSONValue.parse(message.payloadString),
              let state = json["state_topic"]?.stringValue ?? json["topic"]?.stringValue,
              state.hasPrefix(topics.base + "/") else { return [] }
        let levels = state.dropFirst(topics.base.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 2, levels[0] != "bridge", !levels[0].isEmpty, !levels[1].isEmpty,
              !config.devices.contains(where: { $0.topicLevel == levels[0] }) else { return [] }
        let device = "\(topics.base)/\(levels[0])"
        return [state, device + "/availability", device + "/rssi"]
    }
}

/// Which leftovers to clear as they arrive: stale entities at once, device triggers once an entity of their device
/// was found stale (before or after them). Bounded: at most `limit` addresses and waiting triggers are remembered,
/// whatever the broker holds.
package struct AdvertLeftoverSweep: Sendable {
    package init() {}

    package static let limit = 10_000
    private var staleAddresses: Set<BluetoothAddress> = []
    private var waiting: [BluetoothAddress: [String]] = [:]
    private var waitingCount = 0
    /// The reading, availability and RSSI topics cleared already (several configs name one device's).
    private var cleared: Set<String> = []

    /// True the first time, for at most `limit` topics.
    package mutating func clearOnce(_ topic: String) -> Bool {
        guard cleared.count < Self.limit else { return false }
        return cleared.insert(topic).inserted
    }

    /// The topics to clear now.
    package mutating func admit(_ leftover: HomeAssistantDiscovery.AdvertLeftover, topic: String) -> [String] {
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
