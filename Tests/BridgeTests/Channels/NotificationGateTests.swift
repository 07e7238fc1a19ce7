@testable import Bridge
import Bluetooth
import Codecs
import Config
import Logging
import MQTT
import Testing

/// The gate between a notify subscription's sink and its channel publisher. An MQTT client that was never started
/// buffers QoS 1 publishes, so its buffer counts what the gate let through.
struct NotificationGateTests {
    private static func makeGate() throws -> (NotificationGate, MQTTClient) {
        let client = try MQTTClient(configuration: MQTTConfiguration(clientID: "gate-test"))
        let channel = ChannelConfig(name: "value", characteristic: BluetoothUUID(UInt16(0x2A19)), codec: try Codec(.hex))
        let publisher = ChannelPublisher(channel: channel, topic: "t/value", publisher: MQTTLink(client),
                                         logger: Logger(label: "test"))
        return (NotificationGate(publisher: publisher), client)
    }

    @Test func holdsValuesUntilOpenedThenPublishesDirectly() throws {
        let (gate, client) = try Self.makeGate()
        gate.deliver([1])
        gate.deliver([2])
        #expect(client.offlineBufferCount == 0)
        gate.open()
        #expect(client.offlineBufferCount == 2)
        gate.deliver([3])
        #expect(client.offlineBufferCount == 3)
        gate.open()                                   // idempotent: the held values are not published twice
        #expect(client.offlineBufferCount == 3)
    }

    @Test func closedGatePublishesNothing() throws {
        let (gate, client) = try Self.makeGate()
        gate.deliver([1])
        gate.close()
        gate.open()
        gate.deliver([2])
        #expect(client.offlineBufferCount == 0)
    }
}
