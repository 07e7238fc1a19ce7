import MQTT

/// The broker as the core and the features see it: the daemon's `MQTTLink` (whose client a reload may swap), a
/// recorder in tests. Subscriptions are at least once.
public protocol BrokerLink: MessagePublisher {
    func publish(_ message: MQTTMessage)
    /// `retainHandling` is MQTT 5's; on 3.1.1 the broker sends retained messages anyway (the reader checks `retain`).
    func subscribe(_ filter: String, retainHandling: MQTTRetainHandling)
    func unsubscribe(_ filter: String)
}

extension BrokerLink {
    package func subscribe(_ filter: String) { subscribe(filter, retainHandling: .sendOnSubscribe) }
}
