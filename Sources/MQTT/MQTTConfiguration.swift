import Durations

/// Which MQTT protocol the client speaks; both go through the same libmosquitto calls.
public enum MQTTProtocolVersion: String, Sendable, CaseIterable {
    case v311 = "3.1.1"
    case v5 = "5"
}

/// TLS settings. Without a CA file the operating system's trust store is used.
public struct MQTTTLS: Sendable, Equatable {
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    /// Skips the host name check only (the chain is still verified); for brokers reached by IP address.
    public var insecure: Bool

    public init(caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil, insecure: Bool = false) {
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.insecure = insecure
    }
}

/// Everything `MQTTClient` needs to reach a broker. Its description is safe to log: the password is redacted.
public struct MQTTConfiguration: Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var clientID: String
    public var username: String?
    public var password: String?
    public var tls: MQTTTLS?
    public var protocolVersion: MQTTProtocolVersion
    /// libmosquitto accepts 5…65535 seconds.
    public var keepalive: Duration
    /// Set before every connect; the broker publishes it if the link dies without a DISCONNECT.
    public var will: MQTTMessage?
    /// QoS ≥ 1 messages held while disconnected; beyond this the oldest are dropped (and counted).
    public var offlineBufferLimit: Int
    /// The same bound in bytes (topic, payload and a fixed overhead per message), over everything that waits to be
    /// sent: the offline buffer, messages deferred to the network thread and what libmosquitto holds (QoS ≥ 1
    /// unacknowledged, QoS 0 unwritten). Beyond it QoS ≥ 1 messages evict the oldest buffered ones and QoS 0
    /// messages are dropped, each counted. Default 4 MiB.
    public var offlineBufferBytes: Int
    /// First delay before reconnecting; doubled after each failed attempt up to `reconnectDelayMax`.
    public var reconnectDelay: Duration
    public var reconnectDelayMax: Duration
    /// Largest packet accepted from the broker (bytes). MQTT 5: announced in CONNECT (Maximum Packet Size), and
    /// the broker drops anything larger instead of sending it. MQTT 3.1.1 cannot announce it: libmosquitto 2.0
    /// reads (and allocates) a packet of any size the broker allows, and the client drops a larger message
    /// without copying it. Default 256 KiB.
    public var maximumPacketSize: Int

    public init(
        host: String = "localhost", port: Int = 1883, clientID: String, username: String? = nil,
        password: String? = nil, tls: MQTTTLS? = nil, protocolVersion: MQTTProtocolVersion = .v5,
        keepalive: Duration = .seconds(30), will: MQTTMessage? = nil, offlineBufferLimit: Int = 10_000,
        offlineBufferBytes: Int = 4 * 1024 * 1024,
        reconnectDelay: Duration = .seconds(1), reconnectDelayMax: Duration = .seconds(30),
        maximumPacketSize: Int = 256 * 1024
    ) {
        self.host = host
        self.port = port
        self.clientID = clientID
        self.username = username
        self.password = password
        self.tls = tls
        self.protocolVersion = protocolVersion
        self.keepalive = keepalive
        self.will = will
        self.offlineBufferLimit = offlineBufferLimit
        self.offlineBufferBytes = max(offlineBufferBytes, 64 * 1024)
        self.reconnectDelay = reconnectDelay
        self.reconnectDelayMax = reconnectDelayMax
        self.maximumPacketSize = min(max(maximumPacketSize, 64), Int(Int32.max))
    }

    public var description: String {
        var parts = ["\(tls == nil ? "mqtt" : "mqtts")://\(host):\(port)", "client_id=\(clientID)",
                     "protocol=\(protocolVersion.rawValue)", "keepalive=\(keepalive.secondsDescription)s"]
        if let username { parts.append("username=\(username)") }
        if password != nil { parts.append("password=<redacted>") }
        return parts.joined(separator: " ")
    }
}
