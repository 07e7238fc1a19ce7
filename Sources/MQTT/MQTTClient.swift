internal import CMosquitto
import Glibc
import Logging
import Synchronization

/// An MQTT client over libmosquitto that survives broker outages: it reconnects with back-off, restores its
/// subscriptions on every connect, and keeps QoS ≥ 1 messages published while offline in a bounded buffer that is
/// flushed, in order and before anything newer, once the broker is back.
///
/// The broker's socket is served by an `MQTTLoopHost` (the daemon's D-Bus loop) or by a thread of the client's own
/// (see `MQTTClient+NetworkLoop`); "the network thread" below is whichever of the two serves it.
///
/// Which thread owns what, and why each lock is there (the rule: one owner per C handle, docs/dev/ARCHITECTURE.md):
/// - `link` (`LinkCore`) owns the libmosquitto handle and the state only the network thread touches (turns, the
///   callbacks' link events), checked per access in debug builds. The handle's I/O lock is the one lock around
///   libmosquitto itself: publishers on any thread write their packets under it, so a value needs no thread switch,
///   and a publish call learns under it whether its message was written at once.
/// - `session`: what publishers, `subscribe` and the network thread decide on together (phase, buffer, deferred
///   messages, subscriptions, the last topic checked), so that a message is either handed over or buffered and
///   buffered ones go first. Taken before the I/O lock, never inside it.
/// - `tally`: the in-flight ledger, shutdown's delivery tracker and the drop totals, which libmosquitto's callbacks
///   update from inside its calls on whichever thread made them; a leaf, taken inside the other two.
/// - `stopRequested`: shutdown's word to the loop, read on every turn without a lock.
/// - `link.connectOutcome`: the hosted connect helper thread's result.
/// The rest keep their own small state (`StateBroadcast`, `Latch`, `LoopLiveness`, `WakeSignal`, `InboxGauge`).
public final class MQTTClient: Sendable {
    let configuration: MQTTConfiguration
    let logger: Logger
    let link: LinkCore
    let session: Mutex<SessionState>
    let tally = Mutex(LinkTally())
    let finalMessagesDelivered = Latch()
    let threadEnded = Latch()
    let states = StateBroadcast()
    let liveness = LoopLiveness()
    let wake: WakeSignal
    let stopRequested = Atomic<Bool>(false)
    let messageSink: AsyncStream<MQTTInbound>.Continuation
    let dropSink: AsyncStream<MQTTDropReport>.Continuation

    /// `link.handle`, held here as well: every publish reaches it, and through `link` that cost a retain and a
    /// release per value (`make profile-decoded`).
    let handle: MosquittoHandle

    /// Every message received on a subscribed filter, in arrival order. Meant for one consumer. At most
    /// `inboxLimit` bytes wait for it: beyond, received messages are dropped and reported (`.inboxFull`).
    public let messages: MQTTInbox
    let inbox: InboxGauge
    /// The bytes of received messages that may wait for the consumer.
    public static let inboxLimit = 1024 * 1024

    /// One report per event that lost messages for good (evictions by the offline bound, QoS 0 while offline,
    /// shutdown, oversize input), meant for one consumer that logs or publishes them (rate-limiting is its job).
    /// Only the newest 256 reports wait for a slow consumer; each carries the running total for its reason.
    public let drops: AsyncStream<MQTTDropReport>

    public init(configuration: MQTTConfiguration, logger: Logger = Logger(label: "gattbridge.mqtt")) throws(MQTTError) {
        self.configuration = configuration
        self.logger = logger
        handle = try MosquittoHandle(configuration: configuration)
        link = LinkCore(handle: handle, ackLimit: Self.ackTimeout(keepalive: configuration.keepalive))
        session = Mutex(SessionState(bufferLimit: configuration.offlineBufferLimit,
                                     byteLimit: configuration.offlineBufferBytes))
        let (stream, sink) = AsyncStream.makeStream(of: MQTTInbound.self)
        messageSink = sink
        let wake = WakeSignal()
        self.wake = wake
        inbox = InboxGauge(limit: Self.inboxLimit)
        messages = MQTTInbox(stream: stream, gauge: inbox)
        (drops, dropSink) = AsyncStream.makeStream(of: MQTTDropReport.self, bufferingPolicy: .bufferingNewest(256))
        handle.setUserData(Unmanaged.passUnretained(self).toOpaque())
        installCallbacks()
    }

