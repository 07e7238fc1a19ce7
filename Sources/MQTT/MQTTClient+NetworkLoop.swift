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
        link.prepare(hosted: host != nil, firstAttempt: MonotonicClock.nanoseconds)
        guard let host else { return startNetworkThread() }
        wake.redirect(to: host)
        host.attach(interest: { [self] in
            link.owner.claim()
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
        link.owner.claim()
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
            if link.turn.socketOpen, !stopRequested.load(ordering: .relaxed), waited < Self.coalescing {
                var pause = timespec(tv_sec: 0, tv_nsec: Int(Self.coalescing - waited))
                var rest = timespec()
                while nanosleep(&pause, &rest) != 0, errno == EINTR { pause = rest }
            }
        }
    }

    /// What the next poll waits for; on the serving thread.
    func linkInterest() -> MQTTPollInterest {
        let now = MonotonicClock.nanoseconds
        let idle = MQTTPollInterest(fd: -1, events: 0, deadline: now + 1_000_000_000)
        if link.turn.finished { return idle }
        if wake.isPending { return MQTTPollInterest(fd: -1, events: 0, deadline: now) }
        if link.turn.connecting { return idle }
        let stopping = stopRequested.load(ordering: .acquiring)
        if stopping, link.turn.stopDeadline == nil { return MQTTPollInterest(fd: -1, events: 0, deadline: now) }
        guard link.turn.socketOpen else {
            return MQTTPollInterest(fd: -1, events: 0, deadline: min(link.turn.nextAttempt, idle.deadline))
        }
        let (socket, wantsWrite) = handle.pollState
        guard socket >= 0 else { return MQTTPollInterest(fd: -1, events: 0, deadline: now) }
        if link.turn.gatherUntil != 0, !stopping {
            // Hosted, traffic flowing: input gathers until `gatherUntil` and is read on the first turn the host makes
            // after it (at 1 kHz the next notification's), or `gathering` later at the latest, instead of a turn of
            // its own per PUBACK. Output is still written as soon as the socket takes it.
            return MQTTPollInterest(fd: socket, events: wantsWrite ? Int16(POLLOUT) : 0, deadline: link.turn.gatherUntil,
                                    wakeBy: link.turn.gatherUntil + Self.gathering)
        }
        // Always read, even with the consumer behind: a flood beyond the inbox bound is dropped and counted as it
        // arrives (`InboxGauge`), and the acknowledgements and PINGRESP behind it still reach us.
        var events = Int16(POLLIN)
        if wantsWrite { events |= Int16(POLLOUT) }
        let connack = link.turn.connackDeadline == 0 ? Int64.max : link.turn.connackDeadline
        return MQTTPollInterest(fd: socket, events: events,
                                deadline: min(link.turn.stopDeadline ?? .max, idle.deadline, connack))
    }

    /// One turn after a poll; false once the link has ended for good (after shutdown).
    func linkTurn(revents: Int16) -> Bool {
        link.owner.assertOnOwner("MQTT network turn")
        guard !link.turn.finished else { return false }
        wake.acknowledge()
        if link.turn.connecting {
            guard let outcome = link.connectOutcome.withLock({ $0.take() }) else {
                // A connect call of more than 60 s (DNS) is a stall: beats stop meanwhile, so `loopIsAlive` says so.
                return stopRequested.load(ordering: .acquiring) ? keepWaitingForConnect() : true
            }
            link.turn.connecting = false
            liveness.leaveConnectCall()
            connected(outcome)
        }
        liveness.beat()
        let now = MonotonicClock.nanoseconds
        if stopRequested.load(ordering: .acquiring) {
            // Send the DISCONNECT and let it reach the socket, briefly.
            if link.turn.stopDeadline == nil {
                handOverWaiting()
                if link.turn.socketOpen { _ = handle.disconnect() }
                link.turn.stopDeadline = now + 1_000_000_000
            }
            guard link.turn.socketOpen, handle.socket >= 0, now < link.turn.stopDeadline! else { return finish() }
            if service(revents: revents).rc != MOSQ_SUCCESS { link.turn.socketOpen = false }
            _ = processLinkEvents()
            return true
        }
        if !link.turn.socketOpen {
            guard now >= link.turn.nextAttempt else { return true }
            let keepalive = Int(min(max(configuration.keepalive.inMilliseconds / 1000, 5), 65_535))
            liveness.enterConnectCall()
            if link.turn.hosted {
                link.turn.connecting = true
                let started = spawn(name: "connect") { [self] in
                    let result = handle.connect(host: configuration.host, port: configuration.port, keepalive: keepalive)
                    link.connectOutcome.withLock { $0 = ConnectOutcome(rc: result.rc, errno: result.errno) }
                    wake.signal()
                }
                if !started {
                    link.turn.connecting = false
                    liveness.leaveConnectCall()
                    connected(.failed(.error(code: Int32(MOSQ_ERR_ERRNO.rawValue), errno: EAGAIN)))
                }
            } else {
                let result = handle.connect(host: configuration.host, port: configuration.port, keepalive: keepalive)
                liveness.leaveConnectCall()
                connected(ConnectOutcome(rc: result.rc, errno: result.errno))
            }
            return true
        }
        let (rc, socket) = service(revents: revents)
        // The failure's errno, before the calls below overwrite it.
        let failure = LinkFailure.error(code: rc, errno: rc == MOSQ_SUCCESS ? 0 : errno)
        handOverWaiting()
        if processLinkEvents() { link.turn.failures = 0 }
        if rc == MOSQ_SUCCESS, socket >= 0, now >= link.turn.nextAckCheck { watchAcknowledgements(socket: socket, now: now) }
        if rc == MOSQ_SUCCESS, socket >= 0, link.turn.connackDeadline != 0, now >= link.turn.connackDeadline {
            // Cut as a network fault would be: the next turn reads the end of the stream and backs off.
            logger.warning("MQTT broker did not answer CONNECT within \(Self.connackTimeout(configuration) / 1_000_000_000) s; reconnecting")
            link.turn.connackDeadline = 0
            _ = Glibc.shutdown(socket, Int32(SHUT_RDWR))
        }
        if rc != MOSQ_SUCCESS || socket < 0 {
            // Not every failure goes through on_disconnect (a failed TLS handshake does not).
            link.turn.socketOpen = false
            link.turn.connackDeadline = 0
            link.turn.gatherUntil = 0
            session.withLock { $0.ready = false }
            link.turn.failures += 1
            link.turn.nextAttempt = MonotonicClock.nanoseconds + backoff(failures: link.turn.failures)
            if states.current == .connected || states.current == .connecting {
                noteDisconnected(failure)
            }
        }
        return true
    }

    /// Once a second at most: a broker that has acknowledged nothing for `ackTimeout` while messages wait
    /// (`AckWatch`) gets the link cut, as a network fault would. The next turn reads the end of the stream and takes
    /// the usual way back: reconnect with backoff, and libmosquitto sends the unacknowledged messages again.
    private func watchAcknowledgements(socket: Int32, now: Int64) {
        link.turn.nextAckCheck = now + 1_000_000_000
        let (waiting, acknowledgements) = tally.withLock { ($0.ledger.count, $0.ledger.acknowledgements) }
        guard session.withLock({ $0.ready }),
              link.turn.ackWatch.observe(waiting: waiting, acknowledgements: acknowledgements, now: now) else { return }
        logger.warning("MQTT broker acknowledged none of \(waiting) message(s) for \(link.turn.ackWatch.limit / 1_000_000_000) s; reconnecting")
        _ = Glibc.shutdown(socket, Int32(SHUT_RDWR))
    }

    /// Shutdown while a helper thread is inside a connect call: wait for it, up to a second, then end without it
    /// (the helper finishes its call on a client nobody serves any more; the handle closes the socket when freed).
    private func keepWaitingForConnect() -> Bool {
        let now = MonotonicClock.nanoseconds
        let deadline = link.turn.abandonConnectAt ?? now + 1_000_000_000
        link.turn.abandonConnectAt = deadline
        return now < deadline ? true : finish()
    }

    /// The result of a connect call.
    private func connected(_ outcome: ConnectOutcome) {
        switch outcome {
        case .opened:
            link.turn.socketOpen = true
            link.turn.connackDeadline = MonotonicClock.nanoseconds + Self.connackTimeout(configuration)
        case .failed(let failure):
            link.turn.failures += 1
            link.turn.nextAttempt = MonotonicClock.nanoseconds + backoff(failures: link.turn.failures)
            noteDisconnected(failure)
        }
    }

    private func finish() -> Bool {
        _ = processLinkEvents()
        link.turn.finished = true
        liveness.stopped()
        threadEnded.open()
        return false
    }

    /// Reads, writes and runs the keepalive after a poll that found `revents` on the broker's socket; with the
    /// socket as the last call left it (−1 once closed). Each libmosquitto call reports the socket under its own take
    /// of the I/O lock, rather than a take more to ask for it.
    private func service(revents: Int16) -> (rc: Int32, socket: Int32) {
        link.owner.assertOnOwner("MQTT socket service")
        var reading = revents & Int16(POLLIN | POLLERR | POLLHUP | POLLNVAL) != 0
        // The client's own thread reads on while more is there (up to a batch), or a flood of small publishes would be
        // taken at one packet per wake-up: libmosquitto reads one packet per call when nothing of ours waits for an
        // acknowledgement. A host's turn reads once: its next poll returns at once while input is left, and asking
        // first was one more system call per PUBACK; but after a gathering it reads the batch that came meanwhile.
        // (TLS records already decrypted are drained within the read call, so nothing waits unseen behind a poll.)
        var batched = !link.turn.hosted
        let now = MonotonicClock.nanoseconds
        let gathered = link.turn.gatherUntil != 0 && now >= link.turn.gatherUntil
        if gathered {
            link.turn.gatherUntil = 0
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
            if link.turn.hosted {
                // Input again within `gathering` of the last (or during a gathering): traffic flows, let the next
                // gather. Below 200 reads a second every packet is read as it comes, as before.
                if gathered || now - link.turn.lastRead < Self.gathering { link.turn.gatherUntil = now + Self.gathering }
                link.turn.lastRead = now
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
        let events = link.takeEvents()
        var started = false
        var refusal: Int32?
        for event in events {
            switch event {
            case .sessionStarted:
                started = true
                link.turn.connackDeadline = 0
                link.turn.ackWatch.reset()
                restoreSession()
            case .refused(let code):
                link.turn.connackDeadline = 0
                refusal = code
            case .lost(let failure):
                link.turn.ackWatch.reset()
                session.withLock { $0.ready = false }
                tally.withLock { $0.ledger.linkLost() }
                noteDisconnected(refusal.map { .refused(code: $0, v5: configuration.protocolVersion == .v5) } ?? failure)
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

    private func noteDisconnected(_ failure: LinkFailure) {
        let description = failure.description
        guard states.update(.disconnected(reasonCode: failure.code, description: description)) else { return }
        messageSink.yield(.disconnected)
        if stopRequested.load(ordering: .relaxed) {
            logger.info("MQTT disconnected for shutdown")
        } else {
            logger.warning("MQTT disconnected", metadata: ["reason": "\(description)", "code": "\(failure.code)"])
        }
    }
}

/// Carries a thread's closure through `pthread_create`'s `void *`.
private final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}
