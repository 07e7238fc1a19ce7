import BridgeModel
import Synchronization

/// The answers to the bridge's own requests (`LocalReplyTopic`): a request made with `topic()` as its Response
/// Topic is answered by whoever serves it as any request is, and the publish of that answer lands here, with the
/// one waiting for it, instead of on the broker.
package final class LocalReplies: Sendable {
    private struct Waiting {
        var next: UInt64 = 0
        var continuations: [UInt64: CheckedContinuation<String?, Never>] = [:]
    }

    /// Drawn at start: a broker client that names a local topic as its own Response Topic cannot guess a waiting one.
    let base: String
    private let waiting = Mutex(Waiting())

    init() {
        var generator = SystemRandomNumberGenerator()
        let token = (0..<4).map { _ in String(generator.next() as UInt32, radix: 16) }.joined()
        base = LocalReplyTopic.prefix + token + "/"
    }

    /// Sends a request through `send` with a fresh Response Topic and waits for its answer; nil after `timeout`
    /// or when the task is cancelled.
    func ask(timeout: Duration, _ send: (_ responseTopic: String) -> Void) async -> String? {
        let id = waiting.withLock { state -> UInt64 in
            state.next &+= 1
            return state.next
        }
        let topic = base + String(id)
        let timer = Task {
            try? await Task.sleep(for: timeout)
            self.answer(id, nil)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiting.withLock { $0.continuations[id] = continuation }
                send(topic)
            }
        } onCancel: {
            self.answer(id, nil)
        }
    }

    /// A publish on a local topic: true when it was one (it is never sent to the broker, answered or not).
    func deliver(_ topic: String, _ payload: String) -> Bool {
        guard LocalReplyTopic.isLocal(topic) else { return false }
        guard topic.hasPrefix(base), let id = UInt64(topic.dropFirst(base.count)) else { return true }
        answer(id, payload)
        return true
    }

    private func answer(_ id: UInt64, _ payload: String?) {
        waiting.withLock { $0.continuations.removeValue(forKey: id) }?.resume(returning: payload)
    }
}
