import BlueZ
import Bluetooth
import Codecs
import Config
import DBus
import Logging
import MQTT
import Synchronization
import Testing
@testable import BridgeCoreLayer
@testable import BridgeFeatureHost
@testable import BridgeSession

/// BlueZ for driving the real `BridgeCore` in process (`BluetoothPort`): adapters a test can add, power and break,
/// and any number of devices, each with a notify characteristic (`aaa1`) and a read/write one (`aaa2`) under its own
/// object path, so several sessions run side by side as on the bench.
final class FakeBlueZ: BluetoothPort, Sendable {
    struct State {
        var adapters: [AdapterInfo] = [FakeGATT.adapter()]
        var available = true
        /// Connects through these adapters (paths) fail as through a wedged radio: "not ready", the kind of failure
        /// that counts against an adapter's health (`ReconnectPolicy.adapterFailures`).
        var failingAdapters: Set<String> = []
        var connects: [String] = []             // device paths, in order
        var writes: [String: [[UInt8]]] = [:]   // device path → values written
        var sinks: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = [:]   // characteristic path
        var ends: [String: AsyncStream<[UInt8]>.Continuation] = [:]
        var powerCycles: [String] = []
    }
    let state = Mutex(State())

    static func devicePath(_ address: BluetoothAddress, adapter: String = FakeGATT.adapterPath) -> String {
        adapter + "/dev_" + address.description.split(separator: ":").joined(separator: "_")
    }

    func adapters() async -> [AdapterInfo] { state.withLock { $0.available ? $0.adapters : [] } }
    func devices(adapter: String?) async -> [DeviceInfo] { [] }
    var isAvailable: Bool { get async { state.withLock { $0.available } } }

    func setPowered(_ powered: Bool, adapter path: String, timeout: Duration) async throws(BlueZError) {
        state.withLock { $0.powerCycles.append("\(path) \(powered ? "on" : "off")") }
    }

    func device(address: BluetoothAddress, adapter: String?) async -> DeviceInfo? {
        guard let adapter = adapter ?? state.withLock({ $0.adapters.first?.path }) else { return nil }
        return DeviceInfo(path: Self.devicePath(address, adapter: adapter),
                          properties: ["Address": .string(address.description), "Adapter": .objectPath(adapter)])
    }

    func connect(device path: String, timeout: Duration) async throws(BlueZError) {
        let fails = state.withLock { s -> Bool in
            s.connects.append(path)
            return !s.available || s.failingAdapters.contains(AdapterMachine.adapterPath(ofDevice: path))
        }
        if fails { throw .notReady }
    }

    func disconnect(device path: String, timeout: Duration) async throws(BlueZError) {}
    func removeDevice(_ path: String) async throws(BlueZError) {}
    func pair(device path: String, timeout: Duration) async throws(BlueZError) {}

    func waitUntilServicesResolved(device path: String, timeout: Duration) async throws(BlueZError) -> GattTree {
        let service = GattServiceInfo(path: path + "/service0001",
                                      properties: ["UUID": .string("0000aaaa-0000-1000-8000-00805f9b34fb")])!
        let notify = GattCharacteristicInfo(path: path + "/service0001/char0002", properties: [
            "UUID": .string("0000aaa1-0000-1000-8000-00805f9b34fb"), "Flags": .array("s", [.string("notify")])])!
        let readWrite = GattCharacteristicInfo(path: path + "/service0001/char0004", properties: [
            "UUID": .string("0000aaa2-0000-1000-8000-00805f9b34fb"),
            "Flags": .array("s", [.string("read"), .string("write")]), "MTU": .uint16(23)])!
        return GattTree(services: [service], characteristics: [notify, readWrite], descriptors: [])
    }

    func read(characteristic path: String) async throws(BlueZError) -> [UInt8] { [0] }

    func read(descriptor path: String) async throws(BlueZError) -> [UInt8] { throw .notSupported }

    func write(descriptor path: String, _ value: [UInt8]) async throws(BlueZError) { throw .notSupported }

    func gattTree(device path: String) async -> GattTree {
        (try? await waitUntilServicesResolved(device: path, timeout: .seconds(1))) ?? GattTree(services: [])
    }

    func write(characteristic path: String, _ value: [UInt8], type: GattWriteType) async throws(BlueZError) {
        let device = String(path.dropLast("/service0001/char0004".count))
        state.withLock { $0.writes[device, default: []].append(value) }
    }

    func notifications(of path: String, preferAcquire: Bool,
                       onValue: @escaping @Sendable (UnsafeRawBufferPointer) -> Void) async throws(BlueZError) -> any ValueSubscription {
        let (stream, end) = AsyncStream.makeStream(of: [UInt8].self)
        state.withLock { s in
            s.sinks[path] = onValue
            s.ends[path] = end
        }
        return FakeSubscription(ended: stream, end: end)
    }

    // MARK: - What a test does and reads

    /// A notification from the device at `address` (on whichever adapter it is connected through).
    func notify(_ address: BluetoothAddress, _ value: [UInt8]) {
        let suffix = Self.devicePath(address, adapter: "") + "/service0001/char0002"
        let sinks = state.withLock { $0.sinks.filter { $0.key.hasSuffix(suffix) }.map(\.value) }
        for sink in sinks { value.withUnsafeBytes { sink($0) } }
    }

