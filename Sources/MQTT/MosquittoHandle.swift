import CMosquitto
import Glibc

/// The one owner of a `struct mosquitto *`. libmosquitto guards its state with its own mutexes, and the handle is in
/// "threaded" mode, so publish/subscribe may be called from any thread while the network thread runs the loop:
/// that is why this wrapper may be shared (`@unchecked Sendable`).
final class MosquittoHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    /// `mosquitto_lib_init` must run once per process before any client exists.
    private static let libraryReady: Void = { _ = mosquitto_lib_init() }()

    init(configuration: MQTTConfiguration) throws(MQTTError) {
        _ = Self.libraryReady
        guard let pointer = mosquitto_new(configuration.clientID, true, nil) else {
            throw MQTTError(code: Int32(MOSQ_ERR_NOMEM.rawValue), message: "mosquitto_new failed: \(String(cString: strerror(errno)))")
        }
        self.pointer = pointer
        try configure(configuration)
    }

    deinit { mosquitto_destroy(pointer) }

    private func configure(_ configuration: MQTTConfiguration) throws(MQTTError) {
        let version = configuration.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        try check(mosquitto_int_option(pointer, MOSQ_OPT_PROTOCOL_VERSION, Int32(version)), "protocol version")
        // More than libmosquitto's 20 in flight keeps a flushed offline buffer moving; the broker's own receive
        // maximum (MQTT 5 CONNACK) still caps it.
        try check(mosquitto_int_option(pointer, MOSQ_OPT_SEND_MAXIMUM, 100), "send maximum")
        try check(mosquitto_int_option(pointer, MOSQ_OPT_TCP_NODELAY, 1), "TCP_NODELAY")
        try check(mosquitto_threaded_set(pointer, true), "threaded mode")
        if configuration.username != nil || configuration.password != nil {
            try check(mosquitto_username_pw_set(pointer, configuration.username, configuration.password), "username/password")
        }
        if let will = configuration.will {
            let rc = will.payload.withUnsafeBytes { bytes in
                mosquitto_will_set_v5(pointer, will.topic, Int32(bytes.count), bytes.baseAddress, will.qos.rawValue, will.retain, nil)
            }
            try check(rc, "will on \(will.topic)")
        }
        if let tls = configuration.tls { try configureTLS(tls) }
    }

    private func configureTLS(_ tls: MQTTTLS) throws(MQTTError) {
        // Without a CA file, trust what the operating system trusts.
        let caPath: String? = tls.caFile == nil ? "/etc/ssl/certs" : nil
        if tls.caFile == nil {
            try check(mosquitto_int_option(pointer, MOSQ_OPT_TLS_USE_OS_CERTS, 1), "TLS system trust store")
        }
        try check(mosquitto_tls_set(pointer, tls.caFile, caPath, tls.certFile, tls.keyFile, nil), "TLS files")
        try check(mosquitto_tls_opts_set(pointer, 1 /* SSL_VERIFY_PEER */, nil, nil), "TLS options")
        try check(mosquitto_tls_insecure_set(pointer, tls.insecure), "TLS insecure")
    }

    private func check(_ rc: Int32, _ action: String) throws(MQTTError) {
        if rc != MOSQ_SUCCESS { throw MQTTError(code: rc, doing: action) }
    }

    func setUserData(_ pointer: UnsafeMutableRawPointer) { mosquitto_user_data_set(self.pointer, pointer) }

    func connectAsync(host: String, port: Int, keepalive: Int) -> Int32 {
        mosquitto_connect_async(pointer, host, Int32(port), Int32(keepalive))
    }

    func loop(timeoutMilliseconds: Int32) -> Int32 { mosquitto_loop(pointer, timeoutMilliseconds, 1) }

    var socket: Int32 { mosquitto_socket(pointer) }

    func publish(_ message: MQTTMessage, mid: inout Int32) -> Int32 {
        message.payload.withUnsafeBytes { bytes in
            mosquitto_publish_v5(pointer, &mid, message.topic, Int32(bytes.count), bytes.baseAddress,
                                 message.qos.rawValue, message.retain, nil)
        }
    }

    func subscribe(_ filter: String, qos: MQTTQoS) -> Int32 {
        mosquitto_subscribe_v5(pointer, nil, filter, qos.rawValue, 0, nil)
    }

    func unsubscribe(_ filter: String) -> Int32 { mosquitto_unsubscribe_v5(pointer, nil, filter, nil) }

    func disconnect() -> Int32 { mosquitto_disconnect_v5(pointer, 0, nil) }
}

let MOSQ_SUCCESS = Int32(MOSQ_ERR_SUCCESS.rawValue)
let MOSQ_NO_CONN = Int32(MOSQ_ERR_NO_CONN.rawValue)

/// Text for a libmosquitto error code or an MQTT reason code (they share the `rc` of the callbacks).
func mosquittoDescription(_ code: Int32) -> String {
    code >= 128 ? String(cString: mosquitto_reason_string(code)) : String(cString: mosquitto_strerror(code))
}
