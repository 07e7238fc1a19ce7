import Bluetooth
import Codecs

/// One request of the bridge API (docs/bridge-api.md), parsed and checked: nothing in it is trusted further than this.
package struct BridgeRequest: Sendable, Equatable {
    package enum Verb: String, Sendable, CaseIterable {
        case devices
        case deviceAdd = "device/add"
        case deviceRemove = "device/remove"
        case deviceRearm = "device/rearm"
        case scan, inspect, health
    }

    package enum Parameters: Sendable, Equatable {
        case none
        /// The device object as given, without `transaction`.
        case device(JSONValue)
        case name(String)
        case scan(duration: Duration, services: [BluetoothUUID])
        case address(BluetoothAddress)
    }

    package var verb: Verb
    package var parameters: Parameters
    /// Echoed in the answer: a string or a number.
    package var transaction: JSONValue?

    /// Requests are small JSON objects; a device with many channels stays far below this.
    static let maxBytes = 64 * 1024
    static let scanSeconds = 1...60
    static let defaultScanSeconds = 10

    /// A request that could not be served, with what can be echoed back.
    package struct Failure: Error, Sendable, Equatable {
        package var message: String
        package var transaction: JSONValue?
    }

    /// Parses the payload sent to `B/bridge/request/<verb>`. An empty payload is an empty object, so
    /// `mosquitto_pub -n` works for the verbs without parameters.
    package static func parse(verb text: String, payload: [UInt8]) -> Result<BridgeRequest, Failure> {
        guard payload.count <= maxBytes else {
            return .failure(Failure(message: "request of \(payload.count) bytes is over the \(maxBytes)-byte limit"))
        }
        var members: [(String, JSONValue)] = []
        if !payload.isEmpty {
            guard let text = String(validating: payload, as: UTF8.self) else {
                return .failure(Failure(message: "request is not valid UTF-8"))
            }
            let value: JSONValue
            do throws(CodecError) {
                value = try JSONValue.parse(text)
            } catch {
                return .failure(Failure(message: "invalid JSON: \(error.message)"))
            }
            guard let object = value.objectValue else {
                return .failure(Failure(message: "request must be a JSON object"))
            }
            members = object
        }
        var transaction: JSONValue?
        if let index = members.firstIndex(where: { $0.0 == "transaction" }) {
            let value = members.remove(at: index).1
            switch value {
            case .string, .int, .double: transaction = value
            default: return .failure(Failure(message: "transaction must be a string or a number"))
            }
        }
        guard let verb = Verb(rawValue: text) else {
            let known = Verb.allCases.map(\.rawValue).joined(separator: ", ")
            return .failure(Failure(message: "unknown verb \"\(ReportText.escaped(text, maxBytes: 64))\" (expected one of \(known))",
                                    transaction: transaction))
        }
        do throws(Failure) {
            let parameters = try Self.parameters(verb, members)
            return .success(BridgeRequest(verb: verb, parameters: parameters, transaction: transaction))
        } catch {
            return .failure(Failure(message: error.message, transaction: transaction))
        }
    }

    private static func parameters(_ verb: Verb, _ members: [(String, JSONValue)]) throws(Failure) -> Parameters {
        func only(_ allowed: [String]) throws(Failure) {
            if let unknown = members.first(where: { !allowed.contains($0.0) }) {
                throw Failure(message: "unknown key \"\(ReportText.escaped(unknown.0, maxBytes: 64))\" in a \(verb.rawValue) request")
            }
        }
        let object = JSONValue.object(members)
        switch verb {
        case .devices, .health:
            try only([])
            return .none
        case .deviceAdd:
            // Validated by the config validator, which names every problem by its JSON path.
            return .device(object)
        case .deviceRemove, .deviceRearm:
            try only(["name"])
            guard let name = object["name"]?.stringValue, !name.isEmpty else {
                throw Failure(message: "\(verb.rawValue) needs \"name\": the device's name")
            }
            return .name(name)
        case .scan:
            try only(["duration", "service"])
            var seconds = Double(defaultScanSeconds)
            if let value = object["duration"] {
                guard let number = value.doubleValue, number >= Double(scanSeconds.lowerBound),
                      number <= Double(scanSeconds.upperBound) else {
                    throw Failure(message: "duration must be a number of seconds from \(scanSeconds.lowerBound) to \(scanSeconds.upperBound)")
                }
                seconds = number
            }
            var services: [BluetoothUUID] = []
            if let value = object["service"] {
                let items = value.arrayValue ?? [value]
                for item in items {
                    guard let text = item.stringValue, let uuid = BluetoothUUID(text) else {
                        throw Failure(message: "service must be a list of UUIDs, got \(ReportText.escaped(item.serialized, maxBytes: 64))")
                    }
                    services.append(uuid)
                }
            }
            return .scan(duration: .milliseconds(Int64(seconds * 1000)), services: services)
        case .inspect:
            try only(["address"])
            guard let text = object["address"]?.stringValue, let address = BluetoothAddress(text) else {
                throw Failure(message: "inspect needs \"address\": a Bluetooth address like \"AA:BB:CC:DD:EE:FF\"")
            }
            return .address(address)
        }
    }
}

/// The answer's JSON (docs/bridge-api.md): `data` on ok, `error` on error, `transaction` when the request had one.
package enum BridgeResponse {
    package static func ok(_ data: JSONValue, transaction: JSONValue?) -> String {
        var members: [(String, JSONValue)] = [("status", .string("ok")), ("data", data)]
        if let transaction { members.append(("transaction", transaction)) }
        return JSONValue.object(members).serialized
    }

    package static func error(_ message: String, transaction: JSONValue?) -> String {
        var members: [(String, JSONValue)] = [("status", .string("error")), ("error", .string(message))]
        if let transaction { members.append(("transaction", transaction)) }
        return JSONValue.object(members).serialized
    }
}
