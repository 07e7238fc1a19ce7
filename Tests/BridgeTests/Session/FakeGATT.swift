import BlueZ
import Bluetooth
import Codecs
import Config
import DBus
import Logging
import Testing
import Synchronization
@testable import BridgeModel
@testable import BridgePairing
@testable import BridgeSession

/// A fake of our own `GATTClient` protocol: one device with a notify characteristic (`n`) and a read/write one
/// (`rw`), whose link a test can drop, whose connects it can make fail, and whose calls it can inspect.
final class FakeGATT: GATTClient, Sendable {
    static let adapterPath = "/org/bluez/hci0"
    static let address = BluetoothAddress("C0:FF:EE:00:00:09")!
    static var devicePath: String { ObjectPath.device(adapter: adapterPath, address: address) }
    static var notifyPath: String { devicePath + "/service0001/char0002" }
    static var readWritePath: String { devicePath + "/service0001/char0004" }

    struct State {
        var connects = 0
        var pairs = 0
        /// The object path BlueZ reports for the address (nil: the one the address gives), and the paths that
        /// Pair and Connect were called on.
        var reportedPath: String?
        var calledPaths: [String] = []
        /// Every read fails with this (nil: reads succeed).
        var readError: BlueZError?
        /// Every subscription fails with this (nil: subscriptions succeed).
        var subscribeError: BlueZError?
        /// What each subscription asked for: AcquireNotify first (true) or StartNotify only.
        var preferAcquire: [Bool] = []
        var disconnects = 0
        var failConnects = 0
        var writes: [[UInt8]] = []
        var reads = 0
        var value: [UInt8] = [0]
        /// Writes fail with notConnected after this many succeed (nil: never).
        var writesBeforeLinkLoss: Int?
        /// Delays of the next device lookups, in order (BlueZ answering late).
        var lookupDelays: [Duration] = []
        var lookupsDone = 0
        var sinks: [@Sendable (UnsafeRawBufferPointer) -> Void] = []
        var ends: [AsyncStream<[UInt8]>.Continuation] = []
    }
    let state = Mutex(State())

    func device(address: BluetoothAddress, adapter: String?) async -> DeviceInfo? {
        let delay = state.withLock { $0.lookupDelays.isEmpty ? nil : $0.lookupDelays.removeFirst() }
        if let delay { try? await Task.sleep(for: delay) }
        defer { state.withLock { $0.lookupsDone += 1 } }
        let path = state.withLock { $0.reportedPath } ?? Self.devicePath
        return DeviceInfo(path: path, properties: ["Address": .string(address.description),
                                                       "Adapter": .objectPath(Self.adapterPath)])
    }

    func connect(device path: String, timeout: Duration) async throws(BlueZError) {
        let fail = state.withLock { s -> Bool in
            s.connects += 1
            s.calledPaths.append(path)
            guard s.failConnects > 0 else { return false }
            s.failConnects -= 1
            return true
        }
        if fail { throw .failed(reason: "br-connection-page-timeout") }
    }

    func disconnect(device path: String, timeout: Duration) async throws(BlueZError) {
        state.withLock { $0.disconnects += 1 }
    }

    func removeDevice(_ path: String) async throws(BlueZError) {}

    func pair(device path: String, timeout: Duration) async throws(BlueZError) {
        state.withLock {
            $0.pairs += 1
            $0.calledPaths.append(path)
        }
    }

    func waitUntilServicesResolved(device path: String, timeout: Duration) async throws(BlueZError) -> GattTree {
        let service = GattServiceInfo(path: Self.devicePath + "/service0001",
                                      properties: ["UUID": .string("0000aaaa-0000-1000-8000-00805f9b34fb")])!
        let notify = GattCharacteristicInfo(path: Self.notifyPath, properties: [
            "UUID": .string("0000aaa1-0000-1000-8000-00805f9b34fb"), "Flags": .array("s", [.string("notify")])])!
        let readWrite = GattCharacteristicInfo(path: Self.readWritePath, properties: [
            "UUID": .string("0000aaa2-0000-1000-8000-00805f9b34fb"),
            "Flags": .array("s", [.string("read"), .string("write")]), "MTU": .uint16(23)])!
        return GattTree(services: [service], characteristics: [notify, readWrite], descriptors: [])
    }

    func read(descriptor path: String) async throws(BlueZError) -> [UInt8] { throw .notSupported }

    func write(descriptor path: String, _ value: [UInt8]) async throws(BlueZError) { throw .notSupported }

    func gattTree(device path: String) async -> GattTree {
        (try? await waitUntilServicesResolved(device: path, timeout: .seconds(1))) ?? GattTree(services: [])
    }

    func read(characteristic path: String) async throws(BlueZError) -> [UInt8] {
        let result = state.withLock { s -> Result<[UInt8], BlueZError> in
            s.reads += 1
            return s.readError.map { .failure($0) } ?? .success(s.value)
        }
        return try result.get()
    }

