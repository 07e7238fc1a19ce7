import BridgeModel
import Codecs
import Config
import Logging
import Synchronization

/// Turns characteristic bytes into MQTT messages for one channel: decode by codec (and `values`), frame text into
/// lines, publish with the channel's QoS and retain flag. It sits on the notification hot path, so it does no more than
/// one decode and one publish per value (text channels also keep a line buffer).
package final class ChannelPublisher: Sendable {
    let channel: ChannelConfig
    let topic: String
    private let mqtt: any MessagePublisher
    private let logger: Logger
    private let text: TextState?
    /// Read once here rather than out of `channel` for every notification (each read copies part of the config).
    private let isEvent: Bool
    private let qos: Int
    private let retain: Bool
    /// A `hex` channel without a `values` map and not an event: its values go out as UTF-8 encoded on the stack
    /// (`Hex.withEncoded`), no `String` per notification.
    private let publishesHexBytes: Bool
    /// Read once here: `channel.codec` copies the codec (and retains its `values`) at every read.
    private let codec: Codec
    /// Where a decoded value's UTF-8 is written (`Codec.decode(_:into:)`) and published from: kept from value to value,
    /// so once it has grown to the channel's largest value a notification allocates nothing and makes no `String`
    /// (issue 45). Taken out while a value is written and put back after, so the lock is never held while publishing;
    /// a value arriving meanwhile (a read beside a notification) finds it empty and writes into a fresh one.
    private let scratch = Mutex(UTF8Buffer())
    /// The last payload published, for a Home Assistant restart (`<prefix>/status` online) to get current states.
    /// Its UTF-8 in a buffer kept from value to value (copied in, no allocation once it is large enough), so a value
    /// published from bytes needs no `String` to be kept.
    private let last = Mutex(LastPayload())

    private struct LastPayload {
        /// The payload is the first `count` bytes; the array only grows (to the channel's largest value), so keeping
        /// a value of another length neither empties nor refills it.
        private var storage: [UInt8] = []
        private var count = 0
        private(set) var isSet = false

        var utf8: ArraySlice<UInt8> { storage[..<count] }

        mutating func keep(_ payload: some Collection<UInt8>) {
            storage.removeAll(keepingCapacity: true)
            storage.append(contentsOf: payload)
            count = storage.count
            isSet = true
        }

        /// `keep` for bytes lent by the caller: copied over the last ones in place.
        mutating func keep(_ payload: UnsafeRawBufferPointer) {
            if storage.count < payload.count {
                storage.append(contentsOf: repeatElement(0, count: payload.count - storage.count))
            }
            if let source = payload.baseAddress, !payload.isEmpty {
                storage.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: source, byteCount: payload.count) }
            }
            count = payload.count
            isSet = true
        }
    }

    package init(channel: ChannelConfig, topic: String, publisher: any MessagePublisher, logger: Logger) {
        self.channel = channel
        self.topic = topic
        self.mqtt = publisher
        self.logger = logger
        self.text = channel.codecKind == .text ? TextState(delimiter: channel.delimiter, maxLine: channel.maxLine) : nil
        isEvent = channel.homeassistant.isEvent
        qos = channel.qos
        retain = channel.retain
        publishesHexBytes = channel.codecKind == .hex && channel.values.isEmpty && !isEvent
        codec = channel.codec
    }

    /// A value read (a poll or a `get`): a whole value, never spliced into a notify text channel's partial line.
    /// A trailing delimiter is dropped, as the framer would.
    package func publishRead(_ bytes: [UInt8]) {
        guard channel.codecKind == .text else { return bytes.withUnsafeBytes { decodeAndSend($0) } }
        var line = String(decoding: bytes, as: UTF8.self)
        if !channel.delimiter.isEmpty, line.hasSuffix(channel.delimiter) { line.removeLast(channel.delimiter.count) }
        send(channel.codec.mapLine(line))
    }

    /// One notification, its bytes lent by the reader (valid only during the call): decoded where they are, so a
    /// value costs no byte array of its own (an allocation and a free per notification).
    func publish(_ bytes: UnsafeRawBufferPointer) {
        if let text {
            let codec = channel.codec
            for line in text.append(Array(bytes)) { send(codec.mapLine(line)) }
            if text.hasPending {
                text.armFlush(after: channel.flushAfter) { [weak self] line in self?.send(codec.mapLine(line)) }
            }
            return
        }
        if publishesHexBytes {
            Hex.withEncoded(bytes) { utf8 in
                last.withLock { $0.keep(utf8) }
                mqtt.publish(topic, utf8: utf8, qos: qos, retain: retain)
            }
            return
        }
        decodeAndSend(bytes)
    }

    private func decodeAndSend(_ bytes: UnsafeRawBufferPointer) {
        var out = scratch.withLock { kept in
            var taken = UTF8Buffer()
            swap(&taken, &kept)
            return taken
        }
        defer { scratch.withLock { swap(&$0, &out) } }
        out.removeAll()
        do {
            try codec.decode(bytes, into: &out)
        } catch {
            logger.warning("cannot decode value of \(channel.name): \(error)", metadata: ["topic": "\(topic)"])
            return
        }
        if isEvent {
            send(out.string)    // Home Assistant's event JSON is built around the text (`send`)
        } else {
            out.withBytes { utf8 in
                last.withLock { $0.keep(utf8) }
                mqtt.publish(topic, utf8: utf8, qos: qos, retain: retain)
            }
        }
    }

    /// Publishes the partial line a text channel holds (at disconnect, so nothing is lost).
    package func flush() {
        if let line = text?.flushNow() { send(channel.codec.mapLine(line)) }
    }

    /// The payload an event channel publishes for one action: the name of the `values` entry it matched, else the
    /// decoded value itself (docs/home-assistant.md). `decoded` may already be the name (the codec maps values) or the raw value.
    package static func eventPayload(for channel: ChannelConfig, decoded: String) -> String {
        let values = channel.values
        let eventType = values.contains(where: { $0.key == decoded }) ? decoded
            : values.first(where: { $0.value == decoded })?.key ?? decoded
        return JSONValue.object([("event_type", .string(eventType))]).serialized
    }

    private func send(_ payload: String) {
        // An event channel's value is an action (a button press), not a state: published as Home Assistant's event
        // JSON, never retained, and never kept for a republish, which would fire a press that did not happen.
        if isEvent {
            mqtt.publish(topic, Self.eventPayload(for: channel, decoded: payload), qos: qos,
                         retain: false)
            return
        }
        last.withLock { $0.keep(payload.utf8) }
        mqtt.publish(topic, payload, qos: qos, retain: retain)
    }

    /// The last payload published, nil before the first: the device's latest value as the read model shows it.
    package var lastPayload: String? { last.withLock { $0.isSet ? String(decoding: $0.utf8, as: UTF8.self) : nil } }

    /// Publishes the last value again (nothing if there was none).
    package func republish() {
        guard let payload = lastPayload else { return }
        mqtt.publish(topic, payload, qos: qos, retain: retain)
    }
}

