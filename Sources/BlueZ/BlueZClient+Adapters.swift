import DBus

extension BlueZClient {
    /// Every adapter, ordered by path (hci0, hci1, …).
    public func adapters() -> [AdapterInfo] {
        mirror.adapters
    }

    /// The adapter called `name` ("hci0", or its object path); without a name the first powered adapter, else hci0.
    public func adapter(_ name: String? = nil) throws(BlueZError) -> AdapterInfo {
        guard owner != nil else { throw .bluezUnavailable }
        let all = mirror.adapters
        if let name {
            guard let match = all.first(where: { $0.name == name || $0.path == name }) else {
                throw .adapterNotFound(name)
            }
            return match
        }
        guard let chosen = all.first(where: \.powered) ?? all.first(where: { $0.name == "hci0" }) else {
            throw .adapterNotFound("hci0")
        }
        return chosen
    }

    /// Sets `Powered` and waits until BlueZ reports the new state.
    public func setPowered(_ powered: Bool, adapter path: String, timeout: Duration = .seconds(10)) async throws(BlueZError) {
        _ = try await call(path, BlueZNames.properties, "Set",
                           [.string(BlueZNames.adapter), .string("Powered"), .variant(.bool(powered))],
                           timeout: timeout, what: "setting Powered on \(path)")
        try await waitFor("\(path) Powered=\(powered)", timeout: timeout) { _ -> WaitStep<Void> in
            guard let adapter = mirror.adapters.first(where: { $0.path == path }) else { return .fail(.adapterNotFound(path)) }
            return adapter.powered == powered ? .done(()) : .pending
        }
    }

    /// Sets the discovery filter (if given) and starts discovery. Discovery stops by itself when this D-Bus
    /// connection goes away, so a crashed client never leaves the radio scanning.
    public func startDiscovery(adapter path: String, filter: DiscoveryFilter? = DiscoveryFilter()) async throws(BlueZError) {
        if let filter {
            _ = try await call(path, BlueZNames.adapter, "SetDiscoveryFilter", [filter.dbusValue],
                               timeout: .seconds(10), what: "SetDiscoveryFilter on \(path)")
        }
        do throws(BlueZError) {
            _ = try await call(path, BlueZNames.adapter, "StartDiscovery", timeout: .seconds(10),
                               what: "StartDiscovery on \(path)")
        } catch .inProgress {
            // This client already has a discovery session on the adapter.
        }
    }

    public func stopDiscovery(adapter path: String) async throws(BlueZError) {
        _ = try await call(path, BlueZNames.adapter, "StopDiscovery", timeout: .seconds(10), what: "StopDiscovery on \(path)")
    }
}
