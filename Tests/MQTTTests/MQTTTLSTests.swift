import Logging
import Testing
@testable import MQTT

/// TLS against mosquitto with a throw-away CA made by openssl.
@Suite struct MQTTTLSTests {
    static func makeCertificates(in directory: String) throws {
        try shell("""
            cd '\(directory)' && \
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt \
              -days 1 -subj /CN=test-ca && \
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key -out server.csr \
              -subj /CN=localhost && \
            printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.ext && \
            openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 1 \
              -extfile san.ext && \
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout other.key \
              -out other-ca.crt -days 1 -subj /CN=other-ca && \
            chmod 644 *.key
            """)
    }

    private func tlsBroker() throws -> TestBroker {
        try TestBroker(extraConfig: ["cafile $DIR/ca.crt", "certfile $DIR/server.crt", "keyfile $DIR/server.key"],
                       prepare: Self.makeCertificates)
    }

    private func client(_ broker: TestBroker, caFile: String, id: String) throws -> MQTTClient {
        var logger = Logger(label: "mqtt-tls-test")
        logger.logLevel = .critical
        return try MQTTClient(configuration: MQTTConfiguration(
            host: "127.0.0.1", port: Int(broker.port), clientID: id, tls: MQTTTLS(caFile: caFile),
            keepalive: .seconds(5), reconnectDelay: .milliseconds(50), reconnectDelayMax: .milliseconds(300)), logger: logger)
    }

    @Test func roundTripOverTLS() async throws {
        let broker = try tlsBroker()
        let client = try client(broker, caFile: "\(broker.directory)/ca.crt", id: "tls")
        let log = MessageLog(client)
        client.start()
        #expect(await eventually { client.isConnected })
        client.subscribe("tls/#")
        client.publish(topic: "tls/x", string: "secret")
        #expect(await eventually { log.payloads(on: "tls/x") == ["secret"] })
        await client.shutdown()
    }

    @Test func untrustedBrokerIsRefusedAndRetried() async throws {
        let broker = try tlsBroker()
        let client = try client(broker, caFile: "\(broker.directory)/other-ca.crt", id: "tls-untrusted")
        let states = client.connectionStates()
        client.start()
        var iterator = states.makeAsyncIterator()
        #expect(await iterator.next() == .connecting)
        guard case .disconnected? = await iterator.next() else {
            Issue.record("expected the TLS handshake to fail")
            return
        }
        #expect(await client.loopIsAlive())
        #expect(!client.isConnected)
        await client.shutdown()
    }
}