/// The line buffer of a text channel and its `flush_after` timer. Guarded by a mutex because notifications arrive on
/// the pump task while the timer fires on its own.
final class TextState: Sendable {
    private struct State {
        var framer: TextFramer
        var timer: Task<Void, Never>?
        var epoch: UInt64 = 0
    }
    private let state: Mutex<State>

    init(delimiter: String, maxLine: Int) {
        state = Mutex(State(framer: TextFramer(delimiter: delimiter, maxLine: maxLine)))
    }

    func append(_ bytes: [UInt8]) -> [String] {
        state.withLock { $0.framer.append(bytes) }
    }

    var hasPending: Bool { state.withLock { $0.framer.hasPending } }

    func flushNow() -> String? {
        state.withLock { s in
            s.timer?.cancel()
            s.timer = nil
            return s.framer.flush()
        }
    }

    /// (Re)starts the idle timer: a partial line left alone for `after` is published as it is.
    func armFlush(after: Duration, _ deliver: @escaping @Sendable (String) -> Void) {
        state.withLock { s in
            s.timer?.cancel()
            s.epoch &+= 1
            let epoch = s.epoch
            // Unstructured on purpose: notifications arrive on the D-Bus loop thread, outside any task. One timer
            // per text channel at most (re-arming cancels the previous one); it holds the state weakly.
            s.timer = Task { [weak self] in
                try? await Task.sleep(for: after)
                guard !Task.isCancelled, let self else { return }
                let line: String? = self.state.withLock { s in
                    guard s.epoch == epoch else { return nil }
                    s.timer = nil
                    return s.framer.flush()
                }
                if let line { deliver(line) }
            }
        }
    }
}

/// Feeds one notify subscription's values to its channel's publisher, straight from the thread that read them (the
/// D-Bus loop thread on the fd path). Values that arrive before the session has accepted the subscription (other
/// channels still subscribing) are held and published first on `open()`, in order; after `close()` (the subscription
/// was rejected as stale) nothing more is published.
package final class NotificationGate: Sendable {
    private enum Phase {
        case holding([[UInt8]])
        case open
        case closed
    }

    private let publisher: ChannelPublisher
    /// Held while publishing, so a value read during `open()` cannot overtake the held ones.
    private let phase = Mutex(Phase.holding([]))

    package init(publisher: ChannelPublisher) {
        self.publisher = publisher
    }

    /// One value, lent by the reader (valid only during the call): published from where it is, or copied to be held.
    package func deliver(_ value: UnsafeRawBufferPointer) {
        phase.withLock { phase in
            switch phase {
            case .open:
                publisher.publish(value)
            case .holding(var held):
                phase = .closed             // drop the enum's reference so the append does not copy
                held.append(Array(value))
                phase = .holding(held)
            case .closed:
                break
            }
        }
    }

    package func open() {
        phase.withLock { phase in
            guard case .holding(let held) = phase else { return }
            phase = .open
            for value in held { value.withUnsafeBytes { publisher.publish($0) } }
        }
    }

    package func close() {
        phase.withLock { $0 = .closed }
    }
}
