internal import CMosquitto
import Glibc

/// A `struct mosquitto *` and the lock around it, owned by the client's `LinkCore` and used by the network thread and
/// publishers alike (`@unchecked Sendable`).
///
/// The handle is deliberately *not* in libmosquitto's "threaded" mode. In that mode every publish only queues the
/// packet and writes a byte to an internal socketpair to wake the network thread, which then writes it: one extra
/// thread wake-up per message, the largest single cost of a notification. Unthreaded, `mosquitto_publish` writes
/// the packet from the caller's thread. That is only safe because every call that touches the socket or the TLS
/// session (connect, publish, subscribe, read, write, keepalive, disconnect, even reading the socket number) runs
/// under `io` (checked in debug builds by `IOLock.assertHeld`), so the socket is never closed
/// (and its number reused) under a writer, and a TLS session is never read and written at once. The network
/// thread polls the socket itself (`MQTTClient+NetworkLoop`) and never reads the internal socketpair, whose wake-up
/// bytes stop at its buffer's bound (the writes are non-blocking and their result is ignored by libmosquitto).
final class MosquittoHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    let isV5: Bool
    /// Largest packet we accept, announced to the broker in CONNECT (MQTT 5 only; see `connect`).
    let maximumPacketSize: UInt32
    /// Serialises libmosquitto calls that may write, read or close the socket. Held only for non-blocking work.
    let io = IOLock()

    // Under `io`, while `publishLocked` runs: where libmosquitto writes the new message's id (it does before it
    // sends), and whether that message's own `on_publish` came inside the call. Without the dynamic exclusivity
    // check: the lock serialises every access, and the check was a runtime call per value.
    @exclusivity(unchecked) private var publishingMid: UnsafeMutablePointer<Int32>?
    @exclusivity(unchecked) private var writtenAtOnce = false

    /// QoS ≥ 1 messages libmosquitto sends before waiting for acknowledgements.
    static let sendMaximum = 100

    /// `mosquitto_lib_init` must run once per process before any client exists.
    private static let libraryReady: Void = { _ = mosquitto_lib_init() }()

    init(configuration: MQTTConfiguration) throws(MQTTError) {
        _ = Self.libraryReady
        guard let pointer = mosquitto_new(configuration.clientID, true, nil) else {
            throw MQTTError(code: Int32(MOSQ_ERR_NOMEM.rawValue), message: "mosquitto_new failed: \(String(cString: strerror(errno)))")
        }
        self.pointer = pointer
        isV5 = configuration.protocolVersion == .v5
        maximumPacketSize = UInt32(clamping: configuration.maximumPacketSize)
        try configure(configuration)
    }

    deinit { mosquitto_destroy(pointer) }

    private func configure(_ configuration: MQTTConfiguration) throws(MQTTError) {
        let version = configuration.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        try check(mosquitto_int_option(pointer, MOSQ_OPT_PROTOCOL_VERSION, Int32(version)), "protocol version")
        // More than libmosquitto's 20 in flight keeps a flushed offline buffer moving; the broker's own receive
        // maximum (MQTT 5 CONNACK) still caps it.
        try check(mosquitto_int_option(pointer, MOSQ_OPT_SEND_MAXIMUM, Int32(Self.sendMaximum)), "send maximum")
        try check(mosquitto_int_option(pointer, MOSQ_OPT_TCP_NODELAY, 1), "TCP_NODELAY")
        if configuration.username != nil || configuration.password != nil {
            try check(mosquitto_username_pw_set(pointer, configuration.username, configuration.password), "username/password")
        }
        if let will = configuration.will {
            let rc = will.withPayloadBytes { bytes in
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

    /// Starts a connection; on the network thread (or, hosted, a helper thread of its own while the host's turns
    /// leave the handle alone), which calls nothing else meanwhile.
    ///
    /// MQTT 3.1.1: `mosquitto_connect_async` (non-blocking TCP connect, the CONNECT is written once it completes).
    /// MQTT 5: the CONNECT must carry our Maximum Packet Size, and libmosquitto 2.0 takes CONNECT properties only
    /// in the blocking `mosquitto_connect_bind_v5`, whose TCP connect to a black-holed address could block for the
    /// kernel's SYN timeout (~2 min), past what `loopIsAlive` allows a connect call. `TCPProbe` first proves the
    /// address answers within `probeTimeoutMilliseconds`; the blocking connect that follows then completes at once.
    /// (The broker sees one extra TCP connection, without a CONNECT, per attempt.) The TLS handshake stays
    /// non-blocking either way: libmosquitto makes the socket non-blocking before starting it.
    ///
    /// Holds the I/O lock throughout: nothing else needs it while no session is up (publishers buffer), and a
    /// caller reading `socket` must not see a half-set-up one.
    func connect(host: String, port: Int, keepalive: Int, probeTimeoutMilliseconds: Int32 = 10_000) -> (rc: Int32, errno: Int32) {
        guard isV5 else {
            return io.withLock {
                let rc = mosquitto_connect_async(pointer, host, Int32(port), Int32(keepalive))
                return (rc, errno)
            }
        }
        let probe = TCPProbe.connect(host: host, port: port, timeoutMilliseconds: probeTimeoutMilliseconds)
        if probe.rc != MOSQ_SUCCESS { return probe }
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        let added = mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_MAXIMUM_PACKET_SIZE.rawValue), maximumPacketSize)
        if added != MOSQ_SUCCESS { return (added, 0) }
        return io.withLock {
            let rc = mosquitto_connect_bind_v5(pointer, host, Int32(port), Int32(keepalive), nil, properties)
            return (rc, errno)
        }
    }

    /// The broker socket, or −1. Read under the lock: a number read while another thread closes the socket could
    /// name an unrelated file by the time it is polled.
    var socket: Int32 { io.withLock { mosquitto_socket(pointer) } }

    /// True while packets wait to be written (or TLS wants to write): the network thread then polls for POLLOUT.
    var wantsWrite: Bool { io.withLock { mosquitto_want_write(pointer) } }

    /// `socket` and `wantsWrite` under one lock, for the poll set of each turn.
    var pollState: (socket: Int32, wantsWrite: Bool) {
        io.withLock { (mosquitto_socket(pointer), mosquitto_want_write(pointer)) }
    }

    /// Reads what arrived (callbacks run here), on the network thread; with the socket as the read left it (−1 once
    /// it closed it), under the same take of the lock: a turn asked for it next, which was a take of its own.
    func read() -> (rc: Int32, socket: Int32) {
        io.withLock { (mosquitto_loop_read(pointer, 1), mosquitto_socket(pointer)) }
    }

    /// The end of a turn of the network thread, under one take of the lock (it was four, several per notification):
    /// writes what is queued if anything is, then the keepalive (PINGREQ when due, and the check for a missing
    /// PINGRESP), as the turn did in separate calls; stops after a failed write or one that closed the socket. With
    /// the socket as left at the end (−1 once closed).
    func writeAndKeepalive() -> (rc: Int32, socket: Int32) {
        io.withLock {
            if mosquitto_want_write(pointer) {
                let rc = mosquitto_loop_write(pointer, 1)
                let socket = mosquitto_socket(pointer)
                if rc != MOSQ_SUCCESS || socket < 0 { return (rc, socket) }
            }
            return (mosquitto_loop_misc(pointer), mosquitto_socket(pointer))
        }
    }

    /// Publishes (the packet is written from this thread when it can be); also says whether output is left waiting.
    func publish(_ message: MQTTMessage, mid: inout Int32) -> PublishResult {
        io.withLock { publishLocked(message, mid: &mid) }
    }

    /// `publish`, or nil at once when another thread holds the I/O lock (the network thread reading PUBACKs).
    func tryPublish(_ message: MQTTMessage, mid: inout Int32) -> PublishResult? {
        io.withLockIfAvailable { publishLocked(message, mid: &mid) }
    }

    /// `tryPublish` for a value given as topic and payload bytes, without MQTT 5 properties (the text of
    /// `MQTTClient.publish(topic:text:qos:retain:)` or the bytes lent to `publish(topic:utf8:qos:retain:)`).
    func tryPublish(topic: String, bytes: UnsafeRawBufferPointer, qos: MQTTQoS, retain: Bool, mid: inout Int32) -> PublishResult? {
        io.withLockIfAvailable {
            publishLocked(topic: topic, bytes, qos: qos, retain: retain, properties: nil, mid: &mid)
        }
    }

    private func publishLocked(_ message: MQTTMessage, mid: inout Int32) -> PublishResult {
        io.assertHeld()
        // MQTT 3.1.1 has no properties (libmosquitto refuses a list there), so request metadata is dropped.
        var properties: OpaquePointer?
        defer { if properties != nil { mosquitto_property_free_all(&properties) } }
        if isV5 {
            if let responseTopic = message.responseTopic {
                let rc = mosquitto_property_add_string(&properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), responseTopic)
                if rc != MOSQ_SUCCESS { return PublishResult(rc: rc, wantsWrite: false) }
            }
            if let data = message.correlationData {
                guard data.count <= Int(UInt16.max) else { return PublishResult(rc: Int32(MOSQ_ERR_INVAL.rawValue), wantsWrite: false) }
                let rc = data.withUnsafeBytes { bytes in
                    mosquitto_property_add_binary(&properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue),
                                                  bytes.baseAddress, UInt16(bytes.count))
                }
                if rc != MOSQ_SUCCESS { return PublishResult(rc: rc, wantsWrite: false) }
            }
        }
        return message.withPayloadBytes { bytes in
            publishLocked(topic: message.topic, bytes, qos: message.qos, retain: message.retain,
                          properties: properties, mid: &mid)
        }
    }

    private func publishLocked(topic: String, _ payload: UnsafeRawBufferPointer, qos: MQTTQoS, retain: Bool,
                               properties: OpaquePointer?, mid: inout Int32) -> PublishResult {
        io.assertHeld()
        return withUnsafeMutablePointer(to: &mid) { mid in
            publishingMid = mid
            writtenAtOnce = false
            defer { publishingMid = nil }
            let rc = topic.withCString { topic in      // not the implicit conversion: it copies (`MQTTClient.publish`)
                mosquitto_publish_v5(pointer, mid, topic, Int32(payload.count), payload.baseAddress, qos.rawValue, retain,
                                     properties)
            }
            return PublishResult(rc: rc, wantsWrite: mosquitto_want_write(pointer), writtenAtOnce: writtenAtOnce)
        }
    }

    /// From `on_publish` (under the I/O lock, as every libmosquitto call is): true when `mid` is the message of the
    /// publish call running now, written at once (QoS 0). Nobody has to hear of it then: the caller sees
    /// `PublishResult.writtenAtOnce`, and the in-flight ledger need not note the message and strike it out again, the
    /// largest part of a value's bookkeeping.
    func acknowledgedDuringPublish(_ mid: Int32) -> Bool {
        io.assertHeld()
        guard let publishingMid, publishingMid.pointee == mid else { return false }
        writtenAtOnce = true
        return true
    }

    /// Subscribes with the MQTT 5 retain-handling option; on 3.1.1 the option cannot be sent (libmosquitto
    /// refuses subscription options there), so it is a plain subscribe.
    func subscribe(_ filter: String, options: SubscriptionOptions) -> Int32 {
        var flags: Int32 = 0
        if isV5 {
            switch options.retainHandling {
            case .sendOnSubscribe: flags = Int32(MQTT_SUB_OPT_SEND_RETAIN_ALWAYS.rawValue)
            case .sendIfNew: flags = Int32(MQTT_SUB_OPT_SEND_RETAIN_NEW.rawValue)
            case .doNotSend: flags = Int32(MQTT_SUB_OPT_SEND_RETAIN_NEVER.rawValue)
            }
        }
        return io.withLock { mosquitto_subscribe_v5(pointer, nil, filter, options.qos.rawValue, flags, nil) }
    }

    func unsubscribe(_ filter: String) -> Int32 { io.withLock { mosquitto_unsubscribe_v5(pointer, nil, filter, nil) } }

    func disconnect() -> Int32 { io.withLock { mosquitto_disconnect_v5(pointer, 0, nil) } }
}

