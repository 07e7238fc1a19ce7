import CMosquitto
import Logging
import Synchronization

/// An MQTT client over libmosquitto that survives broker outages: it reconnects with back-off, restores its
/// subscriptions on every connect, and keeps QoS ≥ 1 messages published while offline in a bounded buffer that is
/// flushed, in order and before anything newer, once the broker is back.
///
/// The network loop runs on a dedicated thread of ours calling `mosquitto_loop`, not `mosquitto_loop_start`:
/// libmosquitto 2.0's `mosquitto_loop_forever` ends its thread for good on errors such as a failed DNS lookup or a
/// refused login, reconnects with a blocking `connect()`, and gives no hook to prove the thread is alive.
public final class MQTTClient: Sendable {
    let configuration: MQTTConfiguration
    let logger: Logger
    let handle: MosquittoHandle
    let session: Mutex<SessionState>
    /// Written by libmosquitto callbacks (network thread), read by the loop after each `mosquitto_loop`. A leaf lock.
    let linkEvents = Mutex<[LinkEvent]>([])
    let deliveries = Mutex(DeliveryTracker())
    let finalMessagesDelivered = Latch()
    let threadEnded = Latch()
    let states = StateBroadcast()
    let liveness = LoopLiveness()
    let wake = WakeSignal()
    let stopRequested = Atomic<Bool>(false)
    let messageSink: AsyncStream<MQTTMessage>.Continuation

    /// Every message received on a subscribed filter, in arrival order. Meant for one consumer.
    public let messages: AsyncStream<MQTTMessage>

    public init(configuration: MQTTConfiguration, logger: Logger = Logger(label: "gattbridge.mqtt")) throws(MQTTError) {
        self.configuration = configuration
        self.logger = logger
        handle = try MosquittoHandle(configuration: configuration)
        session = Mutex(SessionState(bufferLimit: configuration.offlineBufferLimit))
        (messages, messageSink) = AsyncStream.makeStream(of: MQTTMessage.self)
        handle.setUserData(Unmanaged.passUnretained(self).toOpaque())
        installCallbacks()
    }

    /// Starts the network thread, which connects without blocking the caller. Calling it twice has no effect.
    public func start() {
        let first = session.withLock { state in
            guard state.phase == .created else { return false }
            state.phase = .running
            return true
        }
        guard first else { return }
        logger.info("MQTT client starting", metadata: ["broker": "\(configuration)"])
        liveness.started()
        startNetworkThread()
    }

    public func connectionStates() -> AsyncStream<MQTTConnectionState> { states.stream() }

    public var connectionState: MQTTConnectionState { states.current }

    public var isConnected: Bool { states.current == .connected }

    public var droppedWhileOffline: Int { session.withLock { $0.buffer.evicted } }

    public var droppedQoS0WhileOffline: Int { session.withLock { $0.droppedQoS0 } }

    public var offlineBufferCount: Int { session.withLock { $0.buffer.count } }

    public func subscribe(_ filter: String, qos: MQTTQoS = .atLeastOnce) {
        guard mosquitto_sub_topic_check(filter) == MOSQ_SUCCESS, !filter.utf8.contains(0) else {
            logger.error("invalid MQTT subscription filter", metadata: ["filter": "\(filter)"])
            return
        }
        session.withLock { state in
            state.subscriptions[filter] = qos
            if state.ready { _ = handle.subscribe(filter, qos: qos) }
        }
        if handle.wantsWrite { wake.signal() }
    }

