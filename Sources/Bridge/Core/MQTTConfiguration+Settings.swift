import BridgeModel
import Config
import MQTT

extension MQTTConfiguration {
    /// The client configuration for the config file's `mqtt:` section; the will marks the bridge `offline` when the
    /// connection drops without a clean shutdown.
    public init(settings: MQTTSettings) {
        let topics = BridgeTopics(settings: settings)
        self.init(
            host: settings.host, port: settings.port, clientID: settings.clientID,
            username: settings.username, password: settings.password?.value,
            tls: settings.tls.map { MQTTTLS(caFile: $0.caFile, certFile: $0.certFile, keyFile: $0.keyFile, insecure: $0.insecure) },
            protocolVersion: settings.protocolVersion == .v311 ? .v311 : .v5,
            keepalive: .seconds(settings.keepalive),
            will: MQTTMessage(topic: topics.bridgeState, string: "offline", qos: .atLeastOnce, retain: true))
    }
}