    /// Starts serving the link, on `host`'s thread or (nil) on a thread of the client's own; connects without
    /// blocking the caller or the host. Calling it twice has no effect.
    public func start(on host: (any MQTTLoopHost)? = nil) {
        let first = session.withLock { state in
            guard state.phase == .created else { return false }
            state.phase = .running
            return true
        }
        guard first else { return }
        logger.info("MQTT client starting", metadata: ["broker": "\(configuration)"])
        liveness.started()
        startServing(on: host)
    }

    public func connectionStates() -> AsyncStream<MQTTConnectionState> { states.stream() }

    public var connectionState: MQTTConnectionState { states.current }

    public var isConnected: Bool { states.current == .connected }

    /// QoS ≥ 1 messages evicted by the offline bound since the client was created.
    public var droppedWhileOffline: Int { session.withLock { $0.buffer.evicted } }

    public var droppedQoS0WhileOffline: Int { dropTotal(.notConnected) }

    /// Received messages over `maximumPacketSize`, dropped without being copied (MQTT 3.1.1 only).
    public var droppedOversizeReceived: Int { dropTotal(.oversizeReceived) }

    /// Messages lost for `reason` since the client was created (`MQTTDropReport.total`).
    func dropTotal(_ reason: MQTTDropReport.Reason) -> Int { tally.withLock { $0.drops[reason] ?? 0 } }

    /// Messages waiting in our buffer for the broker (not yet given to libmosquitto).
    public var offlineBufferCount: Int { session.withLock { $0.buffer.count } }

    /// QoS ≥ 1 messages given to libmosquitto and not yet acknowledged: sent and awaiting PUBACK, or queued in
    /// libmosquitto for the next connect. They count against the offline bound together with `offlineBufferCount`.
    public var unacknowledgedCount: Int { tally.withLock { $0.ledger.count } }

    /// Subscribes now if connected, and again after every reconnect with the same options. `retainHandling` is an
    /// MQTT 5 subscription option; on 3.1.1 the broker always sends retained messages (check `MQTTMessage.retain`).
    /// Subscribing again to the same filter replaces its options.
    public func subscribe(_ filter: String, qos: MQTTQoS = .atLeastOnce, retainHandling: MQTTRetainHandling = .sendOnSubscribe) {
        guard mosquitto_sub_topic_check(filter) == MOSQ_SUCCESS, !filter.utf8.contains(0) else {
            logger.error("invalid MQTT subscription filter", metadata: ["filter": "\(filter)"])
            return
        }
        let options = SubscriptionOptions(qos: qos, retainHandling: retainHandling)
        let sent = session.withLock { state in
            state.subscriptions[filter] = options
            return state.ready && handle.subscribe(filter, options: options) == MOSQ_SUCCESS
        }
        // Only after a packet was queued: otherwise the network thread may be inside a (blocking) connect call
        // holding the I/O lock, and this caller must not wait for it.
        if sent, handle.wantsWrite { wake.signal() }
    }

    public func unsubscribe(_ filter: String) {
        let sent = session.withLock { state in
            guard state.subscriptions.removeValue(forKey: filter) != nil else { return false }
            return state.ready && handle.unsubscribe(filter) == MOSQ_SUCCESS
        }
        if sent, handle.wantsWrite { wake.signal() }
    }

    @discardableResult
    public func publish(topic: String, string: String, qos: MQTTQoS = .atLeastOnce, retain: Bool = false) -> MQTTPublishOutcome {
        publish(topic: topic, payload: Array(string.utf8), qos: qos, retain: retain)
    }

    /// Never blocks on the network: the message is queued in libmosquitto (whose thread writes it) or buffered.
    @discardableResult
    public func publish(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = false) -> MQTTPublishOutcome {
        publish(OutgoingMessage(message: MQTTMessage(topic: topic, payload: payload, qos: qos, retain: retain)))
    }

    /// Publishes `message` with its MQTT 5 request metadata (`responseTopic`, `correlationData`), which MQTT 3.1.1
    /// cannot carry and drops. Like the other `publish` methods, never blocks on the network.
    @discardableResult
    public func publish(_ message: consuming MQTTMessage) -> MQTTPublishOutcome {
        publish(OutgoingMessage(message: message))
    }

