internal import CMosquitto
import Durations
import Glibc
import Logging

/// The network thread: connect, run `mosquitto_loop`, act on callback events, back off and reconnect, forever
/// until shutdown. Each iteration waits at most one second, which is what `loopIsAlive()` relies on.
extension MQTTClient {
    func startNetworkThread() {
        let box = Unmanaged.passRetained(ThreadBody { [self] in runNetworkLoop() })
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            let body = Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue()
            body.run()
            return nil
        }, box.toOpaque())
        if rc == 0 {
            pthread_detach(thread)
        } else {
            box.release()
            liveness.stopped()
            logger.critical("cannot start the MQTT network thread", metadata: ["error": "\(String(cString: strerror(rc)))"])
        }
    }

    private func runNetworkLoop() {
        networkThread.claim()
        var socketOpen = false
        var failures = 0
        var nextAttempt = MonotonicClock.nanoseconds
        var stopDeadline: Int64?
        let keepalive = Int(min(max(configuration.keepalive.inMilliseconds / 1000, 5), 65_535))

        while true {
            liveness.beat()
            let now = MonotonicClock.nanoseconds
            if stopRequested.load(ordering: .acquiring) {
                // Send the DISCONNECT and let it reach the socket, briefly.
                if stopDeadline == nil {
                    handOverWaiting()
                    if socketOpen { _ = handle.disconnect() }
                }
                let deadline = stopDeadline ?? now + 1_000_000_000
                stopDeadline = deadline
                guard socketOpen, handle.socket >= 0, now < deadline else { break }
                if service(timeoutMilliseconds: 100) != MOSQ_SUCCESS { socketOpen = false }
                _ = processLinkEvents()
                continue
            }
            if !socketOpen {
                if now < nextAttempt {
                    wake.wait(milliseconds: Int32(min((nextAttempt - now) / 1_000_000 + 1, 1000)))
                    continue
                }
                liveness.enterConnectCall()
                let (rc, error) = handle.connect(host: configuration.host, port: configuration.port, keepalive: keepalive)
                liveness.leaveConnectCall()
                if rc == MOSQ_SUCCESS {
                    socketOpen = true
                } else {
                    failures += 1
                    nextAttempt = MonotonicClock.nanoseconds + backoff(failures: failures)
                    let text = rc == Int32(MOSQ_ERR_ERRNO.rawValue) ? String(cString: strerror(error)) : mosquittoDescription(rc)
                    noteDisconnected(code: rc, description: text)
                }
                continue
            }
            let before = MonotonicClock.nanoseconds
            let rc = service(timeoutMilliseconds: 1000)
            handOverWaiting()
            if processLinkEvents() { failures = 0 }
            // Busy (the poll returned almost at once): let PUBACKs and other input gather for a moment instead of
            // waking once per packet. At 1,000 notifications/s this halves the thread's wake-ups; below 200 packets/s
            // nothing changes, and idle stays asleep in poll. Publishers never wait for this: they write directly.
            let waited = MonotonicClock.nanoseconds - before
            if rc == MOSQ_SUCCESS, waited < Self.coalescing {
                var pause = timespec(tv_sec: 0, tv_nsec: Int(Self.coalescing - waited))
                var rest = timespec()
                while nanosleep(&pause, &rest) != 0, errno == EINTR { pause = rest }
            }
            if rc != MOSQ_SUCCESS || handle.socket < 0 {
                // Not every failure goes through on_disconnect (a failed TLS handshake does not).
                socketOpen = false
                session.withLock { $0.ready = false }
                failures += 1
                nextAttempt = MonotonicClock.nanoseconds + backoff(failures: failures)
                if states.current == .connected || states.current == .connecting {
                    noteDisconnected(code: rc, description: mosquittoDescription(rc))
                }
            }
        }
        _ = processLinkEvents()
        liveness.stopped()
        threadEnded.open()
    }

    /// One turn of what `mosquitto_loop` does, on our own poll: sleep until the socket is readable (or writable, when
    /// packets wait) or the wake pipe is signalled, then read, write and run the keepalive. `mosquitto_loop` would
    /// also wait on libmosquitto's internal socketpair, which only matters in threaded mode (see `MosquittoHandle`).
    private func service(timeoutMilliseconds: Int32) -> Int32 {
        networkThread.assertOnOwner("MQTT socket service")
        let socket = handle.socket
        guard socket >= 0 else { return MOSQ_NO_CONN }
        var events = Int16(POLLIN)
        if handle.wantsWrite { events |= Int16(POLLOUT) }
        var fds = [pollfd(fd: socket, events: events, revents: 0), pollfd(fd: wake.fileDescriptor, events: Int16(POLLIN), revents: 0)]
        let ready = poll(&fds, 2, timeoutMilliseconds)
        if ready < 0 { return errno == EINTR ? MOSQ_SUCCESS : Int32(MOSQ_ERR_ERRNO.rawValue) }
        if fds[1].revents != 0 { wake.drain() }
        if fds[0].revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 {
            // libmosquitto reads one packet per call when nothing of ours waits for an acknowledgement: read on
            // while more is there (up to a batch), or a flood of small publishes would be taken at one packet per
            // wake-up.
            var batch = 0
            repeat {
                let rc = handle.read()
                if rc != MOSQ_SUCCESS || handle.socket < 0 { return rc }
                batch += 1
            } while batch < Self.readBatch && Self.readable(handle.socket)
        }
        if fds[0].revents & Int16(POLLOUT) != 0, configuration.tls != nil {
            // A TLS handshake that wanted to write only advances through a read call (as in `mosquitto_loop`).
            let rc = handle.read()
            if rc != MOSQ_SUCCESS || handle.socket < 0 { return rc }
        }
        if handle.wantsWrite {
            let rc = handle.write()
            if rc != MOSQ_SUCCESS || handle.socket < 0 { return rc }
        }
        return handle.misc()
    }

    /// The most packets read in one wake-up.
    static var readBatch: Int { 256 }

    /// True when `socket` has input waiting now.
    static func readable(_ socket: Int32) -> Bool {
        guard socket >= 0 else { return false }
        var fd = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&fd, 1, 0) > 0 && fd.revents & Int16(POLLIN) != 0
    }

    /// The shortest interval between two polls of the broker's socket while traffic flows (5 ms).
    static var coalescing: Int64 { 5_000_000 }

    /// reconnectDelay × 2^(failures − 1), capped at reconnectDelayMax.
    func backoff(failures: Int) -> Int64 {
        let base = max(configuration.reconnectDelay.inNanoseconds, 1_000_000)
        let cap = max(configuration.reconnectDelayMax.inNanoseconds, base)
        let shift = min(failures - 1, 30)
        let (scaled, overflow) = base.multipliedReportingOverflow(by: Int64(1) << shift)
        return overflow ? cap : min(scaled, cap)
    }

    /// Acts on what the callbacks saw during the last `mosquitto_loop`; true when a session started.
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
                restoreSession()
            case .refused(let code, let description):
                refusal = (code, description)
            case .lost(let code, let description):
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

/// Carries the thread's closure through `pthread_create`'s `void *`.
private final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}
