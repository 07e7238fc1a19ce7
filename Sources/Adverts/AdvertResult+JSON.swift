import Codecs

extension AdvertResult {
    /// `{"format":…,"measurements":{…},"events":[…],"packet_id":N|null,"encrypted":…}`: what
    /// `gattbridge adverts decode` prints. `units` adds `"units":{name: unit}` (the differential tests compare
    /// units too).
    public func json(units: Bool = false) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("format", .string(format.rawValue)),
            ("measurements", .object(measurements.map { ($0.name, $0.value.json) })),
            ("events", .array(events.map(\.json))),
            ("packet_id", packetID.map { .int(Int($0)) } ?? .null),
            ("encrypted", .bool(encrypted)),
        ]
        if units {
            members.append(("units", .object(measurements.compactMap { m in m.unit.map { (m.name, .string($0)) } })))
        }
        return .object(members)
    }
}

extension MeasurementValue {
    public var json: JSONValue {
        switch self {
        case .integer(let value): .int(Int(value))
        case .number(let value): .double(value)
        case .state(let value): .bool(value)
        case .text(let value), .identity(let value): .string(value)
        }
    }
}

extension AdvertEvent {
    /// `{"name":"button","event_type":"press"}`, with `steps` for a dimmer and `args` for a command.
    public var json: JSONValue {
        var members: [(String, JSONValue)] = [("name", .string(name)), ("event_type", .string(type))]
        if let steps { members.append(("steps", .int(steps))) }
        if let arguments { members.append(("args", .string(arguments))) }
        return .object(members)
    }
}