    /// A value's way out (every notification comes here): text for `topic`, published without making an
    /// `MQTTMessage` when it can go to libmosquitto at once. The general path makes one and copies and destroys it
    /// several times on the way (a retain and a release of its strings each time). A message that has to wait
    /// (not connected, older ones waiting, the I/O lock taken by the network thread) or a topic not yet checked
    /// takes the general path, with the same outcome as `publish(_:)`.
    @discardableResult
    public func publish(topic: String, text: String, qos: MQTTQoS, retain: Bool) -> MQTTPublishOutcome {
        if let direct = MQTTMessage.withUTF8(of: text, { publishDirectly(topic: topic, $0, qos: qos, retain: retain) }) {
            return direct
        }
        return publish(OutgoingMessage(message: MQTTMessage(topic: topic, string: text, qos: qos, retain: retain)))
    }

    /// `publish(topic:text:qos:retain:)` for a payload the caller lends as UTF-8 bytes (a `hex` value encoded on the
    /// stack, `ChannelPublisher`): no `String` is made for it unless the message has to wait, where it is copied
    /// into one. Same outcomes as the other `publish` methods.
    @discardableResult
    public func publish(topic: String, utf8 payload: UnsafeRawBufferPointer, qos: MQTTQoS, retain: Bool) -> MQTTPublishOutcome {
        if let direct = publishDirectly(topic: topic, payload, qos: qos, retain: retain) { return direct }
        return publish(OutgoingMessage(message: MQTTMessage(topic: topic, payload: Array(payload), qos: qos, retain: retain)))
    }

    /// The way out without a message: libmosquitto takes `payload` at once, or nil when the message has to wait
    /// (not connected, older ones waiting, the I/O lock taken by the network thread) or its topic is not yet checked.
    private func publishDirectly(topic: String, _ payload: UnsafeRawBufferPointer, qos: MQTTQoS, retain: Bool) -> MQTTPublishOutcome? {
        session.withLock { state -> MQTTPublishOutcome? in
            guard state.checkedTopic == topic, route(qos: qos, state) == .handOver, state.deferred.isEmpty
            else { return nil }
            var mid: Int32 = 0
            guard let result = handle.tryPublish(topic: topic, bytes: payload, qos: qos, retain: retain, mid: &mid)
            else { return nil }
            let footprint = MQTTMessage.footprint(topicBytes: topic.utf8.count, payloadBytes: payload.count)
            return settle(result, mid: mid, qos: qos, footprint: footprint, tracked: false, state: &state)
        }
    }

    /// Where a message of `qos` goes in `state`: the one decision both publish paths share.
    enum Route: Equatable {
        case stopped, handOver, overByteBound, notConnected, buffer
    }

    func route(qos: MQTTQoS, _ state: SessionState) -> Route {
        switch state.phase {
        case .stopped: .stopped
        // libmosquitto already holds the bound's worth of unwritten packets (a flood faster than the socket): a
        // QoS 0 message is MQTT's to lose, and it is counted.
        case _ where state.ready && qos == .atMostOnce: overByteBound(state) ? .overByteBound : .handOver
        case _ where state.ready && mayHandOverDirectly(state): .handOver
        case _ where qos == .atMostOnce: .notConnected
        // Offline, or libmosquitto holds the bound's worth unacknowledged (then older buffered messages wait for
        // PUBACKs and the network thread hands them over, this one after them).
        default: .buffer
        }
    }

