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
/// what the bridge's adapters hear and connect to devices through them. The scan is the bridge's own (one scan for the
/// passive decoders and the proxy); this feature turns each device heard into a raw advertisement and batches them for
/// the clients subscribed, and holds the connections clients ask for (`ProxyConnections`).
///
/// The server starts once the config enables it and the first adapter's address is known (the proxy's identity in
/// Home Assistant), restarts when its settings change, and retries every 30 s while its address is in use.
///
/// One loop: core events, clients' requests, timers and the results of connection work arrive as `Input`s in order;
/// the work itself (BlueZ calls) runs on child tasks, one `ProxyLink` actor per device.
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

    enum Input: Sendable {
        case event(CoreEvent)
        case request(APIClientID, APIMessage)
        case clientLeft(APIClientID)
        case subscribed(APIClientID)
        case refresh
        case flush(Int)
        case retry(Int)
        case connection(ProxyConnections.Outcome)
    }

    /// One running server and what it was made from: a config or adapter change that alters any of it restarts it.
    struct Running {
        var plan: ProxyPlan
        var server: APIServer
        var clients: ProxyClients
        var announcer: AvahiAnnouncer?
    }

    package func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        let (inputs, input) = AsyncStream.makeStream(of: Input.self)
        var config: BridgeConfig?
        var adapters: [AdapterStatus] = []
        var running: Running?
        /// The plan waiting for its address to be free; `attempt` tells a stale retry timer from the current one.
        var waiting: ProxyPlan?
        var attempt = 0
        var batch = AdvertisementBatch()
        var cache = AdvertisementCache()
        var refreshing = false
        var flushes = 0
        var connections: ProxyConnections?

        await withDiscardingTaskGroup { group in
            group.addTask {
                for await event in events { input.yield(.event(event)) }
                input.finish()
            }

            func after(_ delay: Duration, _ next: Input) {
                group.addTask {
                    try? await Task.sleep(for: delay)
                    input.yield(next)
                }
            }

            func stop() async {
                for link in connections?.closeAll() ?? [] { await link.disconnect() }
                connections = nil
                running?.clients.goodbye()
                running?.server.stop()
                await running?.announcer?.stop()
                running = nil
                waiting = nil
            }

            /// Starts, restarts or stops the server to match the config and adapters.
            func reconcile() async {
                let plan = config.flatMap { ProxyPlan(config: $0, adapters: adapters, version: version) }
                guard plan != running?.plan else { return }
                if running != nil {
                    logger.info("Home Assistant proxy restarts with its new settings")
                    await stop()
                }
                guard let plan else {
                    waiting = nil
                    // Off: the core stops reporting, so what is kept would go stale.
                    if config?.esphomeProxy.enabled != true { cache.clear() }
                    return
                }
                await start(plan)
            }

            func start(_ plan: ProxyPlan) async {
                let key: ESPHomeProxyKey?
                do throws(ESPHomeProxyKeyError) {
                    key = try ESPHomeProxyKey.resolve(plan.settings, stateDir: plan.stateDir)
                } catch {
                    logger.error("Home Assistant proxy not started: \(error)")
                    return
                }
                let security: APIConnection.Security = key.map { .noise(psk: $0.bytes) } ?? .plaintext
                var status = APISession.Status()
                status.scannerState = ProxyPlan.scannerState(adapters)
                let clients = ProxyClients(host: host, identity: plan.identity, status: status, logger: logger,
                                           peripheralRequest: { input.yield(.request($0, $1)) },
                                           clientLeft: { input.yield(.clientLeft($0)) },
                                           subscribed: { input.yield(.subscribed($0)) })
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
                    after(Self.retryDelay, .retry(attempt))
                    return
                }
                waiting = nil
                var announcer: AvahiAnnouncer?
                if let bus {
                    let service = ProxyAnnouncement.service(plan: plan, port: server.port,
                                                            encrypted: security != .plaintext)
                    announcer = AvahiAnnouncer(connection: bus, service: service, logger: logger)
                    await announcer?.start()
                }
                running = Running(plan: plan, server: server, clients: clients, announcer: announcer)
                connections = context.peripherals.map {
                    ProxyConnections(access: $0, clients: clients, slots: plan.settings.connectionSlots,
                                     configured: Set((config?.devices ?? []).map(\.address.rawValue)), logger: logger,
                                     done: { input.yield(.connection($0)) },
                                     linksChanged: { context.setExternalLinks($0) })
                }
                connections?.adapterRoom = Self.room(adapters, config)
                let mode = security == .plaintext ? "plaintext" : "encrypted"
                logger.notice("Home Assistant proxy listening on \(plan.listen) (\(mode))",
                              metadata: ["name": "\(plan.settings.name)", "mac": "\(plan.macAddress)"])
            }

            for await next in inputs {
                switch next {
                case .event(.configApplied(_, let new)):
                    config = new
                    connections?.configured = Set(new.devices.map(\.address.rawValue))
                    connections?.adapterRoom = Self.room(adapters, new)
                    await reconcile()
                case .event(.adapters(let statuses, _)):
                    adapters = statuses
                    connections?.adapterRoom = Self.room(statuses, config)
                    if let running {
                        let state = ProxyPlan.scannerState(statuses)
                        running.clients.update { $0.scannerState = state }
                    }
                    await reconcile()
                case .event(.advertisement(let heard)):
                    // Kept before the server runs too (the devices BlueZ holds at start come first).
                    let raw = APIMessage.RawAdvertisement(address: heard.address.rawValue, rssi: Int32(heard.rssi),
                                                          addressType: heard.isRandom ? 1 : 0, data: heard.data)
                    cache.heard(raw, adapter: heard.adapter)
                    guard let clients = running?.clients, clients.anyoneListening else { break }
                    let first = batch.isEmpty
                    if let full = batch.add(raw) {
                        clients.publish(full)
                    } else if first {
                        flushes += 1
                        after(AdvertisementBatch.flushDelay, .flush(flushes))
                    }
                case .event(.link(let address, _, let connected)):
                    if !connected { connections?.linkLost(address.rawValue, group: &group) }
                case .event(.unheard(let address)):
                    cache.forget(address.rawValue)
                case .event(.stopping):
                    await stop()
                    group.cancelAll()
                case .event:
                    break
                case .flush(let number):
                    // A batch sent because it filled leaves its timer behind: only the latest one flushes.
                    guard number == flushes else { break }
                    running?.clients.publish(batch.take())
                case .retry(let number):
                    guard number == attempt, let plan = waiting, running == nil else { break }
                    await start(plan)
                case .request(let client, let request):
                    if connections != nil {
                        connections?.handle(request, from: client, adapter: Self.address(of: request).flatMap {
                            cache.adapter(of: $0)
                        }, group: &group)
                    } else {
                        running?.clients.refuse(request, to: client)
                    }
                case .clientLeft(let client):
                    connections?.clientLeft(client, group: &group)
                case .subscribed(let client):
                    // What is around now, which BlueZ will not report again until it changes.
                    for batch in cache.batches {
                        running?.clients.send(.bluetoothLERawAdvertisementsResponse(batch), to: client)
                    }
                    if !refreshing {
                        refreshing = true
                        after(AdvertisementCache.refreshInterval, .refresh)
                    }
                case .refresh:
                    guard let clients = running?.clients, clients.anyoneListening else {
                        refreshing = false
                        break
                    }
                    for batch in cache.batches { clients.publish(batch) }
                    after(AdvertisementCache.refreshInterval, .refresh)
                case .connection(let outcome):
                    connections?.finished(outcome, group: &group)
                }
            }
            await stop()
        }
    }
}

extension ProxyFeature {
    /// What each adapter (by name) may still take for the proxy: its `max_connections` less the bridge's devices online through
    /// it.
    static func room(_ adapters: [AdapterStatus], _ config: BridgeConfig?) -> [String: Int] {
        guard let config else { return [:] }
        var room: [String: Int] = [:]
        for adapter in adapters {
            room[adapter.name] = max(0, config.bluetooth.maxConnections(of: adapter.name) - adapter.connections)
        }
        return room
    }

    static func address(of request: APIMessage) -> UInt64? {
        if case .bluetoothDeviceRequest(let address, _, _, _) = request { return address }
        return nil
    }
}

extension ProxyClients {
    /// Answers a request about a peripheral when the bridge has no way to connect one (`PeripheralRefusal`).
    func refuse(_ request: APIMessage, to client: APIClientID) {
        for answer in PeripheralRefusal.answers(to: request) { send(answer, to: client) }
    }
}
