/// The `mqtt:` section.
public struct MQTTSettings: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var clientID: String
    public var username: String?
    /// From `password_file` (read at load time) or `password`.
    public var password: Secret?
    /// Where `password` came from, when from a file: for the permission warning.
    public var passwordFile: SecretFile?
    public var tls: TLSSettings?
    public var baseTopic: String
    public var protocolVersion: MQTTProtocolVersion
    /// Seconds.
    public var keepalive: Int
    /// `bridge.id` when the bridge is in a fleet (docs/fleet.md): it names the state topic the will goes to, so it lives
    /// with the client's settings (a change needs a new client).
    public var bridgeID: String?

    /// `port` nil means 1883, or 8883 when `tls` is set; `clientID` nil means gattbridge-<hostname>.
    public init(host: String = "localhost", port: Int? = nil, clientID: String? = nil, username: String? = nil,
                password: Secret? = nil, passwordFile: SecretFile? = nil, tls: TLSSettings? = nil, baseTopic: String = "gattbridge",
                protocolVersion: MQTTProtocolVersion = .v5, keepalive: Int = 30) {
        self.host = host
        self.port = port ?? (tls == nil ? 1883 : 8883)
        self.clientID = clientID ?? Self.defaultClientID
        self.username = username
        self.password = password
        self.passwordFile = passwordFile
        self.tls = tls
        self.baseTopic = baseTopic
        self.protocolVersion = protocolVersion
        self.keepalive = keepalive
    }

    /// "gattbridge-<hostname>": unique per machine, so two bridges on one broker do not kick each other off.
    public static var defaultClientID: String {
        "gattbridge-\(Hostname.current)"
    }

    /// Says whether a password is set, never what it is.
    public var description: String {
        var parts = ["\(host):\(port)", "client_id \(clientID)", "base_topic \(baseTopic)", "protocol \(protocolVersion.rawValue)",
                     "keepalive \(keepalive)s"]
        if let username { parts.append("username \(username)") }
        if password != nil { parts.append("password <redacted>") }
        if let tls { parts.append("tls (\(tls))") }
        return "mqtt " + parts.joined(separator: ", ")
    }
}

/// A secret's file: the path as resolved, and its permission bits when it was read.
public struct SecretFile: Sendable, Equatable {
    public var path: String
    public var mode: UInt32?

    public init(path: String, mode: UInt32?) {
        self.path = path
        self.mode = mode
    }
}

/// MQTT protocol version; raw values are the config spellings.
public enum MQTTProtocolVersion: String, Sendable, CaseIterable {
    case v5 = "5"
    case v311 = "3.1.1"
}

/// `mqtt.tls`: present means TLS is on; nil files mean the system's trust store and no client certificate.
public struct TLSSettings: Sendable, Equatable, CustomStringConvertible {
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    /// Do not check the broker's host name against its certificate (`mosquitto_tls_insecure_set`); the certificate
    /// chain is still verified. Testing only: a warning says so.
    public var insecure: Bool

    public init(caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil, insecure: Bool = false) {
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.insecure = insecure
    }

    public var description: String {
        var parts: [String] = []
        if let caFile { parts.append("ca_file \(caFile)") }
        if let certFile { parts.append("cert_file \(certFile)") }
        if let keyFile { parts.append("key_file \(keyFile)") }
        if insecure { parts.append("insecure") }
        return parts.isEmpty ? "system trust store" : parts.joined(separator: ", ")
    }
}
