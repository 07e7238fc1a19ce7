import ESPHomeAPI
import ESPHomeServer

/// The proxy's connections and their slots (`esphome_proxy.connection_slots`), as values: who holds which address,
/// and what Home Assistant is told of them (`connections_free`).
///
/// Invariants: an address has at most one entry, held by one client; entries never exceed the slots; `release`
/// returns an entry once, so a lost link is reported once however many ways its end is learnt (the client's
/// disconnect finishing, BlueZ's `Connected` turning false).
struct ProxyConnectionTable {
    /// `forgetting`: an unpair or a cache clear closes the link; its end is reported after the answer (aioesphomeapi
    /// takes a connection change before it as the request's failure), so BlueZ's word of it is not taken.
    enum State: Equatable { case connecting, connected, disconnecting, forgetting }

    struct Entry: Equatable {
        var client: APIClientID
        var state: State
        var mtu: Int = 0
    }

    let slots: Int
    private(set) var entries: [UInt64: Entry] = [:]
    /// Addresses in the order they were taken, for `allocated`.
    private var order: [UInt64] = []

    init(slots: Int) {
        self.slots = slots
    }

    /// Takes a slot for `address` for `client`; false when every slot is taken or the address is already held.
    mutating func claim(_ address: UInt64, for client: APIClientID) -> Bool {
        guard entries[address] == nil, entries.count < slots else { return false }
        entries[address] = Entry(client: client, state: .connecting)
        order.append(address)
        return true
    }

    mutating func connected(_ address: UInt64, mtu: Int) {
        guard entries[address]?.state == .connecting else { return }
        entries[address]?.state = .connected
        entries[address]?.mtu = mtu
    }

    /// A cache clear refused: the link it would have closed goes on.
    mutating func resume(_ address: UInt64) {
        guard entries[address]?.state == .forgetting else { return }
        entries[address]?.state = .connected
    }

    mutating func disconnecting(_ address: UInt64, forgetting: Bool = false) {
        entries[address]?.state = forgetting ? .forgetting : .disconnecting
    }

    /// Frees the address's slot; the entry it had, the first time only.
    mutating func release(_ address: UInt64) -> Entry? {
        guard let entry = entries.removeValue(forKey: address) else { return nil }
        order.removeAll { $0 == address }
        return entry
    }

    func entry(_ address: UInt64) -> Entry? { entries[address] }

    func addresses(of client: APIClientID) -> [UInt64] {
        order.filter { entries[$0]?.client == client }
    }

    /// What `connections_free` says: free slots, the limit, the addresses holding slots.
    func apply(to status: inout APISession.Status) {
        status.connectionsFree = UInt32(max(0, slots - entries.count))
        status.connectionsLimit = UInt32(slots)
        status.allocated = order
    }
}
