import BridgeCoreLayer
import BridgeModel
import Config
import Logging
import MQTT
import ServiceLifecycle

/// The broker connection: starts the client, feeds its messages and connection changes to the core, follows a
/// client swapped in by a reload, and at shutdown (after the core stopped the devices) publishes `offline` and
/// disconnects cleanly.
final class MQTTService: Service, Sendable {
    let link: MQTTLink
    let core: BridgeCore
    let logger: Logger
    let statusChanged: @Sendable () -> Void
    /// Called once the client has started (docs/operating.md: READY=1 does not wait for the broker).
    let started: @Sendable () -> Void
    /// The thread that serves the broker's socket (the D-Bus loop), for the first client and every replacement.
    let host: (any MQTTLoopHost)?
    private let replacements: AsyncStream<MQTTClient>
    private let replacer: AsyncStream<MQTTClient>.Continuation

    init(link: MQTTLink, core: BridgeCore, logger: Logger, statusChanged: @escaping @Sendable () -> Void,
         host: (any MQTTLoopHost)? = nil, started: @escaping @Sendable () -> Void) {
        self.link = link
        self.core = core
        self.logger = logger
        self.statusChanged = statusChanged
        self.started = started
        self.host = host
        (replacements, replacer) = AsyncStream.makeStream(of: MQTTClient.self)
    }

    func run() async {
        await withDiscardingTaskGroup { group in
            let first = link.client
            group.addTask { await self.pump(first) }
            first.start(on: host)
            started()
            for await client in replacements.cancelOnGracefulShutdown() {
                group.addTask { await self.pump(client) }
            }
            let settings = core.running.config.mqtt
            await link.client.shutdown(finalMessages: [Self.offline(settings)], timeout: .milliseconds(1500))
        }
    }

    /// Swaps in a client for new settings. The old one says goodbye (a clean disconnect sends no will) before the
    /// new one connects, so on a shared broker and base topic the retained state ends `online`, never a late
    /// `offline`. `configure` runs before the new client starts (the core subscribes its topics there).
    func replace(with client: MQTTClient, old: MQTTSettings, configure: () async -> Void) async {
        replacer.yield(client)
        let previous = link.swap(client)
        // What the old client still holds (the broker may be down) moves to the new one, ahead of what was
        // published since the swap; only what libmosquitto already took can be lost, and that is reported.
        let buffered = previous.drainBuffered()
        await previous.shutdown(finalMessages: [Self.offline(old)], timeout: .seconds(1))
        if !buffered.isEmpty {
            logger.notice("handing \(buffered.count) buffered message(s) to the new MQTT client")
            await client.adopt(buffered)
        }
        await configure()
        client.start(on: host)
    }

    /// Messages and connection changes are handed on from one task in the network thread's order: the features
    /// must hear of a (re)connect before the retained messages it replays, or they would take what they just learnt
    /// for stale and forget it. Nothing is handed on before the core has started (its features have their config).
    private func pump(_ client: MQTTClient) async {
        _ = await core.ping()
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await inbound in client.messages.inbound {
                    switch inbound {
                    case .message(let message):
                        self.core.handle(message)
                        await self.core.featuresCaughtUp()
                    case .connected: self.core.brokerConnected()
                    // A client a reload replaced says goodbye after its successor may have connected.
                    case .disconnected: if self.link.client === client { self.core.brokerDisconnected() }
                    }
                }
            }
            let flood = FloodTrim()
            group.addTask {
                for await report in client.drops {
                    self.core.messagesDropped(report)
                    if report.reason == .inboxFull { flood.noteDrop() }
                }
                flood.finish()
            }
            group.addTask { [logger] in
                await flood.run { released in
                    logger.debug("flood over: heap trimmed", metadata: ["released": "\(released)"])
                }
            }
            for await _ in client.connectionStates() { statusChanged() }
        }
    }

    static func offline(_ settings: MQTTSettings) -> MQTTMessage {
        MQTTMessage(topic: BridgeTopics(settings: settings).bridgeState, string: "offline", qos: .atLeastOnce, retain: true)
    }
}
