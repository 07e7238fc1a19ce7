import BlueZ
import Bluetooth
import BridgeAdverts
import BridgeModel
import Config

/// BlueZ's facts as the core's machine takes them (`AdapterMachine`): bluetoothd leaving and returning, adapters changing (read again, one
/// read at a time), and devices seen, changed or dropped: a session hears its own device's; a sighting is proof the
/// adapter's radio receives; what an adapter heard goes to the adverts feature, and a passive device's RSSI is the
/// fleet's sighting (docs/adverts.md, docs/fleet.md).
extension AdapterMachine {
    mutating func handle(_ event: BlueZEvent, _ world: World, now: ContinuousClock.Instant, _ out: inout [Action]) {
        switch event {
        case .bluezVanished:
            out.append(.log(.warning, "bluetoothd left the bus; waiting for it to return"))
            bluezAvailable = false
            placement.bluezGone()
            adaptersKnown = []
            out += [.bluezAvailable(false)]
            tell(placement.adapterList(), world, &out)
        case .bluezAppeared:
            out.append(.log(.notice, "bluetoothd is on the bus; resyncing"))
            bluezAvailable = true
            out += [.bluezAvailable(true)]
            readAdapters(resetDiscovery: true, &out)
        case .adapterAdded, .adapterRemoved, .adapterChanged:
            readAdapters(&out)
        case .deviceAdded(let info):
            out.append(.sessionDevice(info.address, event))
            sighted(info, world, now: now, &out)
            advertised(info, changed: nil, world, &out)
            heard(info, changed: nil, world, now: now, &out)
        case .deviceChanged(let info, let changed):
            out.append(.sessionDevice(info.address, event))
            if changed.contains("RSSI") { sighted(info, world, now: now, &out) }
            if world.rawAdvertisements, changed.contains("Connected") {
                out.append(.link(address: info.address, adapter: info.adapterPath, connected: info.connected))
            }
            advertised(info, changed: changed, world, &out)
            heard(info, changed: changed, world, now: now, &out)
        case .deviceRemoved(let path, let address):
            out.append(.sessionDevice(address, event))
            let adapter = Self.adapterPath(ofDevice: path)
            if world.rawAdvertisements {
                out += [.link(address: address, adapter: adapter, connected: false), .unheard(address)]
            }
            adapterSet.lostSight(address, adapter: Self.name(ofAdapter: adapter))
            if world.fleet.isFleet, adapterSet.uses(adapterPath: adapter), let device = Self.passiveDevice(address, world),
               let tell = passiveSightings.lost(device.name, adapter: adapter, now: now) {
                out.append(.sighting(device, tell.rssi))
            }
        case .deviceDisconnected, .gattAdded, .gattRemoved:
            break
        }
    }

    /// A device object under some adapter appeared or changed: that adapter sees the device. Also proof that the
    /// adapter's radio receives: it counts as a working operation for its health.
    mutating func sighted(_ info: DeviceInfo, _ world: World, now: ContinuousClock.Instant, _ out: inout [Action]) {
        let adapter = Self.name(ofAdapter: info.adapterPath)
        adapterSet.saw(info.address, adapter: adapter, rssi: info.rssi, at: now)
        feed(adapter, .operationSucceeded, world, now: now, &out)
        guard let device = world.config.devices.first(where: { $0.address == info.address }),
              !adapterSet.online.contains(device.name), device.adapter == nil else { return }
        place(world, &out)
    }

    /// Only the adapters the config uses count: with another adapter's reports, every bridge of a fleet on one host
    /// would claim with the best RSSI of them all.
    private mutating func heard(_ info: DeviceInfo, changed: Set<String>?, _ world: World,
                                now: ContinuousClock.Instant, _ out: inout [Action]) {
        guard world.config.adverts.enabled, adapterSet.uses(adapterPath: info.adapterPath) else { return }
        if let changed, changed.isDisjoint(with: Self.broadcastProperties) { return }
        if let broadcast = HeardBroadcast(info) { out.append(.broadcast(broadcast)) }
        guard let device = Self.passiveDevice(info.address, world) else { return }
        out.append(.passiveHeard(device: device.name, rssi: info.rssi))
        if world.fleet.isFleet, let rssi = info.rssi,
           let tell = passiveSightings.report(device.name, adapter: info.adapterPath, rssi: rssi, now: now) {
            out.append(.sighting(device, tell.rssi))
        }
    }

    static let broadcastProperties: Set<String> = ["ServiceData", "ManufacturerData", "RSSI"]

    /// The Bluetooth proxy's raw advertisements: any device an adapter of the config heard with an RSSI, whatever it
    /// carries, when a report changed its RSSI or what the advertisement is rebuilt from (`AdvertisementBytes`).
    func advertised(_ info: DeviceInfo, changed: Set<String>?, _ world: World, _ out: inout [Action]) {
        guard world.rawAdvertisements, info.rssi != nil, adapterSet.uses(adapterPath: info.adapterPath) else { return }
        if let changed, changed.isDisjoint(with: Self.advertisementProperties) { return }
        if let advertisement = HeardAdvertisement(info) { out.append(.advertisement(advertisement)) }
    }

    static let advertisementProperties: Set<String> = ["RSSI", "ServiceData", "ManufacturerData", "AdvertisingData",
                                                       "AdvertisingFlags", "UUIDs", "Name", "TxPower"]

    private static func passiveDevice(_ address: BluetoothAddress, _ world: World) -> DeviceConfig? {
        world.config.devices.first { $0.address == address && $0.isPassive }
    }
}

extension PassiveSightings.Tell {
    /// As the fleet's sighting says it: nil for unseen.
    var rssi: Int? {
        switch self {
        case .rssi(let rssi): rssi
        case .unseen: nil
        }
    }
}
