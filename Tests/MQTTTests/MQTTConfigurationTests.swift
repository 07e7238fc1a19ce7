import Testing
@testable import MQTT

@Suite struct MQTTConfigurationTests {
    @Test func descriptionNeverShowsThePassword() {
        let configuration = MQTTConfiguration(host: "broker", port: 8883, clientID: "gb", username: "bridge",
                                              password: "hunter2", tls: MQTTTLS(caFile: "/ca.pem"))
        #expect(!configuration.description.contains("hunter2"))
        #expect(configuration.description.contains("password=<redacted>"))
        #expect(configuration.description.contains("mqtts://broker:8883"))
        #expect(configuration.description.contains("username=bridge"))
    }

    @Test func backoffDoublesUpToTheCap() throws {
        let client = try MQTTClient(configuration: MQTTConfiguration(
            clientID: "backoff", reconnectDelay: .seconds(1), reconnectDelayMax: .seconds(30)))
        let seconds = (1...8).map { client.backoff(failures: $0) / 1_000_000_000 }
        #expect(seconds == [1, 2, 4, 8, 16, 30, 30, 30])
        #expect(client.backoff(failures: 500) == 30_000_000_000)
    }

    @Test func missingCAFileIsASetupError() {
        #expect(throws: MQTTError.self) {
            try MQTTClient(configuration: MQTTConfiguration(clientID: "tls", tls: MQTTTLS(caFile: "/nonexistent/ca.pem")))
        }
    }
}
