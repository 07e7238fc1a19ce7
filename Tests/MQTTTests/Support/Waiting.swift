import MQTT
import Testing
import Synchronization

/// Waits for `condition` to hold, checking every 10 ms, until `timeout`; the condition is the synchronisation, the
/// short pause between checks only keeps the wait cheap.
func eventually(timeout: Duration = .seconds(30), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}

/// Where messages missing after a reconnect burst are: still with the client (buffered, or unacknowledged by the
/// broker), or, when both are 0, acknowledged by the broker and lost on the way back to the subscriber.
func unaccounted(_ client: MQTTClient) -> Comment {
    "\(client.offlineBufferCount) buffered, \(client.unacknowledgedCount) unacknowledged by the broker"
}

/// Drains a client's `messages` into a list the test can inspect.
final class MessageLog: Sendable {
    private let received = Mutex<[MQTTMessage]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(_ client: MQTTClient) {
        let stream = client.messages
        task.withLock { $0 = Task { [self] in for await message in stream { received.withLock { $0.append(message) } } } }
    }

    deinit { task.withLock { $0?.cancel() } }

    var messages: [MQTTMessage] { received.withLock { $0 } }

    func payloads(on topic: String) -> [String] {
        messages.filter { $0.topic == topic }.map(\.payloadString)
    }
}
