import Adverts
import BlueZ
import BridgeModel
import Codecs

/// What `scan` shows of a device's broadcast (docs/cli.md): decoded in every format, as `adverts decode` would,
/// without bindkeys (a scan has no config), so an encrypted broadcast shows nothing rather than a guess.
public enum ScanMeasurements {
    /// The longest measurements cell of the table; a longer one is cut at a reading's end and marked with "…", so a
    /// chatty broadcaster cannot push the services column off every terminal.
    public static let maxCellLength = 60
    /// A text or identity value (a beacon's UUID, a BTHome text object) is cut to this many bytes in the table.
    static let maxTextBytes = 24

    /// nil when the device carries no service or manufacturer data, or none of it decodes.
    public static func decode(_ device: DeviceInfo) -> AdvertResult? {
        guard let heard = HeardBroadcast(device) else { return nil }
        return try? AdvertDecoder.decode(heard.broadcast)
    }

    /// `{"temperature":21.5,…}` for the JSON; `null` when nothing decoded, `{}` when a broadcast decoded without
    /// readings (only an event or a packet id).
    public static func json(_ result: AdvertResult?) -> JSONValue {
        guard let result else { return .null }
        return .object(result.measurements.map { ($0.name, $0.value.json) })
    }

    /// `temperature=21.5 humidity=40 battery=87` for the table; "-" when nothing decoded or nothing was measured.
    public static func cell(_ result: AdvertResult?, maxLength: Int = maxCellLength) -> String {
        guard let result, !result.measurements.isEmpty else { return "-" }
        let readings = result.measurements
        var out = ""
        for (index, measurement) in readings.enumerated() {
            let item = "\(ReportText.escaped(measurement.name, maxBytes: maxTextBytes))=\(text(measurement.value))"
            let candidate = out.isEmpty ? item : out + " " + item
            // Room is kept for " …" while more readings follow.
            let room = index == readings.count - 1 ? maxLength : maxLength - 2
            if candidate.count <= room {
                out = candidate
            } else {
                return out.isEmpty ? String(item.prefix(max(0, maxLength - 1))) + "…" : out + " …"
            }
        }
        return out
    }

    /// As published on MQTT: numbers plain, binary readings ON/OFF; texts escaped (they come from the air).
    static func text(_ value: MeasurementValue) -> String {
        switch value {
        case .integer, .number: value.json.serialized
        case .state(let on): on ? "ON" : "OFF"
        case .text(let text), .identity(let text): ReportText.escaped(text, maxBytes: maxTextBytes)
        }
    }
}
