/// Where values go: the MQTT link in the daemon, a recorder in tests.
public protocol MessagePublisher: Sendable {
    func publish(_ topic: String, _ payload: String, qos: Int, retain: Bool)
    /// A payload lent as UTF-8 bytes, valid only during the call (a `hex` value encoded on the stack): the MQTT link
    /// hands it to libmosquitto without making a `String` of it.
    func publish(_ topic: String, utf8 payload: UnsafeRawBufferPointer, qos: Int, retain: Bool)
}

extension MessagePublisher {
    /// Publishers without a way for bytes (the tests' recorders) get the text.
    public func publish(_ topic: String, utf8 payload: UnsafeRawBufferPointer, qos: Int, retain: Bool) {
        publish(topic, String(decoding: payload, as: UTF8.self), qos: qos, retain: retain)
    }
}
