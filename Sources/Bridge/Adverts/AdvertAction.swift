import Adverts
import BridgeModel
import Codecs
import Config

/// What `AdvertTracker` asks its feature to do. Topics are the feature's business: the tracker names measurements
/// and events by their topic level under the device (`B/D/<name>`, docs/adverts.md).
public enum AdvertAction: Sendable, Equatable {
    /// `B/D/<name>`: a reading (plain number, `ON`/`OFF`, text; `home`/`not_home` for a beacon's presence), retained
    /// like a state channel.
    case measurement(DeviceConfig, name: String, payload: String)
    /// `B/D/<name>`: one action, `{"event_type":…}`, never retained.
    case event(DeviceConfig, name: String, payload: String)
    /// `B/D/availability` of a passive device (a device that also connects has its session's).
    case availability(DeviceConfig, online: Bool)
    /// `B/D/rssi` of a passive device.
    case rssi(DeviceConfig, Int)
    /// A device whose broadcasts cannot be read (no or wrong bindkey): for `B/bridge/log`, rate-limited already.
    case error(DeviceConfig, reason: String)
    /// An encrypted broadcast whose counter is below the device's mark (`ReplayLedger`): a replay, or a device that
    /// counts from zero again and needs re-arming. For `B/bridge/log`, rate-limited already.
    case counterWentBack(DeviceConfig, counter: UInt32, mark: UInt32)
    /// A device's counter mark moved (or was forgotten): the ledger is due to be saved.
    case countersChanged(DeviceConfig)
    /// A device broadcast more readings than a device may have (`AdvertTracker.maxEntitiesPerDevice`, numbered
    /// repeats beyond `maxRepeats`, or the auto devices' total): the rest are dropped. Once per device, for
    /// `B/bridge/log`.
    case readingsDropped(DeviceConfig, reason: String)
    /// Every auto slot is taken (`auto_limit`): a new broadcaster was ignored. At once, then at most hourly; the
    /// device is the one ignored.
    case autoTableFull(DeviceConfig, limit: Int)
    /// An auto device silent for `adverts.timeout`: its slot is given back, and it leaves the running config (its
    /// retained readings and Home Assistant configs are cleared as for any device that leaves).
    case removeAutoDevice(DeviceConfig)
    /// An unsaved broadcaster in an `adverts.auto` format: add it to the running config (not saved).
    case addAutoDevice(DeviceConfig)
    /// Announce (or announce again) one entity of the device to Home Assistant.
    case discovery(DeviceConfig, AdvertEntity)
}

extension AdvertAction {
    /// The device the action is about.
    public var device: DeviceConfig {
        switch self {
        case .measurement(let device, _, _), .event(let device, _, _), .availability(let device, _),
             .rssi(let device, _), .error(let device, _), .addAutoDevice(let device), .discovery(let device, _),
             .counterWentBack(let device, _, _), .countersChanged(let device), .readingsDropped(let device, _),
             .autoTableFull(let device, _), .removeAutoDevice(let device):
            device
        }
    }
}

/// How decoded values are written on MQTT (docs/adverts.md).
enum AdvertPayloads {
    static let presence = AdvertEntity.presenceLevel

    /// The longest text a reading can carry: a BTHome text object's length is one byte.
    static let maxTextBytes = 255

    /// A plain number as the decoder gives it, `ON`/`OFF`, or text; nil for a beacon's identity, which is no reading.
    /// Text comes from anyone in radio range: its C0 and C1 controls and DEL are escaped (`\n`, `\x1b`,
    /// docs/adverts-mqtt.md), so no reading carries an escape sequence into a terminal, a NUL into a C consumer or a
    /// forged line into a log that quotes it.
    static func payload(_ value: MeasurementValue) -> String? {
        switch value {
        case .integer(let value): String(value)
        case .number(let value): value.isFinite ? JSONValue.double(value).serialized : nil
        case .state(let on): on ? "ON" : "OFF"
        case .text(let text): ReportText.escaped(text, maxBytes: maxTextBytes)
        case .identity: nil
        }
    }

    static func kind(_ value: MeasurementValue) -> AdvertEntity.Kind {
        switch value {
        case .integer, .number: .number
        case .state: .binary
        case .text, .identity: .text
        }
    }

    /// `{"event_type":"press"}`, with `steps` for a dimmer turn and `args` for a BTHome command, as event channels
    /// publish actions (docs/home-assistant.md).
    static func event(_ event: AdvertEvent) -> String {
        var members: [(String, JSONValue)] = [("event_type", .string(event.type))]
        if let steps = event.steps { members.append(("steps", .int(steps))) }
        if let arguments = event.arguments { members.append(("args", .string(arguments))) }
        return JSONValue.object(members).serialized
    }
}
