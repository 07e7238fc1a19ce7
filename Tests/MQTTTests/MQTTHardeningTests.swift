import Glibc
import Logging
import Synchronization
import Testing
@testable import MQTT

private let quietLogger: Logger = {
    var logger = Logger(label: "mqtt-test")
    logger.logLevel = .critical
    return logger
}()

/// Request metadata, subscription options, packet-size bound and loss accounting, against a real mosquitto.
@Suite struct MQTTHardeningTests {
    private func configuration(_ broker: TestBroker, _ id: String, _ version: MQTTProtocolVersion = .v5,
                               bufferLimit: Int = 10_000, maximumPacketSize: Int = 256 * 1024) -> MQTTConfiguration {
        MQTTConfiguration(host: "127.0.0.1", port: Int(broker.port), clientID: id, protocolVersion: version,
                          keepalive: .seconds(5), offlineBufferLimit: bufferLimit, reconnectDelay: .milliseconds(50),
                          reconnectDelayMax: .milliseconds(300), maximumPacketSize: maximumPacketSize)
    }

    private func started(_ configuration: MQTTConfiguration) async throws -> MQTTClient {
        let client = try MQTTClient(configuration: configuration, logger: quietLogger)
        client.start()
        #expect(await eventually { client.isConnected }, "\(configuration.clientID) did not connect")
        return client
    }

    private func probe(_ client: MQTTClient, _ log: MessageLog, topic: String, _ text: String = "probe") async {
        client.publish(topic: topic, string: text)
        #expect(await eventually { log.payloads(on: topic).contains(text) })
    }

