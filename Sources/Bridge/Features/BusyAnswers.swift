import BridgeFeatureHost
import BridgeModel
import Codecs
import MQTT
import Synchronization

/// Answers the requests `RequestBacklog` turns away with `busy`, so a script that sends 300 `device/add` at once
/// learns which to send again instead of waiting for answers that never come (docs/bridge-api.md). It runs in the
/// task that admits requests, not in the API's loop, which is what is busy: the answer costs a JSON parse (requests
/// are at most 64 KiB) and a publish, which goes through the link's outgoing bounds like any other (under a flood of
/// thousands the oldest QoS 1 messages are dropped and counted, never queued without bound).
///
/// The loop tells it, on each change, where answers go and whether this bridge answers the shared requests (in a
/// fleet only the coordinator does); until the config arrives nothing is answered, as the loop would not either.
///
/// At most 256 busy answers go out in a second (a burst of 256): a script's burst of a few hundred is answered in
/// full, while a flood of thousands does not fill the outgoing queue with answers nobody reads, where the answers to
/// the requests that are served would wait behind them. The rest are counted and only logged.
final class BusyAnswers: Sendable {
    struct Routing: Sendable, Equatable {
        var state: BridgeAPITopics
        var replies: ReplyTopicRule
        /// Whether this bridge answers shared requests (`B/bridge/request/<verb>`): alone, or as the coordinator.
        var answersShared: Bool
    }

    private let routing = Mutex<Routing?>(nil)
    private let rate = Mutex(TokenBucket(capacity: 256, interval: .seconds(1) / 256))

    func update(_ new: Routing?) {
        routing.withLock { if $0 != new { $0 = new } }
    }

    /// Publishes `{"status":"error","error":"busy: …"}` for `request`, on the verb's response topic and on its MQTT 5
    /// Response Topic, with the request's transaction when it has one.
    func answer(_ request: MQTTMessage, queued limit: Int, context: FeatureContext) {
        guard let routing = routing.withLock({ $0 }), !request.retain,
              let (verb, shared) = routing.state.verb(of: request.topic),
              !shared || routing.answersShared, rate.withLock({ $0.take(now: .now) }) else { return }
        let transaction: JSONValue?
        switch BridgeRequest.parse(verb: verb, payload: request.payload) {
        case .success(let parsed): transaction = parsed.transaction
        case .failure(let failure): transaction = failure.transaction
        }
        let payload = BridgeResponse.error("busy: \(limit) requests are waiting; send this one again later",
                                           transaction: transaction)
        context.publish(routing.state.responseTopic(verb, shared: shared), payload, qos: 1, retain: false)
        for target in routing.replies.replies(of: request) {
            var reply = MQTTMessage(topic: target.topic, string: payload, qos: .atLeastOnce, retain: false)
            reply.correlationData = target.correlationData
            context.publish(reply)
        }
    }
}