    func write(characteristic path: String, _ value: [UInt8], type: GattWriteType) async throws(BlueZError) {
        let ok = state.withLock { s -> Bool in
            if let left = s.writesBeforeLinkLoss {
                guard left > 0 else { return false }
                s.writesBeforeLinkLoss = left - 1
            }
            s.writes.append(value)
            s.value = value
            return true
        }
        if !ok { throw .notConnected }
    }

    func notifications(of path: String, preferAcquire: Bool,
                       onValue: @escaping @Sendable (UnsafeRawBufferPointer) -> Void) async throws(BlueZError) -> any ValueSubscription {
        state.withLock { $0.preferAcquire.append(preferAcquire) }
        if let error = state.withLock({ $0.subscribeError }) { throw error }
        let (stream, end) = AsyncStream.makeStream(of: [UInt8].self)
        state.withLock { s in
            s.sinks.append(onValue)
            s.ends.append(end)
        }
        return FakeSubscription(ended: stream, end: end)
    }

    /// A notification from the peripheral.
    func notify(_ value: [UInt8]) {
        for sink in state.withLock({ $0.sinks }) { value.withUnsafeBytes { sink($0) } }
    }

    /// The link drops: subscriptions end (as BlueZ's do).
    func dropLink() {
        let ends = state.withLock { s in
            defer { s.ends = []; s.sinks = [] }
            return s.ends
        }
        for end in ends { end.finish() }
    }
}

struct FakeSubscription: ValueSubscription {
    let ended: AsyncStream<[UInt8]>
    let end: AsyncStream<[UInt8]>.Continuation
    var deliveryName: String { "fake" }
    var mtu: Int? { nil }
    func stop() async { end.finish() }
}

/// Records what the session publishes and reports.
final class SessionRecorder: MessagePublisher, DiscoveryControl, Sendable {
    let published = Mutex<[(topic: String, payload: String)]>([])
    let reports = Mutex<[DeviceReport]>([])

    func publish(_ topic: String, _ payload: String, qos: Int, retain: Bool) {
        published.withLock { $0.append((topic, payload)) }
    }

    func want(_ device: String, adapter: String) {}
    func release(_ device: String, adapter: String) {}

    func record(_ report: DeviceReport) { reports.withLock { $0.append(report) } }

    var availability: [Bool] {
        reports.withLock { $0.compactMap { if case .availability(let online) = $0 { online } else { nil } } }
    }

    var rejections: [CommandRejection] {
        reports.withLock { $0.compactMap { if case .rejected(let r) = $0 { r } else { nil } } }
    }

    func payloads(on topic: String) -> [String] {
        published.withLock { $0.filter { $0.topic == topic }.map(\.payload) }
    }
}

/// Waits for `condition` with a deadline (no fixed sleeps: it re-checks as soon as the session had a chance to run).
/// The deadline only bounds a failure: `swift test` runs suites in parallel on a two-core machine, where other
/// suites' brokers and buses can keep the session from running for seconds.
func eventually(_ what: String, within limit: Duration = .seconds(30), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting for \(what)")
            throw CancellationError()
        }
        try await Task.sleep(for: .milliseconds(2))
    }
}

extension FakeGATT {
    /// A device with one notify channel, the smallest a session runs.
    static func oneChannelDevice() throws -> DeviceConfig {
        DeviceConfig(name: "fake", address: address, channels: [
            ChannelConfig(name: "n", characteristic: BluetoothUUID("aaa1")!, codec: try Codec(.hex), mode: .notify),
        ])
    }

    /// The powered adapter the fake's device lives on (or another one by path).
    static func adapter(path: String = adapterPath, powered: Bool = true) -> AdapterInfo {
        AdapterInfo(path: path, properties: ["Powered": .bool(powered), "Address": .string("00:00:00:00:00:01")])
    }

    /// A session on this fake whose values, discovery and reports go to `recorder`, with the fast test policy and no
    /// jitter; `onReport` also sees each report.
    func session(_ config: DeviceConfig, recorder: SessionRecorder, adapter: AdapterInfo? = FakeGATT.adapter(),
                 owned: Bool = true, agentReadiness: AgentReadiness? = nil,
                 onReport: @escaping @Sendable (DeviceReport) -> Void = { _ in }) -> DeviceSession {
        let environment = SessionEnvironment(
            gatt: self, gate: ConnectGate<String>(), discovery: recorder, publisher: recorder,
            topics: BridgeTopics(base: "b"), logger: Logger(label: "test"), policy: DeviceSessionTests.fastPolicy,
            jitter: { 0 },
            agentReady: { keyboard, limit in await agentReadiness?.wait(needsKeyboard: keyboard, within: limit) ?? true },
            report: { recorder.record($0); onReport($0) })
        return DeviceSession(config: config, environment: environment, adapter: adapter, bluezAvailable: true,
                             owned: owned)
    }
}
