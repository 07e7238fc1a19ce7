/// Whether the broker sends retained messages when a subscription is made (MQTT 5 subscription option "Retain
/// Handling"). MQTT 3.1.1 cannot express it: there the broker always sends them (`.sendOnSubscribe`), and callers
/// that must not act on replays check `MQTTMessage.retain` instead.
public enum MQTTRetainHandling: Sendable, Equatable {
    /// Retain handling 0: send retained messages at every subscribe (the MQTT default).
    case sendOnSubscribe
    /// Retain handling 1: send them only if this subscription did not exist yet in the session.
    case sendIfNew
    /// Retain handling 2: never send retained messages for this subscription (command topics: a retained `set`
    /// must not replay on every reconnect).
    case doNotSend
}

/// A filter to restore on every connect, with its options.
struct SubscriptionOptions: Sendable, Equatable {
    var qos: MQTTQoS
    var retainHandling: MQTTRetainHandling
}
