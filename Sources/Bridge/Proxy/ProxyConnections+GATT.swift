import BlueZ
import Bluetooth
import ESPHomeAPI
import ESPHomeServer
import Logging

/// A connected device's GATT work as Home Assistant asks for it, by the proxy's handles: each request answered from a
/// task of its own, on the device's `ProxyLink`, one at a time per device.
extension ProxyConnections {
    mutating func gatt(_ request: APIMessage, from client: APIClientID, group: inout DiscardingTaskGroup) {
        let clients = self.clients, done = self.done
        switch request {
        case .bluetoothGATTGetServicesRequest(let address):
            guard let link = link(address, of: client) else { return notConnected(address, 0, client) }
            group.addTask {
                defer { done(.answered(client)) }
                // One message per service keeps each within the frame's bound however large the database.
                for service in await link.services() {
                    clients.send(.bluetoothGATTGetServicesResponse(address: address, services: [service]), to: client)
                }
                clients.send(.bluetoothGATTGetServicesDoneResponse(address: address), to: client)
            }
        case .bluetoothGATTReadRequest(let address, let handle),
             .bluetoothGATTReadDescriptorRequest(let address, let handle):
            guard let link = link(address, of: client) else { return notConnected(address, handle, client) }
            let logger = self.logger
            group.addTask {
                defer { done(.answered(client)) }
                do throws(ProxyGATTError) {
                    let data = try await link.read(handle)
                    clients.send(.bluetoothGATTReadResponse(address: address, handle: handle, data: data), to: client)
                } catch {
                    Self.report(error, address, handle, logger)
                    clients.send(.bluetoothGATTErrorResponse(address: address, handle: handle, error: error.code),
                                 to: client)
                }
            }
        case .bluetoothGATTWriteRequest(let address, let handle, let response, let data):
            write(address, handle, data, response: response, client, group: &group)
        case .bluetoothGATTWriteDescriptorRequest(let address, let handle, let data):
            write(address, handle, data, response: true, client, group: &group)
        case .bluetoothGATTNotifyRequest(let address, let handle, let enable):
            guard let link = link(address, of: client) else { return notConnected(address, handle, client) }
            let logger = self.logger
            group.addTask {
                defer { done(.answered(client)) }
                do throws(ProxyGATTError) {
                    try await link.notify(handle, enable: enable, deliver: Self.deliverer(clients, address, client))
                    clients.send(.bluetoothGATTNotifyResponse(address: address, handle: handle), to: client)
                } catch {
                    Self.report(error, address, handle, logger)
                    clients.send(.bluetoothGATTErrorResponse(address: address, handle: handle, error: error.code),
                                 to: client)
                }
            }
        default:
            clients.refuse(request, to: client)
        }
    }

    /// Pairing through the daemon's agent, which answers `esphome_proxy.passkeys`.
    mutating func pair(_ address: UInt64, for client: APIClientID, group: inout DiscardingTaskGroup) {
        let clients = self.clients, done = self.done
        guard let link = link(address, of: client) else {
            answeredNow(client)
            return clients.send(.bluetoothDevicePairingResponse(address: address, paired: false,
                                                                error: ProxyGATTError.unlikely), to: client)
        }
        group.addTask {
            defer { done(.answered(client)) }
            do throws(BlueZError) {
                try await link.pair(timeout: Self.pairTimeout)
                clients.send(.bluetoothDevicePairingResponse(address: address, paired: true, error: 0), to: client)
            } catch {
                clients.send(.bluetoothDevicePairingResponse(
                    address: address, paired: false, error: ProxyGATTError(error, writing: true).code), to: client)
            }
        }
    }

    mutating func write(_ address: UInt64, _ handle: UInt32, _ data: [UInt8], response: Bool,
                        _ client: APIClientID, group: inout DiscardingTaskGroup) {
        guard let link = link(address, of: client) else { return notConnected(address, handle, client) }
        let clients = self.clients, logger = self.logger, done = self.done
        group.addTask {
            defer { done(.answered(client)) }
            do throws(ProxyGATTError) {
                try await link.write(handle, data, response: response,
                                     deliver: Self.deliverer(clients, address, client))
                if response {
                    clients.send(.bluetoothGATTWriteResponse(address: address, handle: handle), to: client)
                }
            } catch {
                Self.report(error, address, handle, logger)
                clients.send(.bluetoothGATTErrorResponse(address: address, handle: handle, error: error.code),
                             to: client)
            }
        }
    }

    /// The link `client` holds to `address`, connected; nil otherwise.
    func link(_ address: UInt64, of client: APIClientID) -> ProxyLink? {
        guard let entry = table.entry(address), entry.client == client, entry.state == .connected else { return nil }
        return links[address]
    }

    /// Answers a request that found no link (counted in `inFlight` as it came, so uncounted here).
    mutating func notConnected(_ address: UInt64, _ handle: UInt32, _ client: APIClientID) {
        answeredNow(client)
        clients.send(.bluetoothGATTErrorResponse(address: address, handle: handle, error: ProxyGATTError.notConnected),
                     to: client)
    }

    /// Notifications' values, sent to the client as they arrive (on the D-Bus loop's thread, the server's own).
    static func deliverer(_ clients: ProxyClients, _ address: UInt64, _ client: APIClientID)
        -> @Sendable (UInt32, [UInt8]) -> Void {
        { handle, data in
            clients.send(.bluetoothGATTNotifyDataResponse(address: address, handle: handle, data: data), to: client)
        }
    }

    static func report(_ error: ProxyGATTError, _ address: UInt64, _ handle: UInt32, _ logger: Logger) {
        guard let message = error.message else { return }
        logger.info("proxy GATT request failed: \(message)",
                    metadata: ["address": "\(BluetoothAddress(rawValue: address))", "handle": "\(handle)"])
    }
}
