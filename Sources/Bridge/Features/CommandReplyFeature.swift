import BridgeFeatureHost
import BridgeModel
import Codecs
import MQTT

/// Command results on MQTT 5 Response Topics (docs/bridge-api.md): `{"status":"ok"}` once a `set` was written or a `get` read,
/// `{"status":"error","error":…}` when it expired, was rejected or failed; each with the request's Correlation Data.
package struct CommandReplyFeature: BridgeFeature {
    package init() {}

    package func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        for await event in events {
            switch event {
            case .completed(let command):
                reply(command.replies, JSONValue.object([("status", .string("ok"))]).serialized, context)
            case .rejected(let rejection):
                reply(rejection.replies, JSONValue.object([("status", .string("error")),
                                                           ("error", .string(rejection.reason))]).serialized, context)
            default:
                break
            }
        }
    }

    private func reply(_ targets: [ReplyTarget], _ payload: String, _ context: FeatureContext) {
        for target in targets {
            var message = MQTTMessage(topic: target.topic, string: payload, qos: .atLeastOnce, retain: false)
            message.correlationData = target.correlationData
            context.publish(message)
        }
    }
}
