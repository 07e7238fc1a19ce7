import BlueZ
import Bluetooth
import BridgeFeatureHost
import BridgeSession
import ESPHomeAPI

/// One connection the proxy holds for a Home Assistant client: the device's GATT work as the client asks for it, by
/// the proxy's handles (`ProxyGATT`). An actor, so a device's requests run one at a time (BlueZ serialises GATT work
/// per device badly); the connect queues in the adapter's connect gate with the sessions' own, one attempt in flight
/// per adapter (docs/adapters.md).
actor ProxyLink {
    let address: BluetoothAddress
    private let access: PeripheralAccess
    /// The adapter (object path) to connect through.
    let adapterPath: String
    private var devicePath: String?
    private(set) var gatt: ProxyGATT?
    /// Notifying characteristics by the proxy's handle.
    private var subscriptions: [UInt32: any ValueSubscription] = [:]

    init(address: BluetoothAddress, adapter: String, access: PeripheralAccess) {
        self.address = address
        adapterPath = adapter
        self.access = access
    }

    /// Connects and resolves the device's services; returns the ATT MTU (23 when BlueZ does not say).
    func connect(timeout: Duration) async throws(BlueZError) -> Int {
        guard let device = await access.gatt.device(address: address, adapter: adapterPath) else {
            throw .deviceNotFound(address.description)
        }
        devicePath = device.path
        let key = "proxy \(address)"
        do {
            try await access.gate.acquire(key, lane: device.adapterPath)
        } catch {
            throw .cancelled
        }
        do throws(BlueZError) {
            try await access.gatt.connect(device: device.path, timeout: timeout)
        } catch {
            await access.gate.release(key)
            throw error
        }
        await access.gate.release(key)
        let tree = try await access.gatt.waitUntilServicesResolved(device: device.path, timeout: timeout)
        gatt = ProxyGATT(tree)
        let mtu = tree.services.lazy.flatMap(\.characteristics).compactMap(\.info.mtu).first
        return mtu ?? 23
    }

    func services() -> [APIMessage.GATTService] { gatt?.services ?? [] }

    func read(_ handle: UInt32) async throws(ProxyGATTError) -> [UInt8] {
        switch try attribute(handle) {
        case .characteristic(let path):
            do throws(BlueZError) { return try await access.gatt.read(characteristic: path) } catch {
                throw ProxyGATTError(error, writing: false)
            }
        case .descriptor(let path):
            do throws(BlueZError) { return try await access.gatt.read(descriptor: path) } catch {
                throw ProxyGATTError(error, writing: false)
            }
        case .cccd:
            let characteristic = gatt?.characteristicOfCCCD[handle] ?? 0
            return subscriptions[characteristic] == nil ? [0x00, 0x00] : [0x01, 0x00]
        }
    }

    /// `deliver` takes the values of a notification a CCCD write starts.
    func write(_ handle: UInt32, _ data: [UInt8], response: Bool,
               deliver: @escaping @Sendable (UInt32, [UInt8]) -> Void) async throws(ProxyGATTError) {
        switch try attribute(handle) {
        case .characteristic(let path):
            do throws(BlueZError) {
                try await access.gatt.write(characteristic: path, data, type: response ? .request : .command)
            } catch {
                throw ProxyGATTError(error, writing: true)
            }
        case .descriptor(let path):
            do throws(BlueZError) { try await access.gatt.write(descriptor: path, data) } catch {
                throw ProxyGATTError(error, writing: true)
            }
        case .cccd:
            // BlueZ refuses CCCD writes: 0100 (notify) and 0200 (indicate) start notifications, 0000 stops them.
            guard let characteristic = gatt?.characteristicOfCCCD[handle], data.count == 2, data[1] == 0,
                  data[0] <= 2 else { throw ProxyGATTError(code: ProxyGATTError.invalidValue) }
            try await notify(characteristic, enable: data[0] != 0, deliver: deliver)
        }
    }

    /// Starts or stops notifications of the characteristic at `handle`; its values go to `deliver` on whatever thread
    /// receives them (they must not block it).
    func notify(_ handle: UInt32, enable: Bool, deliver: @escaping @Sendable (UInt32, [UInt8]) -> Void)
        async throws(ProxyGATTError) {
        guard case .characteristic(let path) = try attribute(handle) else {
            throw ProxyGATTError(code: ProxyGATTError.invalidHandle)
        }
        guard enable else {
            await subscriptions.removeValue(forKey: handle)?.stop()
            return
        }
        guard subscriptions[handle] == nil else { return }
        do throws(BlueZError) {
            subscriptions[handle] = try await access.gatt.notifications(of: path, preferAcquire: true) { bytes in
                deliver(handle, Array(bytes))
            }
        } catch {
            throw ProxyGATTError(error, writing: true)
        }
    }

    /// Stops every notification and disconnects (errors are the link's end anyway).
    func disconnect() async {
        await dropSubscriptions()
        if let devicePath { try? await access.gatt.disconnect(device: devicePath, timeout: .seconds(10)) }
    }

    /// The link is gone (BlueZ said so): the subscriptions are over.
    func dropSubscriptions() async {
        let ending = subscriptions.values
        subscriptions = [:]
        for subscription in ending { await subscription.stop() }
    }

    func pair(timeout: Duration) async throws(BlueZError) {
        guard let devicePath else { throw .deviceNotFound(address.description) }
        try await access.gatt.pair(device: devicePath, timeout: timeout)
    }

    private func attribute(_ handle: UInt32) throws(ProxyGATTError) -> ProxyGATT.Attribute {
        guard let attribute = gatt?.attributes[handle] else { throw ProxyGATTError(code: ProxyGATTError.invalidHandle) }
        return attribute
    }
}

