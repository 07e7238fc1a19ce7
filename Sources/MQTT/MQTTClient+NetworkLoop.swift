internal import CMosquitto
import Durations
import Glibc
import Logging

/// The network loop, as turns: `linkInterest` says what to wait for (the broker's socket, and until when), `linkTurn`
/// acts on what the wait found: connect, read, write, keepalive, callback events, back-off, until shutdown. A turn
/// never blocks except for the connect call on the client's own thread; a host runs that on a helper thread.
///
/// Served by an `MQTTLoopHost` (the daemon's D-Bus loop) or by a thread of ours calling `mosquitto_loop_read`,
/// `_write` and `_misc`, never `mosquitto_loop_start`: libmosquitto 2.0's `mosquitto_loop_forever` ends its thread
/// for good on errors such as a failed DNS lookup or a refused login, reconnects with a blocking `connect()`, and
/// gives no hook to prove the thread is alive. Either way a turn comes at least once a second, which is what
/// `loopIsAlive()` and the keepalive rely on; on a host, its loop keeps a stated deadline however busy it is (the host's
/// rules; for the daemon, `LoopKernel`'s).
extension MQTTClient {
    func startServing(on host: (any MQTTLoopHost)?) {
        turns.nextAttempt = MonotonicClock.nanoseconds
        guard let host else { return startNetworkThread() }
        turns.hosted = true
        wake.redirect(to: host)
        host.attach(interest: { [self] in
            networkThread.claim()
            return linkInterest()
        }, serve: { [self] revents in linkTurn(revents: revents) })
        host.wake()
    }

    private func startNetworkThread() {
        if !spawn(name: "network", { [self] in runNetworkThread() }) { liveness.stopped() }
    }

