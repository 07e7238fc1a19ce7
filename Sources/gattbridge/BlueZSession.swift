import BlueZ
import Bluetooth
import DBus
import Durations
import Logging

/// The common start of every Bluetooth command: system bus → BlueZ → adapter, then (for device commands) find,
/// connect and resolve the device. Every failure becomes a `CLIFailure` with the docs/cli.md exit code.
struct BlueZSession: Sendable {
    let client: BlueZClient
    let adapter: AdapterInfo
    let logger: Logger

    static func open(_ options: BluetoothOptions, logger: Logger) async throws(CLIFailure) -> BlueZSession {
        let connection: DBusConnection
        do {
            connection = try await DBusConnection.system()
        } catch {
            throw CLIFailure(ExitStatus.unavailable, "cannot connect to the system bus: \(error)")
        }
        let client: BlueZClient
        do {
            client = try await BlueZClient.connect(connection, logger: logger)
        } catch {
            connection.close()
            throw CLIFailure(error, context: "BlueZ")
        }
        let adapter: AdapterInfo
        do {
            adapter = try await client.adapter(options.adapter)
        } catch {
            await client.shutdown()
            connection.close()
            throw CLIFailure(error, context: "BlueZ")
        }
        guard adapter.powered else {
            await client.shutdown()
            connection.close()
            throw CLIFailure(ExitStatus.unavailable, "adapter \(adapter.name) is powered off")
        }
        return BlueZSession(client: client, adapter: adapter, logger: logger)
    }

    func close() async {
        await client.shutdown()
        client.connection.close()
    }

    /// A device connected for one command; `release` disconnects it only if this command made the connection.
    struct ConnectedDevice: Sendable {
        var info: DeviceInfo
        var tree: GattTree
        var connectedByUs: Bool
    }

    /// Finds the device (discovering it for up to `timeout` if BlueZ does not know it yet), connects and resolves
    /// its services.
    func connect(_ address: BluetoothAddress, timeout: Duration) async throws(CLIFailure) -> ConnectedDevice {
        let device = try await find(address, timeout: timeout)
        let wasConnected = device.connected
        do {
            if !wasConnected {
                logger.info("connecting", metadata: ["device": "\(address)"])
                try await client.connect(device: device.path, timeout: timeout)
            }
            let tree = try await client.waitUntilServicesResolved(device: device.path, timeout: timeout)
            let info = await client.device(path: device.path) ?? device
            return ConnectedDevice(info: info, tree: tree, connectedByUs: !wasConnected)
        } catch {
            if !wasConnected {
                // Its own task: after Ctrl-C the half-made connection must still be torn down.
                let client = self.client
                await Task { _ = try? await client.disconnect(device: device.path) }.value
            }
            throw CLIFailure(ExitStatus.code(for: error) == ExitStatus.unavailable ? ExitStatus.unavailable
                                 : ExitStatus.temporaryFailure,
                             "connect \(address): \(ExitStatus.describe(error))")
        }
    }

    /// Disconnects the device if this command connected it. Runs in its own task so it still happens when the
    /// command was cancelled by a signal.
    func release(_ device: ConnectedDevice) async {
        guard device.connectedByUs else { return }
        let client = self.client
        let path = device.info.path
        await Task {
            do {
                try await client.disconnect(device: path)
            } catch {
                logger.warning("disconnect failed", metadata: ["device": "\(device.info.address)", "error": "\(error)"])
            }
        }.value
    }

    func find(_ address: BluetoothAddress, timeout: Duration) async throws(CLIFailure) -> DeviceInfo {
        if let known = await client.device(address: address, adapter: adapter.path) { return known }
        logger.info("device not known to BlueZ yet, discovering", metadata: ["device": "\(address)"])
        do {
            try await client.startDiscovery(adapter: adapter.path, filter: DiscoveryFilter(transport: .le))
        } catch {
            throw CLIFailure(error, context: "discovery on \(adapter.name)")
        }
        let found: DeviceInfo?
        do {
            found = try await client.waitForDevice(address: address, adapter: adapter.path, timeout: timeout)
        } catch .timeout {
            found = nil
        } catch {
            _ = try? await client.stopDiscovery(adapter: adapter.path)
            throw CLIFailure(error, context: "finding \(address)")
        }
        _ = try? await client.stopDiscovery(adapter: adapter.path)
        guard let found else {
            throw CLIFailure(ExitStatus.unavailable,
                             "device \(address) not found on \(adapter.name) (scanned \(timeout.secondsDescription) s)")
        }
        return found
    }

    /// The characteristic CHAR names on a connected device.
    func characteristic(_ spec: CharacteristicArgument, on device: ConnectedDevice) throws(CLIFailure) -> GattCharacteristicInfo {
        guard let found = device.tree.characteristic(spec.characteristic, service: spec.service) else {
            throw CLIFailure(ExitStatus.unavailable, "characteristic \(spec) not found on \(device.info.address)")
        }
        return found
    }
}

extension BlueZSession {
    /// True when the device is, or within `timeout` becomes, disconnected (or gone). Used after a notification
    /// stream ends: an AcquireNotify socket reports the hang-up before BlueZ's Connected=false arrives.
    func becomesDisconnected(_ path: String, within timeout: Duration) async -> Bool {
        let events = client.events()
        guard let device = await client.device(path: path), device.connected else { return true }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await event in events {
                    switch event {
                    case .deviceChanged(let device, _) where device.path == path && !device.connected: return true
                    case .deviceRemoved(let removed, _) where removed == path: return true
                    case .bluezVanished: return true
                    default: continue
                    }
                }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