/// A GATT request's failure as the ATT error code Home Assistant's client reads (`BluetoothGATTErrorResponse`).
struct ProxyGATTError: Error, Equatable {
    static let invalidHandle: Int32 = 0x01
    static let readNotPermitted: Int32 = 0x02
    static let writeNotPermitted: Int32 = 0x03
    static let insufficientAuthentication: Int32 = 0x05
    static let requestNotSupported: Int32 = 0x06
    static let invalidValue: Int32 = 0x0D
    /// ESP-IDF's `ESP_GATT_NO_RESOURCES` and `ESP_GATT_NOT_CONNECTED`, what ESPHome answers in those cases.
    static let noResources: Int32 = 0x80
    static let notConnected: Int32 = 0x85
    static let unlikely: Int32 = 0x0E
    static let insufficientEncryption: Int32 = 0x0F

    let code: Int32
    /// BlueZ's own words, for the log when the code says little (0x0e).
    var message: String?

    init(code: Int32, message: String? = nil) {
        self.code = code
        self.message = message
    }

    /// BlueZ's "not permitted" is the ATT code of the operation refused; an ATT code BlueZ quotes
    /// ("… ATT error: 0x05") passes through; anything else is 0x0e with BlueZ's message kept.
    init(_ error: BlueZError, writing: Bool) {
        switch error {
        case .notPermitted: self.init(code: writing ? Self.writeNotPermitted : Self.readNotPermitted)
        case .notAuthorized, .notPaired, .authenticationFailed, .authenticationRejected:
            self.init(code: Self.insufficientAuthentication)
        case .notSupported: self.init(code: Self.requestNotSupported)
        case .invalidValueLength, .invalidArguments: self.init(code: Self.invalidValue)
        case .failed(let reason):
            if let code = Self.quotedATTCode(reason) {
                self.init(code: code)
            } else {
                self.init(code: Self.unlikely, message: reason)
            }
        default: self.init(code: Self.unlikely, message: "\(error)")
        }
    }

    /// The ATT code in BlueZ's "Operation failed with ATT error: 0x0f".
    static func quotedATTCode(_ text: String) -> Int32? {
        guard let range = text.firstRange(of: "ATT error: 0x") else { return nil }
        let digits = text[range.upperBound...].prefix { $0.isHexDigit }
        guard digits.count == 2 else { return nil }
        return Int32(digits, radix: 16)
    }
}
