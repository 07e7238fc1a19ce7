import Glibc
import Logging
import Testing
@testable import MQTT

private let quietLogger: Logger = {
    var logger = Logger(label: "mqtt-test")
    logger.logLevel = .critical
    return logger
}()

/// Against a real mosquitto per test (started by the test on a free port).
@Suite struct MQTTClientTests {
    private func configuration(_ broker: TestBroker, _ id: String, _ version: MQTTProtocolVersion = .v5,
                               will: MQTTMessage? = nil, bufferLimit: Int = 10_000) -> MQTTConfiguration {
        MQTTConfiguration(host: "127.0.0.1", port: Int(broker.port), clientID: id, protocolVersion: version,
                          keepalive: .seconds(5), will: will, offlineBufferLimit: bufferLimit,
                          reconnectDelay: .milliseconds(50), reconnectDelayMax: .milliseconds(300))
    }

    private func started(_ configuration: MQTTConfiguration) async throws -> MQTTClient {
        let client = try MQTTClient(configuration: configuration, logger: quietLogger)
        client.start()
        #expect(await eventually { client.isConnected }, "\(configuration.clientID) did not connect")
        return client
    }

    /// Subscribes and proves the subscription is live by receiving a probe published by the same client.
    private func subscribeAndProbe(_ client: MQTTClient, _ log: MessageLog, filter: String, probeTopic: String) async {
        client.subscribe(filter, qos: .exactlyOnce)
        client.publish(topic: probeTopic, string: "probe", qos: .atLeastOnce)
        #expect(await eventually { log.payloads(on: probeTopic).contains("probe") })
    }

    @Test(arguments: MQTTProtocolVersion.allCases)
    func publishSubscribeRoundTrip(version: MQTTProtocolVersion) async throws {
        let broker = try TestBroker()
        let client = try await started(configuration(broker, "rt", version))
        let log = MessageLog(client)
        client.subscribe("rt/#", qos: .exactlyOnce)
        #expect(client.publish(topic: "rt/x", string: "a", qos: .atMostOnce) == .handedOver)
        client.publish(topic: "rt/x", string: "b", qos: .atLeastOnce)
        client.publish(topic: "rt/x", payload: [0, 0xFF], qos: .exactlyOnce)
        #expect(await eventually { log.messages.count == 3 })
        #expect(log.messages.map(\.qos) == [.atMostOnce, .atLeastOnce, .exactlyOnce])
        #expect(log.messages.map(\.payload) == [[97], [98], [0, 0xFF]])
        #expect(log.messages.allSatisfy { $0.topic == "rt/x" && !$0.retain })

        client.publish(topic: "rt/retained", string: "kept", qos: .atLeastOnce, retain: true)
        let late = try await started(configuration(broker, "rt-late", version))
        let lateLog = MessageLog(late)
        late.subscribe("rt/retained", qos: .atLeastOnce)
        #expect(await eventually { lateLog.messages.count == 1 })
        #expect(lateLog.messages.first == MQTTMessage(topic: "rt/retained", string: "kept", qos: .atLeastOnce, retain: true))
        #expect(client.publish(topic: "rt/+", string: "bad") == .dropped(.invalidTopic("rt/+")))
        // The remembered valid topic never lets another through: each is checked when it differs.
        #expect(client.publish(topic: "rt/x", string: "ok") == .handedOver)
        #expect(client.publish(topic: "rt/#", string: "bad") == .dropped(.invalidTopic("rt/#")))
        #expect(client.publish(topic: "rt/x\u{0}y", string: "bad") == .dropped(.invalidTopic("rt/x\u{0}y")))
        #expect(client.publish(topic: "rt/x", string: "ok") == .handedOver)
        await late.shutdown()
        await client.shutdown()
        #expect(client.publish(topic: "rt/x", string: "after") == .dropped(.clientShutDown))
    }

