import DBus
import Glibc
import Logging
import Synchronization
import Testing
@testable import MQTT

/// The D-Bus event loop as the link's host, as the daemon wires it (Sources/Bridge/Services/EventLoopMQTTHost.swift).
private struct LoopHost: MQTTLoopHost {
    let loop: EventLoop

    func attach(interest: @escaping @Sendable () -> MQTTPollInterest, serve: @escaping @Sendable (Int16) -> Bool) {
        loop.addSource(interest: {
            let wanted = interest()
            return PollInterest(fd: wanted.fd, events: wanted.events, deadline: wanted.deadline, wakeBy: wanted.wakeBy)
        }, serve: serve)
    }

    func wake() { loop.wakeUp() }

    var isHostThread: Bool { loop.isLoopThread }
}

private let quietLogger: Logger = {
    var logger = Logger(label: "mqtt-hosted-test")
    logger.logLevel = .critical
    return logger
}()

/// The MQTT link served by an `EventLoop` (one thread for D-Bus and the broker): the same promises as on the
/// client's own thread, and the loop is never blocked by a connect call or a TLS handshake.
@Suite struct HostedLinkTests {
    private func configuration(_ host: String, _ port: Int, _ id: String, _ version: MQTTProtocolVersion = .v5,
                               tls: MQTTTLS? = nil) -> MQTTConfiguration {
        MQTTConfiguration(host: host, port: port, clientID: id, tls: tls, protocolVersion: version,
                          keepalive: .seconds(5), reconnectDelay: .milliseconds(50), reconnectDelayMax: .milliseconds(300))
    }

    /// True when work queued on the loop runs within `limit` (the loop is not blocked). Timed on the loop thread, so
    /// a busy cooperative pool does not count; a blocked loop would take the probe's 10 s.
    private func loopAnswers(_ loop: EventLoop, within limit: Duration = .seconds(1)) async -> Bool {
        let start = ContinuousClock.now
        let delay = await withCheckedContinuation { (done: CheckedContinuation<Duration, Never>) in
            loop.execute { done.resume(returning: ContinuousClock.now - start) }
        }
        return delay < limit
    }

