import BlueZ
import Bluetooth
import BridgeAdverts
import BridgeFeatureHost
import BridgeFleet
import BridgeModel
import BridgeTools
import Codecs
import Config
import Logging
import MQTT

/// The bridge API (docs/bridge-api.md): requests on `B/bridge/request/<verb>` answered on `B/bridge/response/<verb>` (and an
/// MQTT 5 Response Topic), the retained `B/bridge/devices` and `B/bridge/info`. Device changes go through the core
/// (`FeatureContext.updateDevices`) and are saved as drop-ins; `scan` and `inspect` take seconds, so they run in child
/// tasks of the feature while other requests are answered.
///
/// What it says of the devices, adapters and links it reads from the read model (docs/dev/ARCHITECTURE.md, "The
/// read model"); what it decides (which requests are held, routed, answered or ignored, when the retained topics are
/// written) is `BridgeAPIMachine`'s. This is the loop that feeds the machine and carries its actions out.
///
/// In a fleet (docs/fleet.md, config `bridge:`) every bridge receives every shared request and writes nothing shared
/// unless the `FleetDirectory` says it is the one: the shared requests get one answer, the shared retained topics
/// one writer. Each bridge also serves `B/bridge/<id>/request/<verb>` (answered on `B/bridge/<id>/response/<verb>`)
/// and keeps its own view on `B/bridge/<id>/devices` and `B/bridge/<id>/info`.
package struct BridgeAPIFeature: BridgeFeature {
    package init(version: String, started: ContinuousClock.Instant, bluetooth: any BluetoothTools,
                 broker: any BrokerStatus, logger: Logger, adverts: AdvertCounts = AdvertCounts()) {
        self.version = version
        self.started = started
        self.bluetooth = bluetooth
        self.broker = broker
        self.logger = logger
        self.adverts = adverts
    }

    let version: String
    let started: ContinuousClock.Instant
    /// BlueZ's adapters and the one-shot tools; the broker connection's health. Narrow, on purpose: the feature
    /// holds no `BlueZClient` or `MQTTLink`.
    let bluetooth: any BluetoothTools
    let broker: any BrokerStatus
    let logger: Logger
    /// What the passive half's bounds turned away (`health`).
    let adverts: AdvertCounts
    static let inspectTimeout: Duration = .seconds(20)
    /// Fleet: after a broker (re)connect, how long the retained bridge states have to arrive before this bridge may
    /// take itself for the coordinator; the ownership machine waits as long before claiming, for the same reason.
    static let listenTime = OwnershipMachine.listenTime
    /// Requests that may wait for the API's loop; beyond, a flood's requests are dropped (`RequestBacklog`).
    static let maxQueuedRequests = 256
    /// The shortest interval between two log lines about dropped requests.
    static let dropLogPeriod: Duration = .seconds(5)

    package func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        var machine = BridgeAPIMachine()
        let (inputs, input) = AsyncStream.makeStream(of: BridgeAPIMachine.Input.self)
        await withDiscardingTaskGroup { group in
            let backlog = RequestBacklog(limit: Self.maxQueuedRequests)
            let busy = BusyAnswers()
            let logger = logger
            // Admits requests outside the loop, which is what a flood keeps busy (`RequestBacklog`, `BusyAnswers`).
            group.addTask {
                var nextLog = ContinuousClock.now
                for await event in events {
                    if case .message(let message) = event, RequestBacklog.isRequest(message.topic) {
                        guard backlog.admit() else {
                            busy.answer(message, queued: Self.maxQueuedRequests, context: context)
                            if ContinuousClock.now >= nextLog {
                                nextLog = .now + Self.dropLogPeriod
                                logger.warning("bridge API busy: \(backlog.takeDropped()) request(s) turned away")
                            }
                            continue
                        }
                    }
                    input.yield(.event(event))
                }
                input.finish()
            }
            for await next in inputs {
                if case .event(.message(let message)) = next, RequestBacklog.isRequest(message.topic),
                   backlog.taken() == 0 {
                    let dropped = backlog.takeDropped()
                    if dropped > 0 { logger.warning("bridge API busy: \(dropped) request(s) turned away") }
                }
                if case .event(.stopping) = next { group.cancelAll() }
                let actions = machine.handle(next)
                busy.update(machine.busyRouting)
                for action in actions {
                    switch action {
                    case .armSettle(let token):
                        group.addTask {
                            try? await Task.sleep(for: Self.listenTime)
                            input.yield(.settle(token))
                        }
                    case .startLong(let long):
                        group.addTask {
                            let response = await self.long(long)
                            answer(long.message, on: long.responseTopic, response, context: context)
                            input.yield(.longDone)
                        }
                    default:
                        await perform(action, machine: &machine, context: context)
                    }
                }
            }
        }
    }

    /// One of the machine's actions that runs in the loop.
    func perform(_ action: BridgeAPIMachine.Action, machine: inout BridgeAPIMachine, context: FeatureContext) async {
        switch action {
        case .subscribe(let filter, let retained): context.subscribe(filter, retained: retained)
        case .unsubscribe(let filter): context.unsubscribe(filter)
        case .retain(let topic, let payload): context.publish(topic, payload, qos: 1, retain: true)
        case .publishInfo(let topics, let bridge):
            await publishInfo(topics, bridge: bridge, config: machine.config, context: context)
        case .listDevices:
            guard let listing = await devicesJSON(machine, context: context) else { return }
            context.publishedListing.set(listing)
            for write in machine.listed(listing.serialized) { await perform(write, machine: &machine, context: context) }
        case .answer(let request, let topic, let payload): answer(request, on: topic, payload, context: context)
        case .serve(let request, let message, let topic, let answered):
            let response = await serve(request, machine: machine, context: context)
            if answered {
                answer(message, on: topic, response, context: context)
            } else {
                // Another bridge of the fleet answers; this one's outcome goes to its log.
                let outcome = try? JSONValue.parse(response)
                logger.notice("fleet request \(request.verb.rawValue) applied here: \(outcome?["error"]?.stringValue ?? "ok")")
            }
        case .warning(let text): logger.warning("\(text)")
        case .notice(let text): logger.notice("\(text)")
        case .armSettle, .startLong: break      // child tasks of the loop's group
        }
    }

    /// On `responseTopic` (`B/bridge/response/<verb>`, or this bridge's own in a fleet), and on the request's MQTT 5
    /// Response Topic with its Correlation Data.
    func answer(_ request: MQTTMessage, on responseTopic: String, _ payload: String, context: FeatureContext) {
        context.publish(responseTopic, payload, qos: 1, retain: false)
        if let topic = request.responseTopic, ReplyTopicRule.isPublishable(topic) {
            var reply = MQTTMessage(topic: topic, string: payload, qos: .atLeastOnce, retain: false)
            reply.correlationData = request.correlationData
            context.publish(reply)
        }
    }
}
