import BlueZ
import Bluetooth
import BridgeFeatureHost
import ESPHomeAPI
import ESPHomeServer
import Logging

/// The connections Home Assistant holds through the proxy: its requests about peripherals become work on each
/// device's `ProxyLink`, run on child tasks of the feature's loop; what changes a slot (a connect's end, a lost link,
/// a client gone) comes back to the loop as an `Outcome` and goes through `ProxyConnectionTable`. Answers go to the
/// client that asked, from the task that did the work.
///
/// Devices of the config are the bridge's: a connect request for one is refused, and the proxy never disconnects one.
struct ProxyConnections {
    enum Outcome: Sendable {
        case connected(UInt64, mtu: Int)
        case failed(UInt64, error: Int32)
        /// The client's disconnect finished, or an unpair removed the device.
        case disconnected(UInt64)
        /// A request of this client's is answered (`maxInFlight`).
        case answered(APIClientID)
        /// An unpair or cache clear answered: the link it `closed` ends now; one it left open goes on.
        case forgotten(UInt64, closed: Bool)
    }

    /// A client's requests being worked on at most; past it a request is answered at once with ESP-IDF's "no
    /// resources": a client that floods requests holds this many tasks, never more.
    static let maxInFlight = 16

    static let connectTimeout: Duration = .seconds(20)
    static let pairTimeout: Duration = .seconds(60)
    /// What a link that went by itself reports (HCI's "remote user terminated connection"): the client only needs
    /// to know it is gone.
    static let linkLostError: Int32 = 0x13

    let access: PeripheralAccess
    let clients: ProxyClients
    var configured: Set<UInt64>
    let logger: Logger
    let done: @Sendable (Outcome) -> Void
    /// The links held on each adapter, told to the core so its own devices' placement counts them.
    let linksChanged: @Sendable ([String: Int]) -> Void
    var table: ProxyConnectionTable
    var links: [UInt64: ProxyLink] = [:]
    private var inFlight: [APIClientID: Int] = [:]
    /// Connections each adapter (by name) may still take beside the bridge's own devices online through it: its
    /// `max_connections` caps both (docs/adapters.md); unknown adapters are not capped here (BlueZ refuses past the
    /// controller's own limit).
    var adapterRoom: [String: Int] = [:]
    /// The adapter each link was made through, as far as known.
    private var linkAdapters: [UInt64: String] = [:]

    init(access: PeripheralAccess, clients: ProxyClients, slots: Int, configured: Set<UInt64>, logger: Logger,
         done: @escaping @Sendable (Outcome) -> Void,
         linksChanged: @escaping @Sendable ([String: Int]) -> Void = { _ in }) {
        self.access = access
        self.clients = clients
        self.configured = configured
        self.logger = logger
        self.done = done
        self.linksChanged = linksChanged
        table = ProxyConnectionTable(slots: slots)
        publishSlots()
    }

    /// `adapter`: the object path of the adapter of the config that last heard the device (nil: none did): where a
    /// connect goes, and where an unpair or cache clear forgets it.
    mutating func handle(_ request: APIMessage, from client: APIClientID, adapter: String? = nil,
                         group: inout DiscardingTaskGroup) {
        let clients = self.clients, done = self.done
        if Self.isWork(request) {
            guard inFlight[client, default: 0] < Self.maxInFlight else {
                for answer in PeripheralRefusal.answers(to: request, error: ProxyGATTError.noResources) {
                    clients.send(answer, to: client)
                }
                return
            }
            inFlight[client, default: 0] += 1
        }
        switch request {
        case .bluetoothDeviceRequest(let address, let kind, _, _):
            switch kind {
            case .connect, .connectV3WithCache, .connectV3WithoutCache:
                connect(address, for: client, adapter: adapter, group: &group)
            case .disconnect:
                disconnect(address, for: client, group: &group)
            case .pair:
                pair(address, for: client, group: &group)
            case .unpair, .clearCache:
                forget(address, unpair: kind == .unpair, for: client, adapter: adapter, group: &group)
            default:
                clients.send(.bluetoothDeviceConnectionResponse(address: address, connected: false, mtu: 0,
                                                                error: ProxyGATTError.requestNotSupported), to: client)
            }
        case .bluetoothGATTGetServicesRequest, .bluetoothGATTReadRequest, .bluetoothGATTReadDescriptorRequest,
             .bluetoothGATTWriteRequest, .bluetoothGATTWriteDescriptorRequest, .bluetoothGATTNotifyRequest:
            gatt(request, from: client, group: &group)
        default:
            clients.refuse(request, to: client)
        }
    }

    /// BlueZ said the device's link is down: its client hears it once, its slot is free.
    mutating func linkLost(_ address: UInt64, group: inout DiscardingTaskGroup) {
        guard let entry = table.entry(address), entry.state != .connecting, entry.state != .forgetting,
              let released = table.release(address) else { return }
        logger.info("proxy connection to \(BluetoothAddress(rawValue: address)) ended")
        clients.send(.bluetoothDeviceConnectionResponse(
            address: address, connected: false, mtu: 0,
            error: released.state == .disconnecting ? 0 : Self.linkLostError), to: released.client)
        end(address, group: &group)
    }

