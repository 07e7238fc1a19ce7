import BridgeModel
import MQTT
import Synchronization

/// What a feature asks of the core.
package enum CoreRequest: Sendable {
    case republish(states: Bool)
    /// Fleet: this bridge now owns `device` (by name), or no longer does.
    case ownership(device: String, owned: Bool)
    /// Fleet: an owned device is held while its owner learns whether it still owns it (`OwnershipAction.hold`).
    case hold(device: String, held: Bool)
    /// Passive (docs/adverts.md): a broadcaster is heard (`online`) or went silent; said as a session says it.
    case availability(device: String, online: Bool)
    /// The Bluetooth proxy's links on each adapter (by name), counted against its `max_connections`.
    case externalLinks([String: Int])
}

/// Fans the core's events out to the features (one stream each, so a slow feature delays only itself) and routes
/// broker messages on their topic filters to them. Emitting never blocks: it is called from session loops, the
/// command router and the core's loop alike.
package final class FeatureHost: Sendable {
    let link: any BrokerLink
    let requests: AsyncStream<CoreRequest>.Continuation
    package let requestStream: AsyncStream<CoreRequest>
    /// The core, for features that change the device list (the bridge API).
    package let core = CoreReference()
    private struct State {
        var outlets: [AsyncStream<FeatureDelivery>.Continuation] = []
        /// The outlets of the features that want `CoreEvent.broadcast`.
        var broadcastOutlets: [AsyncStream<FeatureDelivery>.Continuation] = []
        /// The outlets of the features that want `CoreEvent.advertisement`.
        var advertisementOutlets: [AsyncStream<FeatureDelivery>.Continuation] = []
        var filters: [(filter: String, feature: Int)] = []
        /// Filters whose topics carry retained state (subscribed with `retained: true`), and the last message seen on
        /// each of their topics. Two features may want the same such filter (the fleet's `B/+/owner`): the second
        /// must not SUBSCRIBE again, since the broker would replay every retained message to the client and the
        /// first feature would take the replay for news; it gets these copies instead.
        var stateFilters: Set<String> = []
        var latest: [String: MQTTMessage] = [:]
    }
    /// At most this many topics are kept for `latest` (they come from anyone who may publish under the filters).
    static let maxLatest = 10_000
    /// Broker messages routed to features and not yet handled, at most this many bytes (`FeatureBacklog`): as much
    /// as the MQTT client's own inbox may hold.
    static let backlogLimit = MQTTClient.inboxLimit
    package let backlog = FeatureBacklog(limit: FeatureHost.backlogLimit)
    /// Answers to the bridge's own requests (the web page's), kept off the broker.
    package let localReplies = LocalReplies()
    /// What was published on `B/bridge/log` lately, and the passive devices' last readings: readers outside MQTT
    /// show what MQTT shows.
    package let recentLog = RecentLog()
    package let passiveReadings = PassiveReadings()
    /// The `B/bridge/devices` listing as last made (`BridgeAPIFeature`), owners and all.
    package let publishedListing = PublishedListing()
    private let state = Mutex(State())

    /// The GATT client and connect gate the sessions use, for features that connect devices of their own; nil in
    /// tests that have none.
    package let peripherals: PeripheralAccess?

    package init(link: any BrokerLink, peripherals: PeripheralAccess? = nil) {
        self.link = link
        self.peripherals = peripherals
        (requestStream, requests) = AsyncStream.makeStream(of: CoreRequest.self)
    }

    /// Registers a feature: its event stream and its context.
    package func attach(broadcasts: Bool = false, rawAdvertisements: Bool = false) -> (FeatureEvents, FeatureContext) {
        let (stream, outlet) = AsyncStream.makeStream(of: FeatureDelivery.self)
        let id = state.withLock { state in
            state.outlets.append(outlet)
            if broadcasts { state.broadcastOutlets.append(outlet) }
            if rawAdvertisements { state.advertisementOutlets.append(outlet) }
            return state.outlets.count - 1
        }
        return (FeatureEvents(deliveries: stream, backlog: backlog), FeatureContext(id: id, host: self))
    }

    /// The feature's run ended: its stream ends, and what is routed to it from now on is not counted.
    package func detach(_ context: FeatureContext) {
        state.withLock { $0.outlets[context.id] }.finish()
    }

    package func emit(_ event: CoreEvent) {
        let delivery = FeatureDelivery(event: event, bytes: 0)
        switch event {
        case .broadcast:
            for outlet in state.withLock({ $0.broadcastOutlets }) { outlet.yield(delivery) }
        case .advertisement, .link, .unheard:
            for outlet in state.withLock({ $0.advertisementOutlets }) { outlet.yield(delivery) }
        default:
            for outlet in state.withLock({ $0.outlets }) { outlet.yield(delivery) }
        }
    }

    /// Hands a broker message to every feature with a matching filter; false when none has one.
    package func route(_ message: MQTTMessage) -> Bool {
        let (outlets, targets) = state.withLock { state in
            if state.stateFilters.contains(where: { MQTTTopic.matches(filter: $0, topic: message.topic) }) {
                if message.payload.isEmpty {
                    state.latest[message.topic] = nil
                } else if state.latest[message.topic] != nil || state.latest.count < Self.maxLatest {
                    state.latest[message.topic] = message
                }
            }
            return (state.outlets, Set(state.filters.filter { MQTTTopic.matches(filter: $0.filter, topic: message.topic) }
                .map(\.feature)))
        }
        let delivery = FeatureDelivery(event: .message(message), bytes: message.footprint)
        backlog.add(delivery.bytes * targets.count)
        for id in targets.sorted() {
            if case .terminated = outlets[id].yield(delivery) { backlog.release(delivery.bytes) }
        }
        return !targets.isEmpty
    }

    /// With `retained`, a feature that joins a filter another one already holds gets the last message of each of
    /// its topics at once, marked retained as the broker's replay would be. Those copies are yielded under the lock,
    /// so a newer message routed meanwhile cannot overtake them.
    func subscribe(_ filter: String, feature: Int, retained: Bool = false) {
        let isNew = state.withLock { state in
            let isNew = !state.filters.contains { $0.filter == filter }
            let joins = !state.filters.contains(where: { $0 == (filter, feature) })
            if joins { state.filters.append((filter, feature)) }
            if retained {
                if !isNew, joins, state.stateFilters.contains(filter) {
                    for var message in state.latest.values.sorted(by: { $0.topic < $1.topic })
                    where MQTTTopic.matches(filter: filter, topic: message.topic) {
                        message.retain = true
                        state.outlets[feature].yield(FeatureDelivery(event: .message(message), bytes: 0))
                    }
                }
                state.stateFilters.insert(filter)
            }
            return isNew
        }
        if isNew { link.subscribe(filter) }
    }

    func unsubscribe(_ filter: String, feature: Int) {
        let isLast = state.withLock { state in
            state.filters.removeAll { $0 == (filter, feature) }
            let isLast = !state.filters.contains { $0.filter == filter }
            if isLast, state.stateFilters.remove(filter) != nil {
                let kept = state.stateFilters
                state.latest = state.latest.filter { topic, _ in
                    kept.contains { MQTTTopic.matches(filter: $0, topic: topic) }
                }
            }
            return isLast
        }
        if isLast { link.unsubscribe(filter) }
    }

    /// A reload swapped in a new client, which starts without subscriptions.
    package func resubscribe(on client: MQTTClient) {
        for filter in Set(state.withLock { $0.filters.map(\.filter) }) { client.subscribe(filter, qos: .atLeastOnce) }
    }

    /// Ends every feature's stream (the bridge stopped).
    package func finish() {
        for outlet in state.withLock({ $0.outlets }) { outlet.finish() }
        backlog.close()
        requests.finish()
    }
}