    func publish(_ outgoing: OutgoingMessage) -> MQTTPublishOutcome {
        let (outcome, evicted) = session.withLock { state -> (MQTTPublishOutcome, [OutgoingMessage]) in
            let topic = outgoing.message.topic
            if state.checkedTopic != topic {
                guard Self.isValidTopic(topic) else { return (.dropped(.invalidTopic(topic)), []) }
                state.checkedTopic = topic
            }
            if let data = outgoing.message.correlationData, data.count > Int(UInt16.max) {
                return (.dropped(.correlationDataTooLong), [])
            }
            switch route(qos: outgoing.message.qos, state) {
            case .stopped:
                return (.dropped(.clientShutDown), [])
            case .handOver:
                return (handOver(outgoing, state: &state), [])
            case .overByteBound:
                return (.dropped(.overByteBound), [])
            case .notConnected:
                return (.dropped(.notConnected), [])
            case .buffer:
                let held = heldBeside(state)
                let full = state.buffer.isFull(held: held)
                let evicted = state.buffer.append(outgoing, held: held)
                return (full ? .dropped(.offlineBufferFull) : .buffered, evicted)
            }
        }
        if case .dropped(let cause) = outcome {
            switch cause {
            case .invalidTopic, .correlationDataTooLong:
                logger.error("MQTT message dropped", metadata: ["reason": "\(cause)"])
            case .notConnected: reportDrop(.notConnected, count: 1)
            case .overByteBound: reportDrop(.bufferFull, count: 1)
            case .clientShutDown, .offlineBufferFull, .refused: break
            }
            if outgoing.tracked { abandonTracked() }
        }
        if !evicted.isEmpty {
            reportDrop(.bufferFull, count: evicted.count)
            for message in evicted where message.tracked && message != outgoing { abandonTracked() }
        }
        return outcome
    }

    /// libmosquitto's unacknowledged messages count against the bound; beyond it (a broker that stopped acking)
    /// new messages queue in our buffer, whose eviction keeps the total flat, instead of in libmosquitto's
    /// unbounded queue. The bound never goes below libmosquitto's own in-flight window.
    func mayHandOverDirectly(_ state: SessionState) -> Bool {
        guard state.buffer.isEmpty else { return false }
        let held = heldBeside(state)        // one lock for the count and the bytes
        return held.count < inFlightGate && held.bytes < configuration.offlineBufferBytes
    }

    /// What libmosquitto holds plus what waits for the network thread, against which the buffer's bound is kept.
    func heldBeside(_ state: SessionState) -> Held {
        let ledger = tally.withLock { $0.ledger.held }
        return Held(count: ledger.count, bytes: ledger.bytes + state.deferred.bytes)
    }

    /// True when libmosquitto and the deferred queue already hold the byte bound's worth.
    func overByteBound(_ state: SessionState) -> Bool {
        heldBeside(state).bytes >= configuration.offlineBufferBytes
    }

    /// How long QoS ≥ 1 messages may wait with no acknowledgement at all before the link is taken for stalled and
    /// reconnected (`AckWatch`): twice the keepalive, at least 20 s. A working broker acknowledges in milliseconds,
    /// even behind a flood; this only has to stay clear of one that is slow but moving.
    static func ackTimeout(keepalive: Duration) -> Duration {
        max(keepalive * 2, .seconds(20))
    }

    var inFlightGate: Int { max(configuration.offlineBufferLimit, MosquittoHandle.sendMaximum) }

    /// Counts and reports messages lost for good.
    func reportDrop(_ reason: MQTTDropReport.Reason, count: Int) {
        guard count > 0 else { return }
        let total = tally.withLock { tally in
            tally.drops[reason, default: 0] += count
            return tally.drops[reason]!
        }
        dropSink.yield(MQTTDropReport(reason: reason, count: count, total: total))
    }

    /// Takes every message waiting in the buffer (not yet given to libmosquitto), oldest first, e.g. to move them
    /// to a replacement client with `adopt`. Messages already in libmosquitto (`unacknowledgedCount`) cannot be
    /// taken out: they are sent by this client or, if it shuts down first, lost and reported as `.shutdown`.
    public func drainBuffered() -> [MQTTMessage] {
        session.withLock { state in
            var kept: [OutgoingMessage] = []
            var taken: [MQTTMessage] = []
            for outgoing in state.buffer.takeAll() {
                if outgoing.tracked { kept.append(outgoing) } else { taken.append(outgoing.message) }
            }
            _ = state.buffer.prepend(kept)
            return taken
        }
    }

