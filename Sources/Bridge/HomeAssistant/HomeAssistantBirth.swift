import MQTT

/// Home Assistant's birth (`online` on its status topic) means it (re)started and needs every config again. Births
/// come in bursts, and anyone on the broker may publish one (a flood of 20,000 is in the soak): the first arms one
/// republish `delay` later and those meanwhile are absorbed, so a flood costs one republish per window. Every
/// feature that announces configs (devices, broadcasters, the bridge's own device) keeps one of these.
package struct HomeAssistantBirth: Sendable {
    package init() {}

    static let delay: Duration = .milliseconds(500)

    private var pending = false

    /// A message on the status topic: when the configs should go out again, or nil when it is no birth or one is
    /// already pending.
    package mutating func heard(_ message: MQTTMessage,
                                now: ContinuousClock.Instant = .now) -> ContinuousClock.Instant? {
        guard message.payloadString == "online", !pending else { return nil }
        pending = true
        return now + Self.delay
    }

    /// The republish is being done: the next birth arms another.
    package mutating func republishing() { pending = false }
}
