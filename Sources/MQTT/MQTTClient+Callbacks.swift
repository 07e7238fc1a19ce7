internal import CMosquitto
import Glibc
import Logging

/// libmosquitto callbacks. They run inside libmosquitto's calls, with its callback mutex and our I/O lock held, so
/// they only copy data out and record events: no lock of ours that is held around a libmosquitto call is taken
/// here (that would invite lock-order deadlocks with publishers), only the leaf `tally`. The connect, disconnect,
/// message and subscribe callbacks run on the network thread (only it reads, writes and disconnects); `on_publish`
/// also on a publisher's thread, for a QoS 0 packet written inside its `mosquitto_publish`.
extension MQTTClient {
    static func client(_ userdata: UnsafeMutableRawPointer?) -> MQTTClient? {
        userdata.map { Unmanaged<MQTTClient>.fromOpaque($0).takeUnretainedValue() }
    }

    func installCallbacks() {
        let mosq = handle.pointer
        mosquitto_connect_v5_callback_set(mosq) { _, userdata, rc, _, _ in
            MQTTClient.client(userdata)?.connectCallback(rc)
        }
        mosquitto_disconnect_v5_callback_set(mosq) { _, userdata, rc, _ in
            let error = errno
            MQTTClient.client(userdata)?.disconnectCallback(rc, errno: error)
        }
        mosquitto_message_v5_callback_set(mosq) { _, userdata, message, properties in
            guard let message = message?.pointee else { return }
            MQTTClient.client(userdata)?.messageCallback(message, properties: properties)
        }
        mosquitto_publish_v5_callback_set(mosq) { _, userdata, mid, _, _ in
            MQTTClient.client(userdata)?.publishCallback(mid)
        }
        mosquitto_subscribe_v5_callback_set(mosq) { _, userdata, mid, count, granted, _ in
            guard let granted else { return }
            let codes = (0..<Int(count)).map { granted[$0] }
            MQTTClient.client(userdata)?.subscribeCallback(codes)
        }
        // Only at trace level: with a log callback set, libmosquitto formats a line for every packet sent or received.
        if logger.logLevel <= .trace {
            mosquitto_log_callback_set(mosq) { _, userdata, level, text in
                guard let client = MQTTClient.client(userdata), let text else { return }
                client.logger.trace("libmosquitto: \(String(cString: text))", metadata: ["mosq_level": "\(level)"])
            }
        }
    }

    private func connectCallback(_ rc: Int32) {
        link.events.append(rc == 0 ? .sessionStarted : .refused(code: rc))
    }

    private func disconnectCallback(_ rc: Int32, errno error: Int32) {
        link.events.append(.lost(rc == 0 ? .closedByClient : .error(code: rc, errno: error)))
    }

    /// Copies the message out. `retain` is the PUBLISH packet's retain flag as libmosquitto parsed it: set when the
    /// broker sends a retained message on subscribe, clear on live forwarding. A message over the maximum packet
    /// size (only possible on MQTT 3.1.1, where the broker cannot be told the limit) is dropped uncopied.
    private func messageCallback(_ message: mosquitto_message, properties: OpaquePointer?) {
        link.owner.assertOnOwner("MQTT message callback")
        guard Int(message.payloadlen) <= configuration.maximumPacketSize else {
            logger.warning("MQTT message over the maximum packet size dropped", metadata: [
                "topic": "\(message.topic.map { String(cString: $0).prefix(128) } ?? "")",
                "bytes": "\(message.payloadlen)", "limit": "\(configuration.maximumPacketSize)"])
            reportDrop(.oversizeReceived, count: 1)
            return
        }
        let topic = message.topic.map { String(cString: $0) } ?? ""
        let payload: [UInt8] = message.payload.map {
            Array(UnsafeRawBufferPointer(start: $0, count: Int(message.payloadlen)))
        } ?? []
        let received = MQTTMessage(topic: topic, payload: payload, qos: MQTTQoS(rawValue: message.qos) ?? .atMostOnce,
                                   retain: message.retain, responseTopic: Self.responseTopic(properties),
                                   correlationData: Self.correlationData(properties))
        guard inbox.admit(received.footprint) else {
            // The bridge is `inboxLimit` bytes behind: a flood, whose excess is dropped and counted.
            reportDrop(.inboxFull, count: 1)
            return
        }
        messageSink.yield(.message(received))
    }

    static func responseTopic(_ properties: OpaquePointer?) -> String? {
        guard let properties else { return nil }
        var value: UnsafeMutablePointer<CChar>?
        guard mosquitto_property_read_string(properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), &value, false) != nil,
              let value else { return nil }
        defer { free(value) }
        return String(cString: value)
    }

    static func correlationData(_ properties: OpaquePointer?) -> [UInt8]? {
        guard let properties else { return nil }
        var value: UnsafeMutableRawPointer?
        var length: UInt16 = 0
        guard mosquitto_property_read_binary(properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), &value, &length, false) != nil
        else { return nil }
        defer { free(value) }
        guard let value else { return [] }
        return Array(UnsafeRawBufferPointer(start: value, count: Int(length)))
    }

    private func publishCallback(_ mid: Int32) {
        // The message of the publish call this runs inside: its caller settles it (`settle`), with no lock taken here.
        if handle.acknowledgedDuringPublish(mid) { return }
        let completed = tally.withLock { tally in
            tally.ledger.acknowledged(mid: mid)
            return tally.deliveries.acknowledged(mid: mid)
        }
        if completed { finalMessagesDelivered.open() }
    }

    private func subscribeCallback(_ grantedQoS: [Int32]) {
        for code in grantedQoS where code >= 0x80 {
            logger.error("MQTT subscription refused by the broker", metadata: ["reason": "\(mosquittoDescription(code))"])
        }
    }
}
