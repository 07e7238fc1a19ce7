import Avahi
import BridgeAdapters
import BridgeFeatureHost
import BridgeModel
import Config
import DBus
import ESPHomeAPI
import ESPHomeServer
import LoopHosting
import Logging

/// Home Assistant's Bluetooth proxy (docs/home-assistant.md, "Bluetooth proxy"): the ESPHome native API served on the
/// bridge's event loop (`APIServer`, never blocking it), through which Home Assistant's Bluetooth integrations hear
/// what the bridge's adapters hear. The scan is the bridge's own (one scan for the passive decoders and the proxy);
/// this feature turns each device heard into a raw advertisement and batches them for the clients subscribed.
///
/// The server starts once the config enables it and the first adapter's address is known (the proxy's identity in
/// Home Assistant), restarts when its settings change, and retries every 30 s while its address is in use.
package struct ProxyFeature: BridgeFeature {
    let version: String
    let host: any LoopHost
    /// The system bus, where avahi-daemon announces the proxy over mDNS; nil: not announced (tests).
    let bus: DBusConnection?
    let logger: Logger

    package var wantsRawAdvertisements: Bool { true }

    package init(version: String, host: any LoopHost, bus: DBusConnection?, logger: Logger) {
        self.version = version
        self.host = host
        self.bus = bus
        self.logger = logger
    }

    static let retryDelay: Duration = .seconds(30)

    enum Timer: Sendable {
        case flush(Int)
        case retry(Int)
    }

    /// One running server and what it was made from: a config or adapter change that alters any of it restarts it.
    struct Running {
        var plan: ProxyPlan
        var server: APIServer
        var clients: ProxyClients
        var announcer: AvahiAnnouncer?
    }

    package func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        var config: BridgeConfig?
        var adapters: [AdapterStatus] = []
        var running: Running?
        /// The plan waiting for its address to be free; `attempt` tells a stale retry timer from the current one.
        var waiting: ProxyPlan?
        var attempt = 0
        var batch = AdvertisementBatch()
        var flushes = 0

        func stop() async {
            running?.server.stop()
            await running?.announcer?.stop()
            running = nil
            waiting = nil
        }

        /// Starts, restarts or stops the server to match the config and adapters; returns a retry timer if the address
        /// is in use.
        func reconcile() async -> [(at: ContinuousClock.Instant, timer: Timer)] {
            let plan = config.flatMap { ProxyPlan(config: $0, adapters: adapters, version: version) }
            guard plan != running?.plan else { return [] }
            if running != nil {
                logger.info("Home Assistant proxy restarts with its new settings")
                await stop()
            }
            guard let plan else {
                waiting = nil
                return []
            }
            return await start(plan)
        }

        func start(_ plan: ProxyPlan) async -> [(at: ContinuousClock.Instant, timer: Timer)] {
            let security: APIConnection.Security
            do throws(ESPHomeProxyKeyError) {
                security = try ESPHomeProxyKey.resolve(plan.settings, stateDir: plan.stateDir)
                    .map { .noise(psk: $0.bytes) } ?? .plaintext
            } catch {
                logger.error("Home Assistant proxy not started: \(error)")
                return []
            }
            let clients = ProxyClients(host: host, identity: plan.identity, status: plan.status, logger: logger)
            let server = APIServer(listen: plan.listen, security: security,
                                   identity: APIConnection.Identity(name: plan.settings.name,
                                                                    macAddress: plan.macAddress),
                                   host: host, delegate: clients)
            clients.serve(server)
            do throws(APIServer.StartError) {
                try server.start()
            } catch {
                attempt += 1
                waiting = plan
                logger.warning("Home Assistant proxy cannot listen: \(error); trying again in 30 s")
                return [(ContinuousClock.now + Self.retryDelay, .retry(attempt))]
            }
            waiting = nil
            var announcer: AvahiAnnouncer?
            if let bus {
                let service = ProxyAnnouncement.service(plan: plan, port: server.port, encrypted: security != .plaintext)
                announcer = AvahiAnnouncer(connection: bus, service: service, logger: logger)
                await announcer?.start()
            }
            running = Running(plan: plan, server: server, clients: clients, announcer: announcer)
            let mode = security == .plaintext ? "plaintext" : "encrypted"
            logger.notice("Home Assistant proxy listening on \(plan.listen) (\(mode))",
                          metadata: ["name": "\(plan.settings.name)", "mac": "\(plan.macAddress)"])
            return []
        }

        await runFeatureLoop(events, timer: Timer.self) { input in
            switch input {
            case .event(.configApplied(_, let new)):
                config = new
                return await reconcile()
            case .event(.adapters(let statuses, _)):
                adapters = statuses
                if let running {
                    let state = ProxyPlan.scannerState(statuses)
                    running.clients.update { $0.scannerState = state }
                }
                return await reconcile()
            case .event(.advertisement(let heard)):
                guard let clients = running?.clients, clients.anyoneListening else { return [] }
                let raw = APIMessage.RawAdvertisement(address: heard.address.rawValue, rssi: Int32(heard.rssi),
                                                      addressType: heard.isRandom ? 1 : 0, data: heard.data)
                let first = batch.isEmpty
                if let full = batch.add(raw) {
                    clients.publish(full)
                    return []
                }
                guard first else { return [] }
                flushes += 1
                return [(ContinuousClock.now + AdvertisementBatch.flushDelay, .flush(flushes))]
            case .timer(.flush(let number)):
                // A batch sent because it filled leaves its timer behind: only the latest one flushes.
                guard number == flushes else { return [] }
                running?.clients.publish(batch.take())
                return []
            case .timer(.retry(let number)):
                guard number == attempt, let plan = waiting, running == nil else { return [] }
                return await start(plan)
            case .event(.stopping):
                await stop()
                return []
            default:
                return []
            }
        }
        await stop()
    }
}
