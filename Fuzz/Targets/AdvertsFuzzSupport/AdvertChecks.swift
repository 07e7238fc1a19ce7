import Adverts
import FuzzSupport

/// What every decoded broadcast must satisfy, whatever the bytes: names in snake case (they become MQTT topic
/// levels and Home Assistant keys), finite numbers (a NaN is no reading), events with names and types.
public func checkResult(_ result: AdvertResult, _ what: String) {
    for measurement in result.measurements {
        let name = measurement.name
        require(!name.isEmpty && name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F },
                "\(what): measurement name \(name.debugDescription) is not snake case")
        if case .number(let value) = measurement.value {
            require(value.isFinite, "\(what): \(name) = \(value)")
        }
    }
    require(Set(result.measurements.map(\.name)).count == result.measurements.count, "\(what): a name twice")
    for event in result.events {
        require(!event.name.isEmpty && !event.type.isEmpty, "\(what): empty event \(event)")
    }
    // A beacon's meaning is being heard: an Eddystone TLM frame whose sensors are all "not supported" reads nothing.
    require(!result.isEmpty || result.format == .eddystone, "\(what): a result with nothing in it")
    // The JSON the CLI prints is always well-formed.
    _ = result.json(units: true).serialized
}

/// Decoding the same broadcast twice gives the same answer: the decoders are pure.
public func decodeTwice(_ broadcast: Broadcast, as format: AdvertFormat, bindkey: [UInt8]? = nil) -> AdvertResult? {
    let first = try? AdvertDecoder.decode(broadcast, as: format, bindkey: bindkey)
    let second = try? AdvertDecoder.decode(broadcast, as: format, bindkey: bindkey)
    require(first == second, "\(format): two decodings of one broadcast differ")
    if let first { checkResult(first, format.rawValue) }
    return first
}