    @Test(arguments: MQTTProtocolVersion.allCases)
    func flushesInOrderAfterBrokerRestartWithPublishesFromTheLoop(version: MQTTProtocolVersion) async throws {
        let broker = try TestBroker()
        let loop = EventLoop()
        let client = try MQTTClient(configuration: configuration("127.0.0.1", Int(broker.port), "hosted", version),
                                    logger: quietLogger)
        let log = MessageLog(client)
        client.start(on: LoopHost(loop: loop))
        #expect(await eventually { client.isConnected })
        client.subscribe("hosted/#", qos: .atLeastOnce)
        client.publish(topic: "hosted/probe", string: "probe")
        #expect(await eventually { log.payloads(on: "hosted/probe") == ["probe"] })

        broker.stop()
        #expect(await eventually { !client.isConnected })
        // Published on the loop thread, as the daemon's notification path does.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                for n in 0..<20 { _ = client.publish(topic: "hosted/seq", string: "\(n)") }
                done.resume()
            }
        }
        #expect(client.offlineBufferCount == 20)
        #expect(await client.loopIsAlive())
        #expect(await loopAnswers(loop))
        try broker.start()
        for n in 20..<60 {
            loop.execute { _ = client.publish(topic: "hosted/seq", string: "\(n)") }
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(await eventually { log.payloads(on: "hosted/seq").count >= 60 }, unaccounted(client))
        #expect(log.payloads(on: "hosted/seq") == (0..<60).map(String.init))
        #expect(client.droppedWhileOffline == 0)
        #expect(await client.shutdown() == 0)
        #expect(await !client.loopIsAlive())
        #expect(await loopAnswers(loop))
    }

    /// A flood the consumer does not take: the loop reads on, drops what is beyond the inbox bound and counts it, and
    /// the client's own QoS 1 publishes are still acknowledged (their PUBACKs arrive behind the flood).
    @Test func aFloodBeyondTheInboxIsDroppedAndCountedWhileAcknowledgementsFlow() async throws {
        let broker = try TestBroker()
        let loop = EventLoop()
        let client = try MQTTClient(configuration: configuration("127.0.0.1", Int(broker.port), "hosted-flooded"),
                                    logger: quietLogger)
        client.start(on: LoopHost(loop: loop))
        let flooder = try MQTTClient(configuration: configuration("127.0.0.1", Int(broker.port), "flooder"),
                                     logger: quietLogger)
        flooder.start()
        let observer = try MQTTClient(configuration: configuration("127.0.0.1", Int(broker.port), "observer"),
                                      logger: quietLogger)
        let seen = MessageLog(observer)
        observer.start()
        #expect(await eventually { client.isConnected && flooder.isConnected && observer.isConnected })
        client.subscribe("flood/#", qos: .atMostOnce)
        observer.subscribe("ack/#")
        flooder.subscribe("flood/#", qos: .atMostOnce)
        let flooderSeen = MessageLog(flooder)
        flooder.publish(topic: "flood/ready", string: "?", qos: .atMostOnce)
        #expect(await eventually { flooderSeen.payloads(on: "flood/ready") == ["?"] })

        // Twice the inbox bound, nobody reading `client.messages`.
        let payload = [UInt8](repeating: 0x61, count: 1024)
        let sent = 2 * MQTTClient.inboxLimit / 1024
        for _ in 0..<sent { _ = flooder.publish(topic: "flood/x", payload: payload, qos: .atMostOnce) }
        // The broker has taken the whole flood once its echo reached the flooder (queued or, as a flood, dropped).
        #expect(await eventually {
            flooderSeen.payloads(on: "flood/x").count + flooder.dropTotal(.inboxFull) == sent
        })
        let dropped: @Sendable () -> Int = { client.dropTotal(.inboxFull) }
        #expect(await eventually { dropped() > 0 })
        for n in 0..<20 { client.publish(topic: "ack/seq", string: "\(n)") }
        #expect(await eventually { seen.payloads(on: "ack/seq").count == 20 && client.unacknowledgedCount == 0 })
        #expect(seen.payloads(on: "ack/seq") == (0..<20).map(String.init))
        #expect(client.isConnected)
        #expect(await loopAnswers(loop))

        // Everything was either queued for the consumer or counted as dropped.
        let inbox = client.messages
        let consumer = Task {
            var queued = 0
            for await message in inbox where message.topic == "flood/x" {
                queued += 1
                if queued + dropped() == sent { break }
            }
            return queued
        }
        let deadline = Task {
            try await Task.sleep(for: .seconds(30))
            consumer.cancel()
        }
        let queued = await consumer.value
        deadline.cancel()
        #expect(queued > 0 && queued + dropped() == sent)
        await client.shutdown()
        await flooder.shutdown()
        await observer.shutdown()
    }

    @Test func tlsRoundTripAndAnUntrustedBrokerRetriedWithoutBlockingTheLoop() async throws {
        let broker = try TestBroker(extraConfig: ["cafile $DIR/ca.crt", "certfile $DIR/server.crt",
                                                  "keyfile $DIR/server.key"], prepare: MQTTTLSTests.makeCertificates)
        let loop = EventLoop()
        let trusted = try MQTTClient(configuration: configuration(
            "127.0.0.1", Int(broker.port), "hosted-tls", tls: MQTTTLS(caFile: "\(broker.directory)/ca.crt")),
            logger: quietLogger)
        let log = MessageLog(trusted)
        trusted.start(on: LoopHost(loop: loop))
        #expect(await eventually { trusted.isConnected })
        trusted.subscribe("tls/#")
        trusted.publish(topic: "tls/x", string: "secret")
        #expect(await eventually { log.payloads(on: "tls/x") == ["secret"] })

        let untrusted = try MQTTClient(configuration: configuration(
            "127.0.0.1", Int(broker.port), "hosted-untrusted", tls: MQTTTLS(caFile: "\(broker.directory)/other-ca.crt")),
            logger: quietLogger)
        let states = untrusted.connectionStates()
        untrusted.start(on: LoopHost(loop: loop))
        var iterator = states.makeAsyncIterator()
        #expect(await iterator.next() == .connecting)
        guard case .disconnected? = await iterator.next() else {
            Issue.record("expected the TLS handshake to fail")
            return
        }
        #expect(await untrusted.loopIsAlive())
        #expect(await loopAnswers(loop))
        trusted.publish(topic: "tls/x", string: "still")
        #expect(await eventually { log.payloads(on: "tls/x") == ["secret", "still"] })
        await untrusted.shutdown(timeout: .milliseconds(500))
        await trusted.shutdown()
    }

    /// A listener whose accept queue is full drops new SYNs, as a black-holed address does: the TCP probe waits out
    /// its timeout on a helper thread, never on the loop.
    @Test func connectingToAnUnansweringAddressNeverBlocksTheLoop() async throws {
        let hole = try FullListener()
        let loop = EventLoop()
        let client = try MQTTClient(configuration: configuration("127.0.0.1", Int(hole.port), "hosted-blackhole"),
                                    logger: quietLogger)
        let states = client.connectionStates()
        client.start(on: LoopHost(loop: loop))
        var iterator = states.makeAsyncIterator()
        #expect(await iterator.next() == .connecting)
        let probing = ContinuousClock.now
        for _ in 0..<5 {
            #expect(await loopAnswers(loop))
            try await Task.sleep(for: .milliseconds(100))
        }
        // The probe gives up after 10 s. A starved test pool (the whole suite in parallel on two cores) can take
        // that long over the half second above; then the only right answer is the probe's timeout, never earlier.
        let state = client.connectionState
        if ContinuousClock.now - probing < .seconds(9) {
            #expect(state == .connecting, "the probe is still waiting")
        } else if state != .connecting {
            #expect(state.description.contains("timed out"), "only the probe's own timeout ends the wait: \(state)")
        }
        #expect(await client.loopIsAlive())
        let start = ContinuousClock.now
        await client.shutdown(timeout: .milliseconds(500))
        #expect(ContinuousClock.now - start < .seconds(3))
        #expect(await loopAnswers(loop))
    }
}

/// A TCP listener on 127.0.0.1 that never accepts, with its queue filled: further connects get no answer.
private final class FullListener {
    let port: UInt16
    private var fds: [Int32] = []

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                guard bind(listener, raw, length) == 0, listen(listener, 0) == 0,
                      getsockname(listener, raw, &length) == 0 else { throw TestFailure("listener: errno \(errno)") }
            }
        }
        port = UInt16(bigEndian: address.sin_port)
        fds.append(listener)
        // Fill the accept queue until a connect stays unanswered.
        for _ in 0..<8 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            fds.append(fd)
            let rc = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
            }
            if rc == 0 { continue }
            var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&entry, 1, 200) == 0 { return }
        }
        throw TestFailure("could not fill the accept queue")
    }

    deinit { for fd in fds { close(fd) } }
}
