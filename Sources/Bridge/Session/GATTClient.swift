import BlueZ
import Bluetooth

/// What a device session needs from BlueZ. `BlueZClient` is the real one; tests drive sessions in process with a
/// fake of this protocol (ours, not BlueZ's), and the bench covers the real thing.
public protocol GATTClient: Sendable {
    func device(address: BluetoothAddress, adapter: String?) async -> DeviceInfo?
    func connect(device path: String, timeout: Duration) async throws(BlueZError)
    func disconnect(device path: String, timeout: Duration) async throws(BlueZError)
    func removeDevice(_ path: String) async throws(BlueZError)
    /// `Device1.Pair` then `Trusted = true` (docs/pairing.md).
    func pair(device path: String, timeout: Duration) async throws(BlueZError)
    func waitUntilServicesResolved(device path: String, timeout: Duration) async throws(BlueZError) -> GattTree
    func read(characteristic path: String) async throws(BlueZError) -> [UInt8]
    /// Descriptors, for the Bluetooth proxy (Home Assistant reads and writes them by handle).
    func read(descriptor path: String) async throws(BlueZError) -> [UInt8]
    func write(descriptor path: String, _ value: [UInt8]) async throws(BlueZError)
    /// The GATT objects BlueZ holds for the device now (after `waitUntilServicesResolved`).
    func gattTree(device path: String) async -> GattTree
    func write(characteristic path: String, _ value: [UInt8], type: GattWriteType) async throws(BlueZError)
    /// `onValue` runs on whatever thread received the value (the D-Bus loop thread for BlueZ) and must not block; the
    /// bytes are lent, valid only during the call.
    /// `preferAcquire`: try `AcquireNotify` first (values on a socket), else go straight to `StartNotify`.
    func notifications(of path: String, preferAcquire: Bool,
                       onValue: @escaping @Sendable (UnsafeRawBufferPointer) -> Void) async throws(BlueZError) -> any ValueSubscription
}

/// A notify subscription as the session sees it: how values arrive, and its end.
public protocol ValueSubscription: Sendable {
    var deliveryName: String { get }
    /// The negotiated MTU when known (text writes are chunked to it).
    var mtu: Int? { get }
    /// Finishes when the subscription ends (values go to `onValue`).
    var ended: AsyncStream<[UInt8]> { get }
    func stop() async
}

extension NotificationSubscription: ValueSubscription {
    public var deliveryName: String { delivery.rawValue }
    public var ended: AsyncStream<[UInt8]> { values }
}

extension BlueZClient: GATTClient {
    public func read(characteristic path: String) async throws(BlueZError) -> [UInt8] {
        try await readValue(characteristic: path, offset: 0)
    }

    public func write(characteristic path: String, _ value: [UInt8], type: GattWriteType) async throws(BlueZError) {
        try await writeValue(characteristic: path, value, type: type, offset: 0)
    }

    public func read(descriptor path: String) async throws(BlueZError) -> [UInt8] {
        try await readDescriptor(path)
    }

    public func write(descriptor path: String, _ value: [UInt8]) async throws(BlueZError) {
        try await writeDescriptor(path, value)
    }

    public func notifications(of path: String, preferAcquire: Bool,
                              onValue: @escaping @Sendable (UnsafeRawBufferPointer) -> Void) async throws(BlueZError) -> any ValueSubscription {
        try await subscribe(characteristic: path, preferAcquire: preferAcquire, onValue: onValue)
    }
}
