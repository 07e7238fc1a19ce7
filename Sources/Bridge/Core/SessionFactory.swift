import BlueZ
import Bluetooth
import BridgeAdapters
import BridgeCommands
import BridgeFeatureHost
import BridgeFleet
import BridgeModel
import BridgePairing
import BridgeSession
import Config
import Logging

/// Builds a device's session: its environment over the core's ports, and what its reports become (the read model,
/// the features' events, the machine's adapter inputs). A report arrives on the session's task, not the core's
/// loop: what only updates the read model or tells the features goes there at once; what the machine decides on
/// (availability for placement, a Connect's result for adapter health) is posted to the core's inbox.
struct SessionFactory: Sendable {
    let bluez: any BluetoothPort
    let link: any BrokerLink
    let discovery: any DiscoveryPort
    /// Discovery for `adapter: any` devices: through every usable adapter (see `AnyAdapterDiscovery`).
    let anyDiscovery: AnyAdapterDiscovery
    let gate: ConnectGate<String>
    let logger: Logger
    /// Sessions pair only once the pairing agent is registered (nil: no agent feature, pair at once).
    let agentReadiness: AgentReadiness?
    let host: FeatureHost
    let store: StateStore
    let router: CommandRouter
    let sink: AsyncStream<CoreInput>.Continuation

    /// The session, and the publisher its values go through (the fleet's holds act on it).
    func make(_ device: DeviceConfig, topics: BridgeTopics, adapter: AdapterInfo?, owned: Bool,
              bluezAvailable: Bool) -> (DeviceSession, HoldingPublisher) {
        let host = self.host, store = self.store, router = self.router, sink = self.sink
        let holder = HoldingPublisher(link)
        let environment = SessionEnvironment(
            gatt: bluez, gate: gate, discovery: device.adapter == nil ? anyDiscovery : discovery, publisher: holder,
            topics: topics, logger: logger,
            agentReady: { [agentReadiness] needsKeyboard, limit in
                await agentReadiness?.wait(needsKeyboard: needsKeyboard, within: limit) ?? true
            },
            report: { report in
                switch report {
                case .availability(let online):
                    store.update { $0.setOnline(device.name, online) }
                    host.emit(.availability(device, online: online))
                    sink.yield(.adapter(.availability(device: device.name, online: online)))
                case .rssi(let rssi):
                    let fleet = router.fleet
                    if fleet.isFleet { host.emit(.sighting(device, rssi)) }
                    if fleet.owns(device.name) {
                        store.update { $0.updateDevice(device.name) { $0.rssi = rssi; $0.lastSeen = .now } }
                        host.emit(.rssi(device, rssi))
                    }
                case .event(let event):
                    switch event {
                    case .disconnected, .error: store.update { $0.updateDevice(device.name) { $0.link = .offline } }
                    case .connected, .reconnectAttempt: break
                    }
                    host.emit(.deviceEvent(device, event))
                case .rejected(let rejection): host.emit(.rejected(rejection))
                case .completed(let command): host.emit(.completed(command))
                case .identified(let identity):
                    store.update { $0.updateDevice(device.name) { $0.identity = identity } }
                    host.emit(.identified(device, identity))
                case .released: host.emit(.released(device))
                case .unseen: if router.fleet.isFleet { host.emit(.sighting(device, nil)) }
                case .adapterOperation(let adapter, let error):
                    sink.yield(.adapter(.operation(adapterPath: adapter, error: error)))
                }
            })
        let session = DeviceSession(config: device, environment: environment, adapter: adapter,
                                    bluezAvailable: bluezAvailable, owned: owned)
        return (session, holder)
    }
}
