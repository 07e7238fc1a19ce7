import Adverts
import Bluetooth
import Codecs
import Config
@testable import BridgeAdverts
@testable import BridgeModel

/// Broadcasters and configs shared by the adverts tests.
enum AdvertFixtures {
    static let thermo = BluetoothAddress("A4:C1:38:1A:2B:3C")!
    static let key = try! Hex.decode("231d39c1d7cc1ab1aee224cd096db932")
    static let t0 = ContinuousClock.now

    static func settings(auto: [AdvertFormat] = [], limit: Int = 100, timeout: Duration = .seconds(900)) -> AdvertSettings {
        AdvertSettings(enabled: true, auto: auto, autoLimit: limit, timeout: timeout)
    }

    static func passive(_ name: String = "thermo", _ address: BluetoothAddress = thermo,
                        format: AdvertSelection = .format(.bthome), bindkey: String? = nil) -> DeviceConfig {
        DeviceConfig(name: name, address: address, channels: [], advert: format,
                     bindkey: bindkey.flatMap { Bindkey(hex: $0) })
    }

    /// Unencrypted BTHome v2 service data: the device-information byte, then the objects.
    static func bthome(_ objects: String) -> [UInt8] { [0x40] + (try! Hex.decode(objects)) }

    static func heard(_ serviceData: [UInt8], from address: BluetoothAddress = thermo, adapter: String = "/org/bluez/hci0",
                      rssi: Int? = -60, uuid: UInt16 = BTHomeDecoder.uuid) -> HeardBroadcast {
        HeardBroadcast(address: address, adapter: adapter, rssi: rssi, name: nil,
                       broadcast: Broadcast(address: address, serviceData: [.init(uuid: BluetoothUUID(uuid),
                                                                                 bytes: serviceData)]))
    }

    /// Packet id `id`, temperature in hundredths of a degree, humidity 50 %.
    static func reading(id: UInt8, centidegrees: Int16 = 2150) -> [UInt8] {
        let t = UInt16(bitPattern: centidegrees)
        return [0x40, 0x00, id, 0x02, UInt8(t & 0xFF), UInt8(t >> 8), 0x03, 0x88, 0x13]
    }

    /// A tracker configured with `devices`.
    static func tracker(_ devices: [DeviceConfig], settings: AdvertSettings = settings(), fleet: Bool = false) -> AdvertTracker {
        var tracker = AdvertTracker()
        _ = tracker.configure(settings: settings, devices: devices, fleet: fleet)
        return tracker
    }
}

extension [AdvertAction] {
    /// name → payload of the measurements.
    var measurements: [String: String] {
        var out: [String: String] = [:]
        for case .measurement(_, let name, let payload) in self { out[name] = payload }
        return out
    }

    var events: [String] { compactMap { if case .event(_, let name, let payload) = $0 { "\(name) \(payload)" } else { nil } } }
    var errors: [String] { compactMap { if case .error(_, let reason) = $0 { reason } else { nil } } }
    var availability: [Bool] { compactMap { if case .availability(_, let online) = $0 { online } else { nil } } }
    var rssi: [Int] { compactMap { if case .rssi(_, let value) = $0 { value } else { nil } } }
    var wentBack: [UInt32] { compactMap { if case .counterWentBack(_, let counter, _) = $0 { counter } else { nil } } }
    var counterSaves: Int { count { if case .countersChanged = $0 { true } else { false } } }
    var added: [DeviceConfig] { compactMap { if case .addAutoDevice(let device) = $0 { device } else { nil } } }
    var entities: [AdvertEntity] { compactMap { if case .discovery(_, let entity) = $0 { entity } else { nil } } }
}
