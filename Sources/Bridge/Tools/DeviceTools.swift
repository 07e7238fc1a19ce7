import BlueZ
import Bluetooth
import BridgeSession

/// `scan` and `inspect` for the bridge API, on the daemon's BlueZ client. Discovery goes through the
/// `DiscoveryCoordinator` under the request's own name, so it runs alongside the sessions' discovery: neither
/// stops the other's.
package enum DeviceTools {
    /// Devices seen on `adapter` during `duration` (ones BlueZ sees right now included).
    static func scan(bluez: BlueZClient, adapter: AdapterInfo, services: [BluetoothUUID], duration: Duration,
                     discovery: any DiscoveryControl, requester: String) async -> ScanResults {
        // Subscribed before discovery starts, so no device found early is missed.
        let events = bluez.events()
        var results = ScanResults(adapterPath: adapter.path, services: services)
        for device in await bluez.devices(adapter: adapter.path) { results.seed(device) }
        discovery.want(requester, adapter: adapter.path)
        defer { discovery.release(requester, adapter: adapter.path) }
        let (inputs, input) = AsyncStream<BlueZEvent?>.makeStream()
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await event in events { input.yield(event) }
            }
            group.addTask {
                try? await Task.sleep(for: duration)
                input.yield(nil)
            }
            for await event in inputs {
                guard let event else { break }
                _ = results.apply(event)
            }
            group.cancelAll()
        }
        return results
    }

    package enum InspectFailure: Error, Sendable {
        case notFound(String)
        case failed(String)
    }

    /// Connects (unless connected), resolves, reads every readable characteristic, and disconnects again if it
    /// made the connection.
    static func inspect(bluez: BlueZClient, adapter: AdapterInfo, address: BluetoothAddress, timeout: Duration,
                        discovery: any DiscoveryControl, requester: String) async throws(InspectFailure) -> GattReport {
        var found = await bluez.device(address: address, adapter: adapter.path)
        if found == nil {
            discovery.want(requester, adapter: adapter.path)
            found = try? await bluez.waitForDevice(address: address, adapter: adapter.path, timeout: timeout)
            discovery.release(requester, adapter: adapter.path)
        }
        guard let device = found else {
            throw .notFound("device \(address) not found on \(adapter.name) (scanned \(timeout.components.seconds) s)")
        }
        let connectedByUs = !device.connected
        do throws(BlueZError) {
            if connectedByUs { try await bluez.connect(device: device.path, timeout: timeout) }
            let tree = try await bluez.waitUntilServicesResolved(device: device.path, timeout: timeout)
            let info = await bluez.device(path: device.path) ?? device
            let report = await GattReport.read(info: info, tree: tree, client: bluez)
            if connectedByUs { _ = try? await bluez.disconnect(device: device.path) }
            return report
        } catch {
            if connectedByUs { _ = try? await bluez.disconnect(device: device.path) }
            throw .failed("inspect \(address): \(error)")
        }
    }
}
