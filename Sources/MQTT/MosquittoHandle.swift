import CMosquitto
import Glibc

/// The one owner of a `struct mosquitto *`, shared between the network thread and publishers (`@unchecked Sendable`).
///
/// The handle is deliberately *not* in libmosquitto's "threaded" mode. In that mode every publish only queues the
/// packet and writes a byte to an internal socketpair to wake the network thread, which then writes it: one extra
/// thread wake-up per message, the largest single cost of a notification. Unthreaded, `mosquitto_publish` writes
/// the packet from the caller's thread. That is only safe because every call that touches the socket or the TLS
/// session (publish, subscribe, read, write, keepalive, disconnect) runs under `io`, so the socket is never closed
/// (and its number reused) under a writer, and a TLS session is never read and written at once. The network
/// thread polls the socket itself (`MQTTClient+NetworkLoop`) and never reads the internal socketpair, whose wake-up
/// bytes stop at its buffer's bound (the writes are non-blocking and their result is ignored by libmosquitto).
final class MosquittoHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    /// Serialises libmosquitto calls that may write, read or close the socket. Held only for non-blocking work.
    let io = IOLock()

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

    var socket: Int32 { mosquitto_socket(pointer) }

    /// True while packets wait to be written (or TLS wants to write): the network thread then polls for POLLOUT.
    var wantsWrite: Bool { io.withLock { mosquitto_want_write(pointer) } }

    /// Reads what arrived (callbacks run here), on the network thread.
    func read() -> Int32 { io.withLock { mosquitto_loop_read(pointer, 1) } }

    /// Writes what is queued, on the network thread.
    func write() -> Int32 { io.withLock { mosquitto_loop_write(pointer, 1) } }

    /// Keepalive (PINGREQ when due, and the check for a missing PINGRESP), on the network thread.
    func misc() -> Int32 { io.withLock { mosquitto_loop_misc(pointer) } }

    /// Publishes (the packet is written from this thread when it can be); also says whether output is left waiting.
    func publish(_ message: MQTTMessage, mid: inout Int32) -> (rc: Int32, wantsWrite: Bool) {
        io.withLock { publishLocked(message, mid: &mid) }
    }

    /// `publish`, or nil at once when another thread holds the I/O lock (the network thread reading PUBACKs).
    func tryPublish(_ message: MQTTMessage, mid: inout Int32) -> (rc: Int32, wantsWrite: Bool)? {
        io.withLockIfAvailable { publishLocked(message, mid: &mid) }
    }

    private func publishLocked(_ message: MQTTMessage, mid: inout Int32) -> (rc: Int32, wantsWrite: Bool) {
        let rc = message.payload.withUnsafeBytes { bytes in
            mosquitto_publish_v5(pointer, &mid, message.topic, Int32(bytes.count), bytes.baseAddress,
                                 message.qos.rawValue, message.retain, nil)
        }
        return (rc, mosquitto_want_write(pointer))
    }

    func subscribe(_ filter: String, qos: MQTTQoS) -> Int32 {
        io.withLock { mosquitto_subscribe_v5(pointer, nil, filter, qos.rawValue, 0, nil) }
    }

    func unsubscribe(_ filter: String) -> Int32 { io.withLock { mosquitto_unsubscribe_v5(pointer, nil, filter, nil) } }

    func disconnect() -> Int32 { io.withLock { mosquitto_disconnect_v5(pointer, 0, nil) } }
}

/// Results of `mosquitto_publish` for QoS ≥ 1 that come *after* the message entered libmosquitto's outgoing queue
/// (checked against libmosquitto 2.0.11's `mosquitto_publish_v5`): the direct write failed or there is no connection,
/// and libmosquitto sends the message again after the next connect. Anything else was refused before queueing.
let queuedDespiteError: Set<Int32> = [MOSQ_NO_CONN, Int32(MOSQ_ERR_CONN_LOST.rawValue), Int32(MOSQ_ERR_ERRNO.rawValue)]

let MOSQ_SUCCESS = Int32(MOSQ_ERR_SUCCESS.rawValue)
let MOSQ_NO_CONN = Int32(MOSQ_ERR_NO_CONN.rawValue)

/// Text for a libmosquitto error code or an MQTT reason code (they share the `rc` of the callbacks).
func mosquittoDescription(_ code: Int32) -> String {
    code >= 128 ? String(cString: mosquitto_reason_string(code)) : String(cString: mosquitto_strerror(code))
}