    func isSubscribed(_ address: BluetoothAddress, adapter: String = FakeGATT.adapterPath) -> Bool {
        state.withLock { $0.sinks[Self.devicePath(address, adapter: adapter) + "/service0001/char0002"] != nil }
    }

    func writes(_ address: BluetoothAddress, adapter: String = FakeGATT.adapterPath) -> [[UInt8]] {
        state.withLock { $0.writes[Self.devicePath(address, adapter: adapter)] ?? [] }
    }

    /// bluetoothd leaves the bus: every link and subscription ends, as BlueZ's do.
    func vanish() {
        let ends = state.withLock { s in
            s.available = false
            s.sinks = [:]
            defer { s.ends = [:] }
            return Array(s.ends.values)
        }
        for end in ends { end.finish() }
    }

    func appear() { state.withLock { $0.available = true } }
}

/// Discovery as the core drives it, recorded; every start works.
final class RecordingDiscovery: DiscoveryPort, Sendable {
    struct State {
        var wanted: [String: Set<String>] = [:]     // adapter → interests
        var resets = 0
        var restarts: [String] = []
        var repeats = false
    }
    let state = Mutex(State())
    let outcomes: AsyncStream<(adapter: String, error: String?)>
    let outcome: AsyncStream<(adapter: String, error: String?)>.Continuation

    init() {
        (outcomes, outcome) = AsyncStream.makeStream(of: (adapter: String, error: String?).self)
    }

    func want(_ device: String, adapter: String) { state.withLock { _ = $0.wanted[adapter, default: []].insert(device) } }
    func release(_ device: String, adapter: String) { state.withLock { _ = $0.wanted[adapter]?.remove(device) } }
    func reportRepeats(_ on: Bool) { state.withLock { $0.repeats = on } }
    func reset() { state.withLock { $0.resets += 1 } }

    func restart(adapter: String) async -> String? {
        state.withLock { $0.restarts.append(adapter) }
        return nil
    }
}

/// A feature that records every core event and lends the test its context (to ask for holds and ownership as the
/// fleet feature does).
final class ProbeFeature: BridgeFeature, Sendable {
    let events = Mutex<[CoreEvent]>([])
    let context = Mutex<FeatureContext?>(nil)
    /// As the Bluetooth proxy's feature would: the core then makes `CoreEvent.advertisement`.
    let rawAdvertisements: Bool
    var wantsBroadcasts: Bool { true }
    var wantsRawAdvertisements: Bool { rawAdvertisements }

    init(rawAdvertisements: Bool = false) {
        self.rawAdvertisements = rawAdvertisements
    }

    func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        self.context.withLock { $0 = context }
        for await event in events { self.events.withLock { $0.append(event) } }
    }

    func saw(_ matches: (CoreEvent) -> Bool) -> Bool { events.withLock { $0.contains(where: matches) } }

    func online(_ name: String) -> Bool? {
        events.withLock { events in
            events.reversed().lazy.compactMap { event -> Bool? in
                if case .availability(let device, let online) = event, device.name == name { online } else { nil }
            }.first
        }
    }
}

/// The real core on the fakes: `body` runs while it does, then the core shuts down and `run()` has returned.
struct CoreRig {
    let core: BridgeCore
    let bluez: FakeBlueZ
    let link = RecordingLink()
    let discovery = RecordingDiscovery()
    let probe: ProbeFeature

    init(_ config: BridgeConfig, bluez: FakeBlueZ = FakeBlueZ(), wedgeWindow: Duration = .seconds(60),
         rawAdvertisements: Bool = false) {
        self.bluez = bluez
        probe = ProbeFeature(rawAdvertisements: rawAdvertisements)
        core = BridgeCore(config: config, bluez: bluez, link: link, discovery: discovery, features: [probe],
                          logger: Logger(label: "test"), wedgeWindow: wedgeWindow)
    }

    func run(_ body: (CoreRig) async throws -> Void) async throws {
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await core.run() }
            var failure: (any Error)?
            do { try await body(self) } catch { failure = error }
            await core.shutdown()
            if let failure { throw failure }
        }
    }

    /// A command as the broker would deliver it.
    func command(_ topic: String, _ payload: String) {
        core.handle(MQTTMessage(topic: topic, string: payload, qos: .atLeastOnce, retain: false))
    }

    func published(_ topic: String) -> [String] { link.payloads(topic) }
}

enum CoreFixtures {
    static func address(_ n: Int) -> BluetoothAddress { BluetoothAddress("C0:FF:EE:00:01:\(n < 10 ? "0" : "")\(n)")! }

    /// A connected device with a notify channel `n` and a writable `led`.
    static func device(_ name: String, _ n: Int, source: DeviceSource.Kind = .config) throws -> DeviceConfig {
        DeviceConfig(name: name, address: address(n), channels: [
            ChannelConfig(name: "n", characteristic: BluetoothUUID("aaa1")!, codec: try Codec(.hex), mode: .notify),
            ChannelConfig(name: "led", characteristic: BluetoothUUID("aaa2")!, codec: try Codec(.hex), mode: .read,
                          interval: .seconds(3600), writable: true),
        ], source: DeviceSource(kind: source, file: source == .api ? "devices.d/\(name).yaml" : "test.yaml", line: 1))
    }
}
