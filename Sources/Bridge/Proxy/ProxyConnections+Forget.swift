import BlueZ
import Bluetooth
import ESPHomeAPI
import ESPHomeServer

extension ProxyConnections {
    /// Unpair (the bond and the cache) or clear the cache (the cache only: refused for a bonded device, whose bond
    /// BlueZ keeps with its cache): both through `RemoveDevice`, after the link is closed. The answer comes before the
    /// link's end is reported, as ESPHome orders them.
    mutating func forget(_ address: UInt64, unpair: Bool, for client: APIClientID, adapter: String?,
                         group: inout DiscardingTaskGroup) {
        let device = BluetoothAddress(rawValue: address)
        if configured.contains(address) {
            answeredNow(client)
            return answerForget(address, unpair: unpair, success: false, error: ProxyGATTError.writeNotPermitted,
                                client: client)
        }
        let link = table.entry(address)?.client == client ? links[address] : nil
        let access = self.access, clients = self.clients, done = self.done
        let bonded = { () async -> Bool in
            guard let info = await access.gatt.device(address: device, adapter: adapter) else { return false }
            return info.paired || info.bonded
        }
        if link != nil { table.disconnecting(address, forgetting: true) }
        group.addTask {
            defer { done(.answered(client)) }
            if !unpair, await bonded() {
                if link != nil { done(.forgotten(address, closed: false)) }
                return Self.answerForget(clients, address, unpair: false, success: false,
                                         error: ProxyGATTError.requestNotSupported, client: client)
            }
            await link?.disconnect()
            var result: (success: Bool, error: Int32) = (!unpair, 0)
            if let info = await access.gatt.device(address: device, adapter: adapter) {
                do throws(BlueZError) {
                    try await access.gatt.removeDevice(info.path)
                    result = (true, 0)
                } catch {
                    result = (false, ProxyGATTError(error, writing: true).code)
                }
            }
            Self.answerForget(clients, address, unpair: unpair, success: result.success, error: result.error,
                              client: client)
            if link != nil { done(.forgotten(address, closed: true)) }
        }
    }

    func answerForget(_ address: UInt64, unpair: Bool, success: Bool, error: Int32, client: APIClientID) {
        Self.answerForget(clients, address, unpair: unpair, success: success, error: error, client: client)
    }

    static func answerForget(_ clients: ProxyClients, _ address: UInt64, unpair: Bool, success: Bool,
                                     error: Int32, client: APIClientID) {
        clients.send(unpair
                     ? .bluetoothDeviceUnpairingResponse(address: address, success: success, error: error)
                     : .bluetoothDeviceClearCacheResponse(address: address, success: success, error: error),
                     to: client)
    }
}
