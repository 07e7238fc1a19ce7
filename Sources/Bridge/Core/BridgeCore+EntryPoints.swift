import BlueZ
import BridgeFeatureHost
import Config
import MQTT

/// How the world reaches the core: every entry point (any thread) only posts to the inbox or reads what the core
/// published (the read model, the command routes); none waits for the loop except to learn its answer.
extension BridgeCore {
    /// The running config and how many changes made it (a reload that read its files at generation `g` has the
    /// bridge API changes after `g` replayed on top, `CoreMachine`), for readers outside the loop.
    public nonisolated var running: (config: BridgeConfig, generation: UInt64) { published.withLock { $0 } }

    public nonisolated func shutdown() async {
        await ask(ifStopped: ()) { done in .shutdown(done: { done(()) }) }
    }

    public nonisolated func handle(_ event: BlueZEvent) {
        sink.yield(.bluez(event))
    }

    /// The broker (re)connected: what it may have lost (retained state, after a restart without persistence) is sent again.
    /// The features hear of it at once, from the caller's task: the caller (`MQTTService`) hands on the messages
    /// of the connection after this, and a feature must see them after the connect, not before (see `FeatureHost`).
    public nonisolated func brokerConnected() {
        host.emit(.brokerConnected)
        sink.yield(.broker(connected: true))
    }

    public nonisolated func brokerDisconnected() {
        host.emit(.brokerDisconnected)
        sink.yield(.broker(connected: false))
    }

    /// The MQTT client lost messages for good (docs/bridge-api.md `health`, issue: no silent loss).
    public nonisolated func messagesDropped(_ report: MQTTDropReport) {
        sink.yield(.dropped(report))
    }

    /// A reload swapped in a new client: it starts without subscriptions.
    public nonisolated func clientReplaced(_ client: MQTTClient) async {
        await ask(ifStopped: ()) { done in .clientReplaced(client, done: { done(()) }) }
    }

    /// Commands go to their session through the router; everything else to the features.
    public nonisolated func handle(_ message: MQTTMessage) {
        router.route(message)
    }

    /// Returns once the features have handled all but `FeatureHost.backlogLimit` bytes of the broker messages routed
    /// to them; the MQTT pump waits on it, so a flood waits (and is dropped) in the client's bounded inbox.
    public nonisolated func featuresCaughtUp() async {
        await host.backlog.belowLimit()
    }

    /// A turn of the core's loop, for the watchdog: if this returns, the loop is not stuck.
    public nonisolated func ping() async -> Bool {
        await ask(ifStopped: true) { answer in .ping({ answer(true) }) }
    }

    /// Posts the input `make` builds around a reply and waits for the reply; `ifStopped` when the inbox is closed.
    /// Every input with a reply is answered, by the loop or, once it stopped, by its drain (`BridgeCore.loop`).
    nonisolated func ask<T: Sendable>(ifStopped: T, _ make: (@escaping @Sendable (T) -> Void) -> CoreInput) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            if case .terminated = sink.yield(make({ continuation.resume(returning: $0) })) {
                continuation.resume(returning: ifStopped)
            }
        }
    }

    // MARK: - Status

    public struct Snapshot: Sendable, Equatable {
        public var devicesOnline: Int
        public var devices: Int
        /// In a fleet, the devices this bridge owns (the others are online, if at all, through another bridge).
        public var owned: Int? = nil
    }

    public nonisolated func snapshot() -> Snapshot {
        store.current.counts
    }

    /// What the bridge knows now (docs/dev/ARCHITECTURE.md, "The read model").
    public nonisolated var state: BridgeState { store.current }

    /// A running device's last published values, by channel in config order; nil when it has no session (unknown,
    /// or passive: a broadcaster's readings are published by the adverts feature and retained on the broker).
    public nonisolated func latestValues(of device: String) -> [(channel: String, payload: String)]? {
        router.session(device)?.latestValues()
    }

    /// As if the broker had delivered it (`DeviceManaging.submit`): the router's path, commands and requests alike.
    public nonisolated func submit(_ message: MQTTMessage) {
        router.route(message)
    }

    /// The state now, then after every change (a slow reader gets only the newest); ends when the bridge stops.
    public nonisolated func stateChanges() -> AsyncStream<BridgeState> { store.changes() }
}
