import BridgeAdapters
import BridgeModel
import Config

/// What the bridge knows, as one value: every device with its config, link, adapter, owner and latest sighting,
/// the adapters, and the bridge's own links. The core keeps it current (`StateStore`) as the facts arrive; readers
/// take a copy and never wait for the core's loop (docs/dev/ARCHITECTURE.md, "The read model").
public struct BridgeState: Sendable {
    package init() {}

    public struct Device: Sendable, Equatable {
        public package(set) var config: DeviceConfig
        /// `connecting` until its link first came up or failed; `offline` once it went down or failed after that.
        public package(set) var link = DeviceLinkState.connecting
        public var online: Bool { link == .online }
        /// The adapter it is placed on (nil: none yet, or a passive device, which every adapter hears).
        public package(set) var adapter: String?
        /// False only in a fleet, for a device another bridge owns (docs/fleet.md).
        public package(set) var owned = true
        /// Fleet: its values and commands wait while this bridge confirms it still owns it.
        public package(set) var held = false
        public package(set) var rssi: Int?
        /// When it was last heard: its link came up or went down, or a report of its signal.
        public package(set) var lastSeen: ContinuousClock.Instant?
        public package(set) var identity: DeviceIdentity?

        init(config: DeviceConfig) {
            self.config = config
        }
    }

    /// Counts changes: a reader that saw this version has seen everything up to it.
    public package(set) var version: UInt64 = 0
    /// The config's generation (`BridgeCore.running`).
    public package(set) var generation: UInt64 = 0
    /// In config order.
    public package(set) var devices: [Device] = []
    public package(set) var adapters: [AdapterStatus] = []
    /// Whether the core has placed the devices once: until then `adapters` is empty because nothing was said yet,
    /// not because there are none (the bridge API then names BlueZ's adapters, docs/bridge-api.md).
    public package(set) var adaptersReported = false
    public package(set) var isFleet = false
    /// The fleet's view the devices' `owned` and `held` were taken from.
    package private(set) var fleetView = FleetView(fleet: false)
    public package(set) var brokerConnected = false
    public package(set) var bluezAvailable = true

    public func device(named name: String) -> Device? { devices.first { $0.config.name == name } }

    /// A new config: devices that stay keep what is known of them (a changed device starts afresh).
    package mutating func install(_ config: BridgeConfig, generation: UInt64) {
        let known = Dictionary(devices.map { ($0.config.name, $0) }, uniquingKeysWith: { a, _ in a })
        devices = config.devices.map { device in
            guard let kept = known[device.name], kept.config == device else { return Device(config: device) }
            return kept
        }
        self.generation = generation
        fleet(fleetView)
    }

    /// A device's availability: online, or offline once it was online (before that it is still connecting).
    package mutating func setOnline(_ name: String, _ online: Bool, at now: ContinuousClock.Instant = .now) {
        updateDevice(name) { device in
            device.link = online ? .online : (device.link == .online ? .offline : device.link)
            device.lastSeen = now
        }
    }

    package mutating func updateDevice(_ name: String, _ change: (inout Device) -> Void) {
        guard let index = devices.firstIndex(where: { $0.config.name == name }) else { return }
        change(&devices[index])
    }

    package mutating func fleet(_ view: FleetView) {
        fleetView = view
        isFleet = view.isFleet
        for index in devices.indices {
            let name = devices[index].config.name
            devices[index].owned = view.owns(name)
            devices[index].held = view.isHolding(name)
        }
    }

    package mutating func placed(_ statuses: [AdapterStatus], placement: [String: String]) {
        adapters = statuses
        adaptersReported = true
        for index in devices.indices { devices[index].adapter = placement[devices[index].config.name] }
    }
}
