import Bluetooth
import DBus

extension BlueZClient {
    /// Known devices, optionally only those of one adapter (by path), ordered by path.
    public func devices(adapter adapterPath: String? = nil) -> [DeviceInfo] {
        mirror.devices.filter { adapterPath == nil || $0.adapterPath == adapterPath }
    }

    public func device(path: String) -> DeviceInfo? {
        mirror.device(path)
    }

    public func device(address: BluetoothAddress, adapter adapterPath: String? = nil) -> DeviceInfo? {
        mirror.devices.first { $0.address == address && (adapterPath == nil || $0.adapterPath == adapterPath) }
    }

    /// Waits until BlueZ knows a device with this address (discovery must be running for a new one to appear).
    public func waitForDevice(address: BluetoothAddress, adapter adapterPath: String? = nil,
                              timeout: Duration) async throws(BlueZError) -> DeviceInfo {
        try await waitFor("device \(address) to be found", timeout: timeout) { _ -> WaitStep<DeviceInfo> in
            if let device = device(address: address, adapter: adapterPath) { return .done(device) }
            return .pending
        }
    }

    /// `Device1.Connect`, queued behind other operations on the device. On timeout the pending connection
    /// attempt is cancelled with Disconnect, because BlueZ would otherwise keep trying.
    public func connect(device path: String, timeout: Duration = .seconds(30)) async throws(BlueZError) {
        let what = "connecting \(mirror.device(path)?.address.description ?? path)"
        try await serialized(path) { () async throws(BlueZError) in
            do throws(BlueZError) {
                _ = try await call(path, BlueZNames.device, "Connect", timeout: timeout, what: what)
            } catch .alreadyConnected {
                return
            } catch .timeout(let what) {
                _ = try? await call(path, BlueZNames.device, "Disconnect", timeout: .seconds(5), what: "cancelling connect")
                throw .timeout(what)
            }
        }
    }

    /// `Device1.Disconnect`. Not queued: it must be able to cancel a Connect that is waiting for its reply.
    /// Returns once the mirror shows the device disconnected (bluetoothd signals that before it replies, but the
    /// signal reaches the mirror through its own task), so a caller can reconnect at once.
    public func disconnect(device path: String, timeout: Duration = .seconds(10)) async throws(BlueZError) {
        do throws(BlueZError) {
            _ = try await call(path, BlueZNames.device, "Disconnect", timeout: timeout, what: "disconnecting \(path)")
        } catch .notConnected {
            return
        }
        try await waitFor("\(path) to report Connected=false", timeout: timeout) { _ -> WaitStep<Void> in
            mirror.device(path)?.connected == true ? .pending : .done(())
        }
    }

    /// `Adapter1.RemoveDevice`: forgets the device (and its bond and cached GATT database).
    public func removeDevice(_ path: String) async throws(BlueZError) {
        guard let adapterPath = mirror.device(path)?.adapterPath ?? ObjectPath.adapter(of: path) else {
            throw .deviceNotFound(path)
        }
        do throws(BlueZError) {
            _ = try await call(adapterPath, BlueZNames.adapter, "RemoveDevice", [.objectPath(path)],
                               timeout: .seconds(10), what: "removing \(path)")
        } catch .doesNotExist {
            return
        }
    }

    /// Waits for `ServicesResolved` and returns the GATT tree. Fails if the device disconnects or disappears meanwhile.
    ///
    /// A Connected=false already in the mirror when this starts is not taken as failure: the Connect reply can
    /// overtake the Connected=true signal on its way through the mirror.
    public func waitUntilServicesResolved(device path: String, timeout: Duration = .seconds(30)) async throws(BlueZError) -> GattTree {
        try await waitFor("services of \(path) to be resolved", timeout: timeout) { event -> WaitStep<Void> in
            guard let device = mirror.device(path) else { return .fail(.deviceNotFound(path)) }
            if device.servicesResolved { return .done(()) }
            if case .deviceChanged(let changedDevice, let changed)? = event, changedDevice.path == path,
               changed.contains("Connected"), !changedDevice.connected {
                return .fail(.notConnected)
            }
            if case .bluezVanished? = event { return .fail(.bluezUnavailable) }
            return .pending
        }
        // bluetoothd (gdbus) emits each object's signals from that object's own idle callback, so the device's
        // PropertiesChanged(ServicesResolved=true) can reach us before the InterfacesAdded of the GATT objects it
        // exported just before. Those objects are registered by then: a GetManagedObjects reply has them all.
        let snapshot: [String: ObjectMirror.Interfaces]
        do {
            snapshot = try await connection.getManagedObjects(destination: BlueZNames.service, path: BlueZNames.root)
        } catch {
            throw BlueZError.from(error)
        }
        for (objectPath, interfaces) in snapshot where objectPath.hasPrefix(path + "/") {
            emit(mirror.interfacesAdded(path: objectPath, interfaces: interfaces))
        }
        return mirror.gattTree(device: path)
    }
}
