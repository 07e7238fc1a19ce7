import MQTT
import Synchronization

/// The broker as features see it: the daemon's `MQTTLink`, a recorder in tests.
protocol BrokerLink: MessagePublisher {
    func publish(_ message: MQTTMessage)
    func subscribe(_ filter: String)
    func unsubscribe(_ filter: String)
}

/// What a feature asks of the core.
enum CoreRequest: Sendable {
    case republish(states: Bool)
    /// Fleet: this bridge now owns `device` (by name), or no longer does.
    case ownership(device: String, owned: Bool)
}

/// Fans the core's events out to the features (one stream each, so a slow feature delays only itself) and routes
/// broker messages on their topic filters to them. Emitting never blocks: it is called from session loops and the
/// core's actor alike.
final class FeatureHost: Sendable {
    let link: any BrokerLink
    let requests: AsyncStream<CoreRequest>.Continuation
    let requestStream: AsyncStream<CoreRequest>
    /// The core, for features that change the device list (the bridge API).
    let core = CoreReference()
    private struct State {
        var outlets: [AsyncStream<CoreEvent>.Continuation] = []
        var filters: [(filter: String, feature: Int)] = []
    }
    private let state = Mutex(State())

    init(link: any BrokerLink) {
        self.link = link
        (requestStream, requests) = AsyncStream.makeStream(of: CoreRequest.self)
    }

    /// Registers a feature: its event stream and its context.
    func attach() -> (AsyncStream<CoreEvent>, FeatureContext) {
        let (stream, outlet) = AsyncStream.makeStream(of: CoreEvent.self)
        let id = state.withLock { state in
            state.outlets.append(outlet)
            return state.outlets.count - 1
        }
        return (stream, FeatureContext(id: id, host: self))
    }

    func emit(_ event: CoreEvent) {
        for outlet in state.withLock({ $0.outlets }) { outlet.yield(event) }
    }

    /// Hands a broker message to every feature with a matching filter; false when none has one.
    func route(_ message: MQTTMessage) -> Bool {
        let (outlets, targets) = state.withLock { state in
            (state.outlets, Set(state.filters.filter { MQTTTopic.matches(filter: $0.filter, topic: message.topic) }
                .map(\.feature)))
        }
        for id in targets.sorted() { outlets[id].yield(.message(message)) }
        return !targets.isEmpty
    }

    func subscribe(_ filter: String, feature: Int) {
        let isNew = state.withLock { state in
            let isNew = !state.filters.contains { $0.filter == filter }
            if !state.filters.contains(where: { $0 == (filter, feature) }) { state.filters.append((filter, feature)) }
            return isNew
        }
        if isNew { link.subscribe(filter) }
    }

    func unsubscribe(_ filter: String, feature: Int) {
        let isLast = state.withLock { state in
            state.filters.removeAll { $0 == (filter, feature) }
            return !state.filters.contains { $0.filter == filter }
        }
        if isLast { link.unsubscribe(filter) }
    }

    /// A reload swapped in a new client, which starts without subscriptions.
    func resubscribe(on client: MQTTClient) {
        for filter in Set(state.withLock { $0.filters.map(\.filter) }) { client.subscribe(filter, qos: .atLeastOnce) }
    }

    /// Ends every feature's stream (the bridge stopped).
    func finish() {
        for outlet in state.withLock({ $0.outlets }) { outlet.finish() }
        requests.finish()
    }
}
