import DequeModule

/// What `publish`, `subscribe` and the network thread decide on together, under one lock, so that a message is
/// either handed to libmosquitto or buffered, and buffered messages always go out before newer ones.
struct SessionState: Sendable {
    enum Phase: Sendable { case created, running, stopped }

    var phase: Phase = .created
    /// Connected, subscriptions restored and the buffer flushed: publishes go straight to libmosquitto (unless
    /// the buffer holds older messages waiting for libmosquitto's queue to drain below the bound).
    var ready = false
    var buffer: OfflineBuffer
    /// Filters to restore on every connect (the session is clean each time).
    var subscriptions: [String: SubscriptionOptions] = [:]
    /// The last topic a publish found valid. A channel publishes to one topic, value after value, and comparing the
    /// same string is one compare of its storage, where libmosquitto's check walks and decodes it (then does so again
    /// inside `mosquitto_publish`). Here rather than under a lock of its own: every publish takes this lock anyway.
    var checkedTopic: String?
    /// Published while ready but found the I/O lock taken (the network thread mid-read): handed to libmosquitto by
    /// the network thread as soon as it lets go, before anything newer. Waiting on the lock instead costs both
    /// threads a sleep and a wake-up.
    var deferred = WaitingQueue()

    init(bufferLimit: Int, byteLimit: Int = .max) { buffer = OfflineBuffer(limit: bufferLimit, byteLimit: byteLimit) }
}

/// Messages deferred to the network thread, with their bytes: they count against the byte bound like the ones
/// libmosquitto holds.
struct WaitingQueue: Sendable {
    private(set) var messages: Deque<OutgoingMessage> = []
    private(set) var bytes = 0

    var isEmpty: Bool { messages.isEmpty }

    mutating func append(_ message: OutgoingMessage) {
        messages.append(message)
        bytes += message.footprint
    }

    mutating func takeAll() -> Deque<OutgoingMessage> {
        defer { messages = []; bytes = 0 }
        return messages
    }
}
