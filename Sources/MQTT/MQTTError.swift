internal import CMosquitto

/// A libmosquitto failure while setting the client up (options, TLS files, will).
public struct MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int32
    public var message: String

    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    init(code: Int32, doing action: String) {
        self.init(code: code, message: "\(action): \(String(cString: mosquitto_strerror(code)))")
    }

    public var description: String { message }
}