    /// Puts `messages` (oldest first, e.g. from another client's `drainBuffered`) in front of this client's own
    /// buffered messages, as they are older. Beyond the bound the oldest are evicted and reported. Works in
    /// batches, yielding between them, so publishers on other threads never wait long for the session lock.
    /// QoS 0 messages are skipped (they are never buffered). Returns how many were evicted.
    @discardableResult
    public func adopt(_ messages: [MQTTMessage], batchSize: Int = 512) async -> Int {
        let adoptable = messages.filter { $0.qos > .atMostOnce }
        var evicted = 0
        // Last batch first: each batch goes in front of the previous one, so the order stays oldest first.
        var end = adoptable.count
        while end > 0 {
            let start = max(0, end - max(batchSize, 1))
            let batch = adoptable[start..<end].map { OutgoingMessage(message: $0) }
            let lost = session.withLock { state -> Int in
                guard state.phase != .stopped else { return batch.count }
                return state.buffer.prepend(batch, held: heldBeside(state)).count
            }
            if lost > 0 { reportDrop(.bufferFull, count: lost) }
            evicted += lost
            end = start
            if end > 0 { await Task.yield() }
        }
        wake.signal()       // connected: the network thread hands them over
        return evicted
    }

    /// libmosquitto's check, and no NUL inside (C would cut the topic short there); the caller remembers a topic
    /// that passes (`SessionState.checkedTopic`). Through `withCString`: the implicit String-to-pointer conversion
    /// copies the topic into a new array each time.
    private static func isValidTopic(_ topic: String) -> Bool {
        topic.withCString { strlen($0) == topic.utf8.count && mosquitto_pub_topic_check($0) == MOSQ_SUCCESS }
    }

    /// Gives one message to libmosquitto, which writes it from this thread; call with the session lock held so
    /// ordering with the buffer holds. For QoS ≥ 1 a lost connection or a failed write still leaves the message in
    /// libmosquitto's queue, to be sent after the next connect, so it is not buffered again: that would duplicate it.
    ///
    /// When the network thread holds the I/O lock (reading PUBACKs), the message is deferred to it rather than
    /// waited for (`mayDefer`; the network thread itself passes false). Shutdown's tracked messages defer too when
    /// others are already waiting, so they stay last.
    func handOver(_ outgoing: OutgoingMessage, state: inout SessionState, mayDefer: Bool = true) -> MQTTPublishOutcome {
        var mid: Int32 = 0
        let attempt: PublishResult?
        if !mayDefer || (state.deferred.isEmpty && outgoing.tracked) {
            attempt = handle.publish(outgoing.message, mid: &mid)
        } else if state.deferred.isEmpty {
            attempt = handle.tryPublish(outgoing.message, mid: &mid)
        } else {
            attempt = nil               // older messages wait for the network thread: this one goes after them
        }
        guard let result = attempt else {
            state.deferred.append(outgoing)
            wake.signal()
            return .handedOver
        }
        let outcome = settle(result, mid: mid, qos: outgoing.message.qos, footprint: outgoing.footprint,
                             tracked: outgoing.tracked, state: &state)
        // A publisher sees the outcome; on the network thread nobody does, so it is logged there.
        if !mayDefer, case .dropped(let cause) = outcome { return dropped(outgoing, cause) }
        return outcome
    }

    /// After libmosquitto took (or refused) a message: the write left waiting, the refusal counted, or the message
    /// entered in the in-flight ledger (and the shutdown tracker for a tracked one) unless it was written at once.
    func settle(_ result: PublishResult, mid: Int32, qos: MQTTQoS, footprint: Int, tracked: Bool,
                state: inout SessionState) -> MQTTPublishOutcome {
        // A write that did not complete (socket buffer full) or a packet queued while the network thread is inside a
        // callback waits for the network thread, which only polls for POLLOUT when told.
        if result.wantsWrite { wake.signal() }
        if result.writtenAtOnce {
            // Written and reported inside the call (QoS 0, most values): libmosquitto holds nothing of it any more.
            if tracked, tally.withLock({ $0.deliveries.deliveredAtOnce() }) { finalMessagesDelivered.open() }
            return .handedOver
        }
        let rc = result.rc
        guard rc == MOSQ_SUCCESS || (qos > .atMostOnce && queuedDespiteError.contains(rc)) else {
            if rc == MOSQ_NO_CONN { reportDrop(.notConnected, count: 1) }
            return .dropped(.refused(code: rc))
        }
        let completed = tally.withLock { tally in
            tally.ledger.handedOver(mid: mid, qos: qos, bytes: footprint)
            return tracked && tally.deliveries.handedOver(mid: mid)
        }
        if completed { finalMessagesDelivered.open() }
        return .handedOver
    }