    @Test(arguments: MQTTProtocolVersion.allCases)
    func responseTopicAndCorrelationDataRoundTripOnMQTT5Only(version: MQTTProtocolVersion) async throws {
        let broker = try TestBroker()
        let client = try await started(configuration(broker, "req", version))
        let log = MessageLog(client)
        client.subscribe("req/#", qos: .atLeastOnce)
        await probe(client, log, topic: "req/probe")
        let request = MQTTMessage(topic: "req/ask", string: "{}", responseTopic: "req/answer",
                                  correlationData: [0, 1, 0xFF])
        #expect(client.publish(request) == .handedOver)
        client.publish(topic: "req/plain", string: "x")
        #expect(await eventually { log.payloads(on: "req/plain") == ["x"] })
        let received = log.messages.first { $0.topic == "req/ask" }
        #expect(received?.retain == false)
        if version == .v5 {
            #expect(received?.responseTopic == "req/answer")
            #expect(received?.correlationData == [0, 1, 0xFF])
        } else {
            #expect(received != nil && received?.responseTopic == nil && received?.correlationData == nil)
        }
        #expect(log.messages.first { $0.topic == "req/plain" }?.correlationData == nil)
        #expect(client.publish(MQTTMessage(topic: "req/big", string: "x", correlationData: Array(repeating: 1, count: 70_000)))
                == .dropped(.correlationDataTooLong))
        await client.shutdown()
    }

    @Test func emptyCorrelationDataIsPresentButEmpty() async throws {
        let broker = try TestBroker()
        let client = try await started(configuration(broker, "empty-corr"))
        let log = MessageLog(client)
        client.subscribe("corr/#")
        await probe(client, log, topic: "corr/probe")
        client.publish(MQTTMessage(topic: "corr/x", string: "1", correlationData: []))
        #expect(await eventually { log.payloads(on: "corr/x") == ["1"] })
        #expect(log.messages.first { $0.topic == "corr/x" }?.correlationData == [])
        await client.shutdown()
    }

    /// Retain handling 2: a retained message is not replayed on subscribe (nor on the resubscribe after a
    /// reconnect), while live messages on the same filter still arrive.
    @Test func doNotSendSkipsRetainedMessagesAcrossReconnects() async throws {
        let broker = try TestBroker()
        let publisher = try await started(configuration(broker, "retainer"))
        let publisherLog = MessageLog(publisher)
        publisher.subscribe("cmd/probe")
        publisher.publish(topic: "cmd/set", string: "stale", retain: true)
        publisher.publish(topic: "other/state", string: "kept", retain: true)
        await probe(publisher, publisherLog, topic: "cmd/probe")

        let client = try await started(configuration(broker, "commands"))
        let log = MessageLog(client)
        client.subscribe("cmd/#", qos: .atLeastOnce, retainHandling: .doNotSend)
        client.subscribe("other/#", qos: .atLeastOnce)      // default: retained messages are sent
        #expect(await eventually { log.payloads(on: "other/state") == ["kept"] })
        publisher.publish(topic: "cmd/set", string: "live")
        #expect(await eventually { log.payloads(on: "cmd/set") == ["live"] })

        // Cut the link under the client: it reconnects and resubscribes with the same options. The retained
        // `other/state` is sent again (proof that the resubscription happened), the retained `cmd/set` is not.
        Glibc.shutdown(client.handle.socket, Int32(SHUT_RDWR))
        #expect(await eventually { log.payloads(on: "other/state") == ["kept", "kept"] })
        #expect(log.messages.filter { $0.topic == "other/state" }.map(\.retain) == [true, true])
        publisher.publish(topic: "cmd/set", string: "live-again")
        #expect(await eventually { log.payloads(on: "cmd/set") == ["live", "live-again"] })
        #expect(log.messages.filter { $0.topic == "cmd/set" }.allSatisfy { !$0.retain })

        // A fresh subscription with doNotSend after the reconnect: still no replay.
        let late = try await started(configuration(broker, "late"))
        let lateLog = MessageLog(late)
        late.subscribe("cmd/#", retainHandling: .doNotSend)
        late.subscribe("late/probe")
        await probe(late, lateLog, topic: "late/probe")
        #expect(lateLog.payloads(on: "cmd/set").isEmpty)
        await late.shutdown()
        await client.shutdown()
        await publisher.shutdown()
    }

    @Test func retainedReplayOnMQTT311IsMarkedRetained() async throws {
        let broker = try TestBroker()
        let publisher = try await started(configuration(broker, "r311"))
        publisher.publish(topic: "r311/set", string: "stale", retain: true)
        let client = try await started(configuration(broker, "c311", .v311))
        let log = MessageLog(client)
        client.subscribe("r311/#", retainHandling: .doNotSend)     // cannot be expressed on 3.1.1
        #expect(await eventually { log.payloads(on: "r311/set") == ["stale"] })
        #expect(log.messages.first?.retain == true)
        await client.shutdown()
        await publisher.shutdown()
    }

    /// MQTT 5: the broker is told our maximum packet size and drops larger messages for us; MQTT 3.1.1: the client
    /// drops them without copying. Either way smaller messages keep flowing.
    @Test(arguments: MQTTProtocolVersion.allCases)
    func messagesOverTheMaximumPacketSizeAreDropped(version: MQTTProtocolVersion) async throws {
        let broker = try TestBroker()
        let client = try await started(configuration(broker, "small", version, maximumPacketSize: 4096))
        let log = MessageLog(client)
        let drops = DropLog(client)
        client.subscribe("size/#")
        await probe(client, log, topic: "size/probe")
        let sender = try await started(configuration(broker, "sender"))
        sender.publish(topic: "size/big", payload: Array(repeating: 0x41, count: 8192))
        sender.publish(topic: "size/small", string: "after")
        #expect(await eventually { log.payloads(on: "size/small") == ["after"] })
        #expect(log.payloads(on: "size/big").isEmpty)
        if version == .v311 {
            #expect(client.droppedOversizeReceived == 1)
            #expect(await eventually { drops.reports == [MQTTDropReport(reason: .oversizeReceived, count: 1, total: 1)] })
        } else {
            #expect(client.droppedOversizeReceived == 0, "the broker must not send it at all")
        }
        await sender.shutdown()
        await client.shutdown()
    }

    @Test func evictionsAndQoS0LossesAreReported() async throws {
        let broker = try TestBroker()
        let client = try await started(configuration(broker, "reports", bufferLimit: 3))
        let drops = DropLog(client)
        broker.stop()
        #expect(await eventually { !client.isConnected })
        for n in 0..<5 { client.publish(topic: "rep/seq", string: "\(n)") }
        client.publish(topic: "rep/seq", string: "q0", qos: .atMostOnce)
        #expect(await eventually { drops.reports.count == 3 })
        #expect(drops.reports == [MQTTDropReport(reason: .bufferFull, count: 1, total: 1),
                                  MQTTDropReport(reason: .bufferFull, count: 1, total: 2),
                                  MQTTDropReport(reason: .notConnected, count: 1, total: 1)])
        // Shutting down with the broker down loses the buffered three: counted and reported, not silent.
        #expect(await client.shutdown(timeout: .milliseconds(300)) == 3)
        #expect(await eventually { drops.reports.last == MQTTDropReport(reason: .shutdown, count: 3, total: 3) })
    }

    /// A reload swaps clients: what the old one buffered while the broker was down moves to the new one, in
    /// order and before the new one's own messages, and reaches the broker once it is back.
    @Test func bufferedMessagesMoveToAnotherClientInOrder() async throws {
        let broker = try TestBroker()
        let old = try await started(configuration(broker, "old"))
        broker.stop()
        #expect(await eventually { !old.isConnected })
        for n in 0..<1_200 { old.publish(topic: "move/seq", string: "\(n)") }
        old.publish(topic: "move/seq", string: "q0", qos: .atMostOnce)

        // The replacement subscribes itself: subscriptions are restored before its buffer is flushed, so the
        // broker cannot forward the messages before someone listens.
        let new = try MQTTClient(configuration: configuration(broker, "new"), logger: quietLogger)
        let log = MessageLog(new)
        new.subscribe("move/#")
        new.start()
        new.publish(topic: "move/seq", string: "new-0")
        let moved = old.drainBuffered()
        #expect(moved.count == 1_200 && old.offlineBufferCount == 0)
        #expect(await new.adopt(moved, batchSize: 100) == 0)
        #expect(await old.shutdown(timeout: .milliseconds(200)) == 0, "nothing left to lose")
        new.publish(topic: "move/seq", string: "new-1")
        #expect(new.offlineBufferCount == 1_202)

        try broker.start()
        #expect(await eventually(timeout: .seconds(30)) { log.payloads(on: "move/seq").count == 1_202 })
        #expect(log.payloads(on: "move/seq") == (0..<1_200).map(String.init) + ["new-0", "new-1"])
        await new.shutdown()
    }

    /// A broker that keeps the connection but stops acknowledging: libmosquitto's own queue counts against the
    /// bound, so memory stays bounded and the excess is reported, and everything counted is delivered after.
    @Test func unacknowledgedMessagesCountAgainstTheBound() async throws {
        let broker = try TestBroker()
        let limit = 300
        let client = try await started(configuration(broker, "stalled", bufferLimit: limit))
        let drops = DropLog(client)
        broker.pause()
        for n in 0..<(limit + 50) { client.publish(topic: "stall/seq", string: "\(n)") }
        #expect(client.unacknowledgedCount == limit)
        #expect(client.offlineBufferCount == 0)
        #expect(await eventually { drops.reports.count == 50 })
        #expect(drops.reports.allSatisfy { $0.reason == .bufferFull && $0.count == 1 })
        #expect(client.publish(topic: "stall/seq", string: "more") == .dropped(.offlineBufferFull))
        broker.resume()
        #expect(await eventually { client.unacknowledgedCount == 0 })
        #expect(client.publish(topic: "stall/seq", string: "flowing") == .handedOver)
        await client.shutdown()
    }
}

/// Collects a client's drop reports.
final class DropLog: Sendable {
    private let received = Mutex<[MQTTDropReport]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(_ client: MQTTClient) {
        let stream = client.drops
        task.withLock { $0 = Task { [self] in for await report in stream { received.withLock { $0.append(report) } } } }
    }

    deinit { task.withLock { $0?.cancel() } }

    var reports: [MQTTDropReport] { received.withLock { $0 } }
}
