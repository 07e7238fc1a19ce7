@testable import BridgeChannels
@testable import BridgeCoreLayer
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
        gate.deliver(bytes: [1])
        gate.deliver(bytes: [2])
        #expect(client.offlineBufferCount == 0)
        gate.open()
        #expect(client.offlineBufferCount == 2)
        gate.deliver(bytes: [3])
        #expect(client.offlineBufferCount == 3)
        gate.open()                                   // idempotent: the held values are not published twice
        #expect(client.offlineBufferCount == 3)
    }

    @Test func closedGatePublishesNothing() throws {
        let (gate, client) = try Self.makeGate()
        gate.deliver(bytes: [1])
        gate.close()
        gate.open()
        gate.deliver(bytes: [2])
        #expect(client.offlineBufferCount == 0)
    }
}

/// What a channel publishes for a notification's lent bytes, and again on `republish`: `hex` values go out as UTF-8
/// encoded on the stack, every other channel as text; both must read the same on the broker.
struct ChannelPublisherTests {
    private static func publisher(_ codec: Codec) -> (ChannelPublisher, SessionRecorder) {
        let recorder = SessionRecorder()
        let channel = ChannelConfig(name: "value", characteristic: BluetoothUUID(UInt16(0x2A19)), codec: codec)
        return (ChannelPublisher(channel: channel, topic: "t/value", publisher: recorder, logger: Logger(label: "test")),
                recorder)
    }

    private static func notify(_ publisher: ChannelPublisher, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { publisher.publish($0) }
    }

    @Test func hexValuesAndTheirRepublish() throws {
        let (publisher, recorder) = Self.publisher(try Codec(.hex))
        publisher.republish()                                     // nothing yet
        Self.notify(publisher, [0xDE, 0xAD, 0x00, 0x0F])
        publisher.republish()
        Self.notify(publisher, Array(repeating: 0xAB, count: 600))   // past the stack's bound for a buffer
        Self.notify(publisher, [])
        publisher.republish()
        #expect(recorder.payloads(on: "t/value") == ["dead000f", "dead000f", String(repeating: "ab", count: 600), "", ""])
    }

    @Test func mappedAndOtherCodecsGoAsText() throws {
        let (mapped, mappedRecorder) = Self.publisher(try Codec(.hex, values: [(key: "ON", value: "01")]))
        Self.notify(mapped, [0x01])
        Self.notify(mapped, [0x02])
        mapped.republish()
        #expect(mappedRecorder.payloads(on: "t/value") == ["ON", "02", "02"])
        let (number, numberRecorder) = Self.publisher(try Codec(.uint16))
        Self.notify(number, [0x34, 0x12])
        number.republish()
        #expect(numberRecorder.payloads(on: "t/value") == ["4660", "4660"])
    }
}

private extension NotificationGate {
    /// The reader lends its bytes; a test's array does the same for the call.
    func deliver(bytes: [UInt8]) { bytes.withUnsafeBytes { deliver($0) } }
}