    /// Hands over what publishers deferred, then, when connected, buffered messages while libmosquitto's
    /// unacknowledged count is below the bound; on the network thread.
    func handOverWaiting() {
        link.owner.assertOnOwner("MQTT hand-over of waiting messages")
        session.withLock { state in
            if !state.deferred.isEmpty {
                for outgoing in state.deferred.takeAll() { _ = handOver(outgoing, state: &state, mayDefer: false) }
            }
            guard state.ready else { return }
            flushBuffer(&state)
        }
    }

    /// Hands buffered messages over in order while the bound allows; call with the session lock held.
    func flushBuffer(_ state: inout SessionState) {
        let gate = inFlightGate
        while !state.buffer.isEmpty, tally.withLock({ $0.ledger.count }) < gate, !overByteBound(state),
              let next = state.buffer.popFirst() {
            _ = handOver(next, state: &state, mayDefer: false)
        }
    }

    private func dropped(_ outgoing: OutgoingMessage, _ cause: MQTTDropCause) -> MQTTPublishOutcome {
        logger.error("MQTT message dropped", metadata: ["reason": "\(cause)"])
        if outgoing.tracked { abandonTracked() }
        return .dropped(cause)
    }

    private func abandonTracked() {
        if tally.withLock({ $0.deliveries.abandoned() }) { finalMessagesDelivered.open() }
    }

    /// True when the network thread completed a loop iteration within the last 5 s (it iterates at least once a
    /// second, connected or not: a broker outage keeps this true), or is inside one connect call (DNS, socket) that
    /// began less than 60 s ago. A deadlocked or spinning-in-a-callback thread makes it false, as does a client that
    /// was never started or has shut down.
    public func loopIsAlive() async -> Bool { liveness.isAlive }

    /// Whether the network loop made a turn within `window`: it turns at least once a second however busy its thread
    /// is, so a window of a couple of seconds tells a loop that turns from one that does not.
    public func loopTurned(within window: Duration) -> Bool { liveness.isAlive(within: window) }

    /// Publishes `finalMessages` (e.g. the retained `offline` state), waits until each is acknowledged (QoS ≥ 1) or
    /// written (QoS 0) or `timeout` passes, disconnects cleanly (so the broker does not send the will), and ends the
    /// network thread. Later publishes are dropped. Calling it again returns at once.
    ///
    /// Returns how many messages were lost (still buffered, or in libmosquitto unacknowledged, when the client
    /// stopped); they are also logged and reported on `drops` as `.shutdown`, so a shutdown with the broker down
    /// never loses messages silently. Call `drainBuffered` first to keep the buffered ones.
    @discardableResult
    public func shutdown(finalMessages: [MQTTMessage] = [], timeout: Duration = .seconds(2)) async -> Int {
        let deadline = ContinuousClock.now + timeout
        let wasRunning = session.withLock { $0.phase == .running }
        if wasRunning, !finalMessages.isEmpty {
            tally.withLock { $0.deliveries.startTracking() }
            for message in finalMessages {
                tally.withLock { $0.deliveries.expect() }
                _ = publish(OutgoingMessage(message: message, tracked: true))
            }
            if tally.withLock({ $0.deliveries.outstanding == 0 }) { finalMessagesDelivered.open() }
            if await !finalMessagesDelivered.wait(timeout: deadline - .now) {
                logger.warning("MQTT final messages not confirmed before the shutdown timeout")
            }
        }
        let (pending, bufferedLost) = session.withLock { state -> (Bool, Int) in
            let previous = state.phase
            state.phase = .stopped
            state.ready = false
            let lost = state.buffer.takeAll().count { !$0.tracked } + state.deferred.takeAll().count { !$0.tracked }
            return (previous == .running, lost)
        }
        if pending {
            // The network thread sends the DISCONNECT itself: it may be inside a connect call (DNS) that a
            // disconnect here would have to wait for.
            stopRequested.store(true, ordering: .releasing)
            wake.signal()
            if await !threadEnded.wait(timeout: max(deadline - .now, .milliseconds(200))) {
                logger.warning("MQTT network thread did not end before the shutdown timeout")
            }
        }
        let lost = bufferedLost + tally.withLock { $0.ledger.count }
        if lost > 0 {
            logger.warning("MQTT messages not delivered before shutdown", metadata: ["count": "\(lost)"])
            reportDrop(.shutdown, count: lost)
        }
        states.finish()
        messageSink.finish()
        dropSink.finish()
        return lost
    }
}
