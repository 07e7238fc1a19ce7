/// MQTT delivery guarantee of one message or subscription.
public enum MQTTQoS: Int32, Sendable, Comparable, CaseIterable {
    case atMostOnce = 0
    case atLeastOnce = 1
    case exactlyOnce = 2

    public static func < (lhs: MQTTQoS, rhs: MQTTQoS) -> Bool { lhs.rawValue < rhs.rawValue }
}