    /// A value's way out (`publish(topic:text:qos:retain:)`, and `publish(topic:utf8:qos:retain:)` for lent bytes)
    /// skips making a message when it can go at once; its outcomes, order and accounting must be the general path's,
    /// checked topic or not, connected or not.
    @Test(arguments: MQTTProtocolVersion.allCases, [false, true])
    func textPublishesBehaveLikeMessages(version: MQTTProtocolVersion, viaBytes: Bool) async throws {
        let broker = try TestBroker()
        let client = try await started(configuration(broker, "text", version))
        // The text as a String, or as UTF-8 bytes lent for the call (`publish(topic:utf8:qos:retain:)`): alike.
        @discardableResult
        func send(_ topic: String, _ text: String, _ qos: MQTTQoS) -> MQTTPublishOutcome {
            guard viaBytes else { return client.publish(topic: topic, text: text, qos: qos, retain: false) }
            return Array(text.utf8).withUnsafeBytes { client.publish(topic: topic, utf8: $0, qos: qos, retain: false) }
        }
        let log = MessageLog(client)
        await subscribeAndProbe(client, log, filter: "text/#", probeTopic: "text/probe")
        #expect(send("text/+", "bad", .atLeastOnce) == .dropped(.invalidTopic("text/+")))
        for n in 0..<50 {
            #expect(send("text/a", "\(n)", .atLeastOnce) == .handedOver)
            if n % 10 == 0 { client.publish(topic: "text/b", string: "b\(n)") }     // the remembered topic changes
        }
        // QoS 0 on a topic of its own: the broker may pass it ahead of QoS 1 messages waiting for the subscriber.
        #expect(send("text/c", "q0", .atMostOnce) == .handedOver)
        #expect(send("text/a\u{0}", "bad", .atLeastOnce) == .dropped(.invalidTopic("text/a\u{0}")))
        #expect(await eventually { log.payloads(on: "text/a").count == 50 && log.payloads(on: "text/b").count == 5 })
        #expect(log.payloads(on: "text/a") == (0..<50).map(String.init))
        #expect(await eventually { log.payloads(on: "text/c") == ["q0"] })
        #expect(await eventually { client.unacknowledgedCount == 0 }, "every PUBACK found its message in the ledger")

        broker.stop()
        #expect(await eventually { !client.isConnected })
        for n in 50..<60 { #expect(send("text/a", "\(n)", .atLeastOnce) == .buffered) }
        #expect(send("text/a", "lost", .atMostOnce) == .dropped(.notConnected))
        #expect(client.offlineBufferCount == 10)
        try broker.start()
        // Published across the reconnect: never ahead of the buffered ones.
        for n in 60..<100 {
            send("text/a", "\(n)", .atLeastOnce)
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(await eventually { log.payloads(on: "text/a").count >= 100 }, unaccounted(client))
        #expect(log.payloads(on: "text/a") == (0..<100).map(String.init))
        await client.shutdown()
        #expect(send("text/a", "after", .atLeastOnce) == .dropped(.clientShutDown))
    }

    @Test(arguments: MQTTProtocolVersion.allCases)
    func willIsPublishedWhenTheLinkDiesAndNotOnCleanShutdown(version: MQTTProtocolVersion) async throws {
        let broker = try TestBroker()
        let observer = try await started(configuration(broker, "observer", version))
        let log = MessageLog(observer)
        await subscribeAndProbe(observer, log, filter: "will/#", probeTopic: "will/probe")
        let will = MQTTMessage(topic: "will/state", string: "offline", qos: .atLeastOnce, retain: true)
        let client = try await started(configuration(broker, "dying", version, will: will))
        client.publish(topic: "will/state", string: "online", retain: true)
        #expect(await eventually { log.payloads(on: "will/state") == ["online"] })

        // Cut the TCP connection under libmosquitto: the broker sees the link die without a DISCONNECT.
        Glibc.shutdown(client.handle.socket, Int32(SHUT_RDWR))
        #expect(await eventually { log.payloads(on: "will/state") == ["online", "offline"] })
        #expect(await eventually { client.isConnected }, "the client reconnects by itself")

        await client.shutdown()
        observer.publish(topic: "will/probe", string: "second")
        #expect(await eventually { log.payloads(on: "will/probe").contains("second") })
        #expect(log.payloads(on: "will/state") == ["online", "offline"])
        await observer.shutdown()
    }

    @Test(arguments: MQTTProtocolVersion.allCases)
    func resubscribesAndFlushesInOrderAfterBrokerRestart(version: MQTTProtocolVersion) async throws {
        let broker = try TestBroker()
        let client = try await started(configuration(broker, "buffering", version))
        let log = MessageLog(client)
        await subscribeAndProbe(client, log, filter: "buf/#", probeTopic: "buf/probe")

        broker.stop()
        #expect(await eventually { !client.isConnected })
        for n in 0..<20 { #expect(client.publish(topic: "buf/seq", string: "\(n)") == .buffered) }
        #expect(client.publish(topic: "buf/seq", string: "qos0", qos: .atMostOnce) == .dropped(.notConnected))
        #expect(client.offlineBufferCount == 20)
        #expect(client.droppedQoS0WhileOffline == 1)

        try broker.start()
        // Keep publishing across the reconnect: newer messages must never overtake the buffered ones.
        for n in 20..<60 {
            client.publish(topic: "buf/seq", string: "\(n)")
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(await eventually { log.payloads(on: "buf/seq").count >= 60 }, unaccounted(client))
        #expect(log.payloads(on: "buf/seq") == (0..<60).map(String.init))
        #expect(client.droppedWhileOffline == 0)
        await client.shutdown()
    }

    @Test func offlineBufferBoundDropsTheOldest() async throws {
        let broker = try TestBroker()
        let client = try await started(configuration(broker, "bounded", bufferLimit: 5))
        let log = MessageLog(client)
        await subscribeAndProbe(client, log, filter: "bound/#", probeTopic: "bound/probe")
        broker.stop()
        #expect(await eventually { !client.isConnected })
        for n in 0..<8 { client.publish(topic: "bound/seq", string: "\(n)") }
        #expect(client.droppedWhileOffline == 3)
        try broker.start()
        #expect(await eventually { log.payloads(on: "bound/seq").count == 5 })
        #expect(log.payloads(on: "bound/seq") == ["3", "4", "5", "6", "7"])
        await client.shutdown()
    }

    @Test func fullDefaultBufferIsDeliveredInOrder() async throws {
        let broker = try TestBroker()
        let client = try await started(configuration(broker, "full"))
        let log = MessageLog(client)
        await subscribeAndProbe(client, log, filter: "full/#", probeTopic: "full/probe")
        broker.stop()
        #expect(await eventually { !client.isConnected })
        for n in 0..<10_005 { client.publish(topic: "full/seq", string: "\(n)") }
        #expect(client.offlineBufferCount == 10_000)
        #expect(client.droppedWhileOffline == 5)
        let start = ContinuousClock.now
        try broker.start()
        #expect(await eventually(timeout: .seconds(30)) { log.payloads(on: "full/seq").count == 10_000 })
        #expect(log.payloads(on: "full/seq") == (5..<10_005).map(String.init))
        print("10,000 buffered messages delivered in \(ContinuousClock.now - start)")
        await client.shutdown()
    }

    /// Publishers write from their own threads while the network thread reads PUBACKs under the same I/O lock; a
    /// publisher that finds the lock taken defers to the network thread. Nothing may be lost or reordered either way.
    @Test func publishersOnTwoThreadsKeepTheirOrderWhileAcksFlow() async throws {
        let broker = try TestBroker()
        let client = try await started(configuration(broker, "threads"))
        let log = MessageLog(client)
        await subscribeAndProbe(client, log, filter: "thr/#", probeTopic: "thr/probe")
        let count = 3_000
        let publishers = (0..<2).map { lane in
            TestThread.detached {
                for n in 0..<count { client.publish(topic: "thr/\(lane)", string: "\(n)") }
            }
        }
        for publisher in publishers { publisher.join() }
        #expect(await eventually(timeout: .seconds(30)) {
            log.payloads(on: "thr/0").count == count && log.payloads(on: "thr/1").count == count
        })
        for lane in 0..<2 { #expect(log.payloads(on: "thr/\(lane)") == (0..<count).map(String.init)) }
        await client.shutdown()
    }

    @Test func shutdownDeliversFinalMessagesBeforeDisconnecting() async throws {
        let broker = try TestBroker()
        let will = MQTTMessage(topic: "fin/state", string: "will", qos: .atLeastOnce, retain: true)
        let client = try await started(configuration(broker, "final", will: will))
        client.publish(topic: "fin/state", string: "online", retain: true)
        await client.shutdown(finalMessages: [MQTTMessage(topic: "fin/state", string: "offline", retain: true)],
                              timeout: .seconds(3))
        #expect(client.connectionState != .connected)

        let reader = try await started(configuration(broker, "reader"))
        let log = MessageLog(reader)
        reader.subscribe("fin/state")
        #expect(await eventually { log.payloads(on: "fin/state") == ["offline"] })
        #expect(log.messages.first?.retain == true)
        await reader.shutdown()
    }

    /// A QoS 0 final message is delivered once written (inside its publish call when the socket takes it at once):
    /// shutdown does not wait out its timeout for it.
    @Test func aFinalQoS0MessageIsNotWaitedForOnceWritten() async throws {
        let broker = try TestBroker()
        let reader = try await started(configuration(broker, "reader0"))
        let log = MessageLog(reader)
        reader.subscribe("fin0/state")
        let client = try await started(configuration(broker, "final0"))
        // Once the reader has the probe, its subscription stands and the final message will reach it.
        client.publish(topic: "fin0/state", string: "probe")
        #expect(await eventually { log.payloads(on: "fin0/state") == ["probe"] })
        let start = ContinuousClock.now
        let lost = await client.shutdown(
            finalMessages: [MQTTMessage(topic: "fin0/state", string: "offline", qos: .atMostOnce)], timeout: .seconds(60))
        #expect(lost == 0)
        #expect(ContinuousClock.now - start < .seconds(30), "a written final message is not waited for")
        #expect(await eventually { log.payloads(on: "fin0/state") == ["probe", "offline"] })
        await reader.shutdown()
    }

    /// A started client whose broker has gone, once it has noticed.
    private func orphaned(_ id: String) async throws -> MQTTClient {
        let broker = try TestBroker()
        let client = try await started(configuration(broker, id))
        broker.stop()
        #expect(await eventually { !client.isConnected })
        return client
    }

    /// A QoS 0 final message with the broker gone is dropped at once and counted; shutdown does not wait for it.
    @Test func aFinalQoS0MessageWhileOfflineDoesNotHoldShutdown() async throws {
        let client = try await orphaned("down0")
        let start = ContinuousClock.now
        await client.shutdown(finalMessages: [MQTTMessage(topic: "x/state", string: "offline", qos: .atMostOnce)],
                              timeout: .seconds(60))
        #expect(ContinuousClock.now - start < .seconds(30), "a dropped final message is not waited for")
        #expect(client.droppedQoS0WhileOffline == 1)
    }

    @Test func shutdownWithTheBrokerDownReturnsWithinTheTimeout() async throws {
        let client = try await orphaned("down")
        let start = ContinuousClock.now
        await client.shutdown(finalMessages: [MQTTMessage(topic: "x/state", string: "offline")], timeout: .seconds(1))
        #expect(ContinuousClock.now - start < .seconds(10), "shutdown must not wait for an acknowledgement that cannot come")
        #expect(await client.loopIsAlive() == false)
    }

    @Test func loopStaysAliveWhileTheBrokerIsDown() async throws {
        let broker = try TestBroker()
        broker.stop()
        let client = try MQTTClient(configuration: configuration(broker, "alive"), logger: quietLogger)
        #expect(await client.loopIsAlive() == false, "not started yet")
        let states = client.connectionStates()
        client.start()
        var iterator = states.makeAsyncIterator()
        #expect(await iterator.next() == .connecting)
        guard case .disconnected(let code, let text)? = await iterator.next() else {
            Issue.record("expected a disconnected state")
            return
        }
        #expect(code != 0 && text.contains("refused"), "\(code) \(text)")
        #expect(await client.loopIsAlive())
        try broker.start()
        #expect(await iterator.next() == .connected)
        #expect(await client.loopIsAlive())
        await client.shutdown()
        #expect(await client.loopIsAlive() == false)
        var last: MQTTConnectionState?
        while let state = await iterator.next() { last = state }
        #expect(last == .disconnected(reasonCode: 0, description: "disconnected by client"), "the stream ends at shutdown")
    }

    @Test func passwordFileIsEnforced() async throws {
        var template = Array("/tmp/mqtt-passwd-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        fchmod(fd, 0o644)  // mosquitto reads it after dropping root privileges
        close(fd)
        let passwordFile = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { unlink(passwordFile) }
        let pid = try spawn(["/usr/bin/mosquitto_passwd", "-b", passwordFile, "bridge", "s3cret"], log: "/dev/null")
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        let broker = try TestBroker(extraConfig: ["password_file \(passwordFile)", "allow_anonymous false"])

        var good = configuration(broker, "authed")
        good.username = "bridge"
        good.password = "s3cret"
        let client = try await started(good)
        await client.shutdown()

        var bad = good
        bad.clientID = "refused"
        bad.password = "wrong"
        let refused = try MQTTClient(configuration: bad, logger: quietLogger)
        let states = refused.connectionStates()
        refused.start()
        var iterator = states.makeAsyncIterator()
        _ = await iterator.next()
        let state = await iterator.next()
        guard case .disconnected(_, let text)? = state else {
            Issue.record("expected a refusal, got \(String(describing: state))")
            return
        }
        #expect(text.lowercased().contains("not authori"), "\(text)")
        #expect(await refused.loopIsAlive(), "a refused login is retried, not fatal")
        await refused.shutdown()
    }
}