/// What one `mosquitto_publish` call did.
struct PublishResult: Sendable {
    var rc: Int32
    /// Output is left waiting (the socket took only part of it): the network thread must poll for POLLOUT.
    var wantsWrite: Bool
    /// The message was written inside the call and its `on_publish` came there (`acknowledgedDuringPublish`).
    var writtenAtOnce = false
}

/// Results of `mosquitto_publish` for QoS ≥ 1 that come *after* the message entered libmosquitto's outgoing queue
/// (checked against libmosquitto 2.0.11's `mosquitto_publish_v5`): the direct write failed or there is no connection,
/// and libmosquitto sends the message again after the next connect. Anything else was refused before queueing.
let queuedDespiteError: Set<Int32> = [MOSQ_NO_CONN, Int32(MOSQ_ERR_CONN_LOST.rawValue), Int32(MOSQ_ERR_ERRNO.rawValue)]

let MOSQ_SUCCESS = Int32(MOSQ_ERR_SUCCESS.rawValue)
let MOSQ_NO_CONN = Int32(MOSQ_ERR_NO_CONN.rawValue)

/// Text for a libmosquitto error code or an MQTT reason code (they share the `rc` of the callbacks).
func mosquittoDescription(_ code: Int32) -> String {
    // libmosquitto 2.0.11 (Debian 12) has no text for its own keepalive error.
    if code == Int32(MOSQ_ERR_KEEPALIVE.rawValue) { return "no answer from the broker within the keepalive" }
    return code >= 128 ? String(cString: mosquitto_reason_string(code)) : String(cString: mosquitto_strerror(code))
}