    public func unsubscribe(_ filter: String) {
        session.withLock { state in
            guard state.subscriptions.removeValue(forKey: filter) != nil else { return }
            if state.ready { _ = handle.unsubscribe(filter) }
        }
        if handle.wantsWrite { wake.signal() }
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

    func publish(_ outgoing: OutgoingMessage) -> MQTTPublishOutcome {
        let topic = outgoing.message.topic
        guard !topic.utf8.contains(0), mosquitto_pub_topic_check(topic) == MOSQ_SUCCESS else {
            return dropped(outgoing, reason: "invalid topic \(topic)")
        }
        let (outcome, evicted) = session.withLock { state -> (MQTTPublishOutcome, OutgoingMessage?) in
            switch state.phase {
            case .stopped:
                return (.dropped("client shut down"), nil)
            case _ where state.ready:
                return (handOver(outgoing, state: &state), nil)
            case _ where outgoing.message.qos == .atMostOnce:
                state.droppedQoS0 += 1
                return (.dropped("not connected (QoS 0)"), nil)
            default:
                return (.buffered, state.buffer.append(outgoing))
            }
        }
        if case .dropped = outcome, outgoing.tracked { abandonTracked() }
        if let evicted, evicted.tracked { abandonTracked() }
        return outcome
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
        let attempt: (rc: Int32, wantsWrite: Bool)?
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
        // A write that did not complete (socket buffer full) or a packet queued while the network thread is inside a
        // callback waits for the network thread, which only polls for POLLOUT when told.
        if result.wantsWrite { wake.signal() }
        let rc = result.rc
        let accepted = rc == MOSQ_SUCCESS || (outgoing.message.qos > .atMostOnce && queuedDespiteError.contains(rc))
        guard accepted else {
            if rc == MOSQ_NO_CONN { state.droppedQoS0 += 1 }
            // A publisher sees the outcome; on the network thread nobody does, so it is logged there.
            if mayDefer { return .dropped(mosquittoDescription(rc)) }
            return dropped(outgoing, reason: mosquittoDescription(rc))
        }
        if outgoing.tracked, deliveries.withLock({ $0.handedOver(mid: mid) }) { finalMessagesDelivered.open() }
        return .handedOver
    }

    /// Hands over what publishers deferred; on the network thread.
    func handOverDeferred() {
        session.withLock { state in
            guard !state.deferred.isEmpty else { return }
            let waiting = state.deferred
            state.deferred = []
            for outgoing in waiting { _ = handOver(outgoing, state: &state, mayDefer: false) }
        }
    }

    private func dropped(_ outgoing: OutgoingMessage, reason: String) -> MQTTPublishOutcome {
        logger.error("MQTT message dropped", metadata: ["reason": "\(reason)"])
        if outgoing.tracked { abandonTracked() }
        return .dropped(reason)
    }

    private func abandonTracked() {
        if deliveries.withLock({ $0.abandoned() }) { finalMessagesDelivered.open() }
    }

    /// True when the network thread completed a loop iteration within the last 5 s (it iterates at least once a
    /// second, connected or not: a broker outage keeps this true), or is inside one connect call (DNS, socket) that
    /// began less than 60 s ago. A deadlocked or spinning-in-a-callback thread makes it false, as does a client that
    /// was never started or has shut down.
    public func loopIsAlive() async -> Bool { liveness.isAlive }

    /// Publishes `finalMessages` (e.g. the retained `offline` state), waits until each is acknowledged (QoS ≥ 1) or
    /// written (QoS 0) or `timeout` passes, disconnects cleanly (so the broker does not send the will), and ends the
    /// network thread. Later publishes are dropped. Calling it again returns at once.
    public func shutdown(finalMessages: [MQTTMessage] = [], timeout: Duration = .seconds(2)) async {
        let deadline = ContinuousClock.now + timeout
        let wasRunning = session.withLock { $0.phase == .running }
        if wasRunning, !finalMessages.isEmpty {
            deliveries.withLock { $0.startTracking() }
            for message in finalMessages {
                deliveries.withLock { $0.expect() }
                _ = publish(OutgoingMessage(message: message, tracked: true))
            }
            if deliveries.withLock({ $0.outstanding == 0 }) { finalMessagesDelivered.open() }
            if await !finalMessagesDelivered.wait(timeout: deadline - .now) {
                logger.warning("MQTT final messages not confirmed before the shutdown timeout")
            }
        }
        let pending = session.withLock { state -> Bool in
            let previous = state.phase
            state.phase = .stopped
            state.ready = false
            return previous == .running
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
        states.finish()
        messageSink.finish()
    }
}

/// What a libmosquitto callback observed, for the network loop to act on outside the callback.
enum LinkEvent: Sendable, Equatable {
    case sessionStarted
    case refused(code: Int32, description: String)
    case lost(code: Int32, description: String)
}