    mutating func finished(_ outcome: Outcome, group: inout DiscardingTaskGroup) {
        switch outcome {
        case .connected(let address, let mtu):
            guard let entry = table.entry(address), entry.state == .connecting else { return }
            table.connected(address, mtu: mtu)
            logger.info("proxy connected \(BluetoothAddress(rawValue: address)) for Home Assistant")
            clients.send(.bluetoothDeviceConnectionResponse(address: address, connected: true, mtu: UInt32(mtu),
                                                            error: 0), to: entry.client)
        case .failed(let address, let error):
            guard let released = table.release(address) else { return }
            clients.send(.bluetoothDeviceConnectionResponse(address: address, connected: false, mtu: 0, error: error),
                         to: released.client)
            end(address, group: &group)
        case .answered(let client):
            answeredNow(client)
        case .forgotten(let address, let closed):
            guard closed else { return table.resume(address) }
            finished(.disconnected(address), group: &group)
        case .disconnected(let address):
            guard let released = table.release(address) else { return }
            clients.send(.bluetoothDeviceConnectionResponse(address: address, connected: false, mtu: 0, error: 0),
                         to: released.client)
            end(address, group: &group)
        }
    }

    /// A client left: its links are closed (as ESPHome closes a gone client's), nobody to tell.
    mutating func clientLeft(_ client: APIClientID, group: inout DiscardingTaskGroup) {
        inFlight[client] = nil
        for address in table.addresses(of: client) {
            _ = table.release(address)
            linkAdapters[address] = nil
            if let link = links.removeValue(forKey: address) { group.addTask { await link.disconnect() } }
        }
        publishSlots()
    }

    /// The proxy stops: every link, for the caller to close (awaited: at shutdown a child task would be cancelled and
    /// leave the device connected, since BlueZ keeps a link its client made after the client is gone).
    mutating func closeAll() -> [ProxyLink] {
        for address in links.keys { _ = table.release(address) }
        defer {
            links = [:]
            linkAdapters = [:]
            linksChanged([:])
        }
        return Array(links.values)
    }

    private mutating func connect(_ address: UInt64, for client: APIClientID, adapter path: String?,
                                  group: inout DiscardingTaskGroup) {
        let device = BluetoothAddress(rawValue: address)
        if configured.contains(address) {
            logger.warning("Home Assistant asked the proxy to connect \(device), a device of the bridge's config: refused")
            return clients.send(.bluetoothDeviceConnectionResponse(address: address, connected: false, mtu: 0,
                                                                   error: ProxyGATTError.writeNotPermitted), to: client)
        }
        if let entry = table.entry(address), entry.client == client, entry.state == .connected {
            return clients.send(.bluetoothDeviceConnectionResponse(address: address, connected: true,
                                                                   mtu: UInt32(entry.mtu), error: 0), to: client)
        }
        // Only through an adapter of the config that heard it: BlueZ keeps the device under every adapter that did.
        guard let path, let adapter = path.split(separator: "/").last.map(String.init) else {
            logger.info("proxy connect to \(device) refused: none of the bridge's adapters heard it")
            return clients.send(.bluetoothDeviceConnectionResponse(address: address, connected: false, mtu: 0,
                                                                   error: ProxyGATTError.notConnected), to: client)
        }
        if let room = adapterRoom[adapter], linkAdapters.values.count(where: { $0 == adapter }) >= room {
            logger.info("proxy connect to \(device) refused: \(adapter) is at its max_connections")
            return clients.send(.bluetoothDeviceConnectionResponse(address: address, connected: false, mtu: 0,
                                                                   error: ProxyGATTError.noResources), to: client)
        }
        guard table.claim(address, for: client) else {
            logger.info("proxy connect to \(device) refused: every connection slot is taken, or it is held already")
            return clients.send(.bluetoothDeviceConnectionResponse(address: address, connected: false, mtu: 0,
                                                                   error: ProxyGATTError.noResources), to: client)
        }
        let link = ProxyLink(address: device, adapter: path, access: access)
        links[address] = link
        linkAdapters[address] = adapter
        publishSlots()
        let done = self.done, logger = self.logger
        group.addTask {
            do throws(BlueZError) {
                let mtu = try await link.connect(timeout: Self.connectTimeout)
                done(.connected(address, mtu: mtu))
            } catch {
                logger.info("proxy connect to \(device) failed: \(error)")
                await link.disconnect()
                done(.failed(address, error: ProxyGATTError(error, writing: true).code))
            }
        }
    }

    private mutating func disconnect(_ address: UInt64, for client: APIClientID, group: inout DiscardingTaskGroup) {
        guard let entry = table.entry(address), entry.client == client, let link = links[address] else {
            // Not held (or another client's): nothing to end, and the client is told it is not connected.
            return clients.send(.bluetoothDeviceConnectionResponse(address: address, connected: false, mtu: 0,
                                                                   error: 0), to: client)
        }
        table.disconnecting(address)
        let done = self.done
        group.addTask {
            await link.disconnect()
            done(.disconnected(address))
        }
    }

    mutating func answeredNow(_ client: APIClientID) {
        if let count = inFlight[client] { inFlight[client] = count > 1 ? count - 1 : nil }
    }

    /// Requests answered from a task of their own, counted in `inFlight` (connects and disconnects are bounded by the
    /// slots instead).
    static func isWork(_ request: APIMessage) -> Bool {
        switch request {
        case .bluetoothDeviceRequest(_, let kind, _, _): kind == .pair || kind == .unpair || kind == .clearCache
        case .bluetoothGATTGetServicesRequest, .bluetoothGATTReadRequest, .bluetoothGATTReadDescriptorRequest,
             .bluetoothGATTWriteRequest, .bluetoothGATTWriteDescriptorRequest, .bluetoothGATTNotifyRequest: true
        default: false
        }
    }

    mutating func end(_ address: UInt64, group: inout DiscardingTaskGroup) {
        linkAdapters[address] = nil
        if let link = links.removeValue(forKey: address) { group.addTask { await link.dropSubscriptions() } }
        publishSlots()
    }

    func publishSlots() {
        let table = self.table
        clients.update { table.apply(to: &$0) }
        var counts: [String: Int] = [:]
        for (address, adapter) in linkAdapters where table.entry(address) != nil { counts[adapter, default: 0] += 1 }
        linksChanged(counts)
    }
}