    /// Starts a detached thread; false (and logged) when the system refuses one.
    @discardableResult
    private func spawn(name: String, _ body: @escaping () -> Void) -> Bool {
        let box = Unmanaged.passRetained(ThreadBody(body))
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            let body = Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue()
            body.run()
            return nil
        }, box.toOpaque())
        guard rc == 0 else {
            box.release()
            logger.critical("cannot start the MQTT \(name) thread", metadata: ["error": "\(String(cString: strerror(rc)))"])
            return false
        }
        pthread_detach(thread)
        return true
    }

    /// The client's own thread: poll the socket and the wake pipe, one turn after each poll.
    private func runNetworkThread() {
        networkThread.claim()
        while true {
            let interest = linkInterest()
            let before = MonotonicClock.nanoseconds
            let timeout = Int32(clamping: min(max((interest.wakeBy - before + 999_999) / 1_000_000, 0), 1000))
            var fds = [pollfd(fd: interest.fd, events: interest.events, revents: 0),
                       pollfd(fd: wake.fileDescriptor, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, timeout)
            if fds[1].revents != 0 { wake.drain() }
            guard linkTurn(revents: ready > 0 ? fds[0].revents : 0) else { return }
            // Busy (the poll returned almost at once): let PUBACKs and other input gather for a moment instead of
            // waking once per packet. At 1,000 notifications/s this halves the thread's wake-ups; below 200
            // packets/s nothing changes, and idle stays asleep in poll. Publishers never wait for this: they write
            // directly. (A host polls for the broker's socket with its own descriptors, so it needs none of this.)
            let waited = MonotonicClock.nanoseconds - before
            if turns.socketOpen, !stopRequested.load(ordering: .relaxed), waited < Self.coalescing {
                var pause = timespec(tv_sec: 0, tv_nsec: Int(Self.coalescing - waited))
                var rest = timespec()
                while nanosleep(&pause, &rest) != 0, errno == EINTR { pause = rest }
            }
        }
    }

    /// What the next poll waits for; on the serving thread.
    func linkInterest() -> MQTTPollInterest {
        let now = MonotonicClock.nanoseconds
        let state = turns
        let idle = MQTTPollInterest(fd: -1, events: 0, deadline: now + 1_000_000_000)
        if state.finished { return idle }
        if wake.isPending { return MQTTPollInterest(fd: -1, events: 0, deadline: now) }
        if state.connecting { return idle }
        let stopping = stopRequested.load(ordering: .acquiring)
        if stopping, state.stopDeadline == nil { return MQTTPollInterest(fd: -1, events: 0, deadline: now) }
        guard state.socketOpen else {
            return MQTTPollInterest(fd: -1, events: 0, deadline: min(state.nextAttempt, idle.deadline))
        }
        let (socket, wantsWrite) = handle.pollState
        guard socket >= 0 else { return MQTTPollInterest(fd: -1, events: 0, deadline: now) }
        if state.gatherUntil != 0, !stopping {
            // Hosted, traffic flowing: input gathers until `gatherUntil` and is read on the first turn the host makes
            // after it (at 1 kHz the next notification's), or `gathering` later at the latest, instead of a turn of
            // its own per PUBACK. Output is still written as soon as the socket takes it.
            return MQTTPollInterest(fd: socket, events: wantsWrite ? Int16(POLLOUT) : 0, deadline: state.gatherUntil,
                                    wakeBy: state.gatherUntil + Self.gathering)
        }
        // Always read, even with the consumer behind: a flood beyond the inbox bound is dropped and counted as it
        // arrives (`InboxGauge`), and the acknowledgements and PINGRESP behind it still reach us.
        var events = Int16(POLLIN)
        if wantsWrite { events |= Int16(POLLOUT) }
        let connack = state.connackDeadline == 0 ? Int64.max : state.connackDeadline
        return MQTTPollInterest(fd: socket, events: events,
                                deadline: min(state.stopDeadline ?? .max, idle.deadline, connack))
    }

    /// One turn after a poll; false once the link has ended for good (after shutdown).
    func linkTurn(revents: Int16) -> Bool {
        networkThread.assertOnOwner("MQTT network turn")
        let state = turns
        guard !state.finished else { return false }
        wake.acknowledge()
        if state.connecting {
            guard let outcome = state.connectOutcome.withLock({ $0.take() }) else {
                // A connect call of more than 60 s (DNS) is a stall: beats stop meanwhile, so `loopIsAlive` says so.
                return stopRequested.load(ordering: .acquiring) ? keepWaitingForConnect() : true
            }
            state.connecting = false
            liveness.leaveConnectCall()
            connected(outcome)
        }
        liveness.beat()
        let now = MonotonicClock.nanoseconds
        if stopRequested.load(ordering: .acquiring) {
            // Send the DISCONNECT and let it reach the socket, briefly.
            if state.stopDeadline == nil {
                handOverWaiting()
                if state.socketOpen { _ = handle.disconnect() }
                state.stopDeadline = now + 1_000_000_000
            }
            guard state.socketOpen, handle.socket >= 0, now < state.stopDeadline! else { return finish() }
            if service(revents: revents).rc != MOSQ_SUCCESS { state.socketOpen = false }
            _ = processLinkEvents()
            return true
        }
        if !state.socketOpen {
            guard now >= state.nextAttempt else { return true }
            let keepalive = Int(min(max(configuration.keepalive.inMilliseconds / 1000, 5), 65_535))
            liveness.enterConnectCall()
            if state.hosted {
                state.connecting = true
                let started = spawn(name: "connect") { [self] in
                    let outcome = handle.connect(host: configuration.host, port: configuration.port, keepalive: keepalive)
                    turns.connectOutcome.withLock { $0 = outcome }
                    wake.signal()
                }
                if !started {
                    state.connecting = false
                    liveness.leaveConnectCall()
                    connected((Int32(MOSQ_ERR_ERRNO.rawValue), EAGAIN))
                }
            } else {
                let outcome = handle.connect(host: configuration.host, port: configuration.port, keepalive: keepalive)
                liveness.leaveConnectCall()
                connected(outcome)
            }
            return true
        }
        let (rc, socket) = service(revents: revents)
        handOverWaiting()
        if processLinkEvents() { state.failures = 0 }
        if rc == MOSQ_SUCCESS, socket >= 0, now >= state.nextAckCheck { watchAcknowledgements(socket: socket, now: now) }
        if rc == MOSQ_SUCCESS, socket >= 0, state.connackDeadline != 0, now >= state.connackDeadline {
            // Cut as a network fault would be: the next turn reads the end of the stream and backs off.
            logger.warning("MQTT broker did not answer CONNECT within \(Self.connackTimeout(configuration) / 1_000_000_000) s; reconnecting")
            state.connackDeadline = 0
            _ = Glibc.shutdown(socket, Int32(SHUT_RDWR))
        }
        if rc != MOSQ_SUCCESS || socket < 0 {
            // Not every failure goes through on_disconnect (a failed TLS handshake does not).
            state.socketOpen = false
            state.connackDeadline = 0
            state.gatherUntil = 0
            session.withLock { $0.ready = false }
            state.failures += 1
            state.nextAttempt = MonotonicClock.nanoseconds + backoff(failures: state.failures)
            if states.current == .connected || states.current == .connecting {
                noteDisconnected(code: rc, description: mosquittoDescription(rc))
            }
        }
        return true
    }

    /// Once a second at most: a broker that has acknowledged nothing for `ackTimeout` while messages wait
    /// (`AckWatch`) gets the link cut, as a network fault would. The next turn reads the end of the stream and takes
    /// the usual way back: reconnect with backoff, and libmosquitto sends the unacknowledged messages again.
    private func watchAcknowledgements(socket: Int32, now: Int64) {
        let state = turns
        state.nextAckCheck = now + 1_000_000_000
        let (waiting, acknowledgements) = inFlight.withLock { ($0.count, $0.acknowledgements) }
        guard session.withLock({ $0.ready }),
              state.ackWatch.observe(waiting: waiting, acknowledgements: acknowledgements, now: now) else { return }
        logger.warning("MQTT broker acknowledged none of \(waiting) message(s) for \(state.ackWatch.limit / 1_000_000_000) s; reconnecting")
        _ = Glibc.shutdown(socket, Int32(SHUT_RDWR))
    }

    /// Shutdown while a helper thread is inside a connect call: wait for it, up to a second, then end without it
    /// (the helper finishes its call on a client nobody serves any more; the handle closes the socket when freed).
    private func keepWaitingForConnect() -> Bool {
        let now = MonotonicClock.nanoseconds
        let deadline = turns.abandonConnectAt ?? now + 1_000_000_000
        turns.abandonConnectAt = deadline
        return now < deadline ? true : finish()
    }

    /// The result of a connect call.
    private func connected(_ outcome: (rc: Int32, errno: Int32)) {
        let state = turns
        if outcome.rc == MOSQ_SUCCESS {
            state.socketOpen = true
            state.connackDeadline = MonotonicClock.nanoseconds + Self.connackTimeout(configuration)
            return
        }
        state.failures += 1
        state.nextAttempt = MonotonicClock.nanoseconds + backoff(failures: state.failures)
        let text = outcome.rc == Int32(MOSQ_ERR_ERRNO.rawValue) ? String(cString: strerror(outcome.errno))
            : mosquittoDescription(outcome.rc)
        noteDisconnected(code: outcome.rc, description: text)
    }

    private func finish() -> Bool {
        _ = processLinkEvents()
        turns.finished = true
        liveness.stopped()
        threadEnded.open()
        return false
    }

    /// Reads, writes and runs the keepalive after a poll that found `revents` on the broker's socket; with the
    /// socket as the last call left it (−1 once closed). Each libmosquitto call reports the socket under its own take
    /// of the I/O lock, rather than a take more to ask for it.
    private func service(revents: Int16) -> (rc: Int32, socket: Int32) {
        networkThread.assertOnOwner("MQTT socket service")
        let state = turns
        var reading = revents & Int16(POLLIN | POLLERR | POLLHUP | POLLNVAL) != 0
        // The client's own thread reads on while more is there (up to a batch), or a flood of small publishes would be
        // taken at one packet per wake-up: libmosquitto reads one packet per call when nothing of ours waits for an
        // acknowledgement. A host's turn reads once: its next poll returns at once while input is left, and asking
        // first was one more system call per PUBACK; but after a gathering it reads the batch that came meanwhile.
        // (TLS records already decrypted are drained within the read call, so nothing waits unseen behind a poll.)
        var batched = !state.hosted
        let now = MonotonicClock.nanoseconds
        let gathered = state.gatherUntil != 0 && now >= state.gatherUntil
        if gathered {
            state.gatherUntil = 0
            batched = true
            reading = reading || Self.readable(handle.socket)
        }
        if reading {
            var batch = 0
            var socket: Int32
            repeat {
                let result = handle.read()
                if result.rc != MOSQ_SUCCESS || result.socket < 0 { return result }
                socket = result.socket
                batch += 1
            } while batched && batch < Self.readBatch && Self.readable(socket)
            if state.hosted {
                // Input again within `gathering` of the last (or during a gathering): traffic flows, let the next
                // gather. Below 200 reads a second every packet is read as it comes, as before.
                if gathered || now - state.lastRead < Self.gathering { state.gatherUntil = now + Self.gathering }
                state.lastRead = now
            }
        }
        if revents & Int16(POLLOUT) != 0, configuration.tls != nil {
            // A TLS handshake that wanted to write only advances through a read call (as in `mosquitto_loop`).
            let result = handle.read()
            if result.rc != MOSQ_SUCCESS || result.socket < 0 { return result }
        }
        return handle.writeAndKeepalive()
    }

    /// The most packets read in one wake-up.
    static var readBatch: Int { 256 }

    /// True when `socket` has input waiting now.
    static func readable(_ socket: Int32) -> Bool {
        guard socket >= 0 else { return false }
        var fd = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&fd, 1, 0) > 0 && fd.revents & Int16(POLLIN) != 0
    }

    /// The shortest interval between two polls of the broker's socket while traffic flows, on the client's own
    /// thread (5 ms).
    static var coalescing: Int64 { 5_000_000 }

    /// Hosted, while traffic flows: how long the broker's input gathers before it is read (on the host's next turn
    /// after that), and how much longer at most the host may sleep before that read (5 ms each).
    static var gathering: Int64 { 5_000_000 }

    /// How long an open socket waits for the broker's CONNACK: 10 s, or four fifths of a shorter keepalive, so the
    /// link gives up (with a log line that says why) before libmosquitto's own keepalive check would.
    static func connackTimeout(_ configuration: MQTTConfiguration) -> Int64 {
        min(10_000_000_000, max(configuration.keepalive.inNanoseconds / 5 * 4, 1_000_000_000))
    }

    /// reconnectDelay × 2^(failures − 1), capped at reconnectDelayMax.
    func backoff(failures: Int) -> Int64 {
        let base = max(configuration.reconnectDelay.inNanoseconds, 1_000_000)
        let cap = max(configuration.reconnectDelayMax.inNanoseconds, base)
        let shift = min(failures - 1, 30)
        let (scaled, overflow) = base.multipliedReportingOverflow(by: Int64(1) << shift)
        return overflow ? cap : min(scaled, cap)
    }

    /// Acts on what the callbacks saw during the last turn; true when a session started.
    ///
    /// The offline buffer is flushed here rather than in the connect callback: libmosquitto calls on_connect before
    /// it resends its own unacknowledged messages, so publishing from the callback would overtake them.
    private func processLinkEvents() -> Bool {
        networkThread.assertOnOwner("MQTT link event processing")
        let events = linkEvents.withLock { events in
            defer { events = [] }
            return events
        }
        var started = false
        var refusal: (code: Int32, description: String)?
        for event in events {
            switch event {
            case .sessionStarted:
                started = true
                turns.connackDeadline = 0
                turns.ackWatch.reset()
                restoreSession()
            case .refused(let code, let description):
                turns.connackDeadline = 0
                refusal = (code, description)
            case .lost(let code, let description):
                turns.ackWatch.reset()
                session.withLock { $0.ready = false }
                inFlight.withLock { $0.linkLost() }
                if let refusal {
                    noteDisconnected(code: refusal.code, description: "connection refused: \(refusal.description)")
                } else {
                    noteDisconnected(code: code, description: description)
                }
                refusal = nil
            }
        }
        return started
    }

    private func restoreSession() {
        let (subscriptions, flushed) = session.withLock { state -> (Int, Int) in
            guard state.phase == .running else { return (0, 0) }
            for (filter, options) in state.subscriptions { _ = handle.subscribe(filter, options: options) }
            // Deferred messages were published before the link dropped: they go first.
            for outgoing in state.deferred.takeAll() { _ = handOver(outgoing, state: &state, mayDefer: false) }
            // The rest of the buffer (beyond the bound, counting what libmosquitto resends) follows as PUBACKs
            // arrive; publishes meanwhile queue behind it.
            let backlog = state.buffer.count
            flushBuffer(&state)
            state.ready = true
            return (state.subscriptions.count, backlog)
        }
        logger.info("MQTT connected", metadata: ["subscriptions": "\(subscriptions)", "flushed": "\(flushed)"])
        if states.update(.connected) { messageSink.yield(.connected) }
    }

    private func noteDisconnected(code: Int32, description: String) {
        guard states.update(.disconnected(reasonCode: code, description: description)) else { return }
        messageSink.yield(.disconnected)
        if stopRequested.load(ordering: .relaxed) {
            logger.info("MQTT disconnected for shutdown")
        } else {
            logger.warning("MQTT disconnected", metadata: ["reason": "\(description)", "code": "\(code)"])
        }
    }
}

/// Carries a thread's closure through `pthread_create`'s `void *`.
private final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}
