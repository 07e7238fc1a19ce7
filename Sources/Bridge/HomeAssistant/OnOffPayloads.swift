import Codecs

/// Which payloads mean on and off for a switch, light or binary sensor.
///
/// The channel's `values` map names the payloads the bridge publishes and accepts (`{ON: "01", OFF: "00"}`), so its
/// keys are what Home Assistant must send and will see. Which key means "on" is guessed from common spellings, else
/// the first key is on and the second off. Without a usable map the codec's own rendering of the bytes 0x01 and
/// 0x00 is used ("true"/"false" for bool, "1"/"0" for numbers, "01"/"00" for hex), because that is what the bridge
/// publishes for a device that reports its state as a single 1 or 0 byte.
struct OnOffPayloads: Sendable, Equatable {
    var on: String
    var off: String

    static let onWords: Set<String> = ["on", "true", "1", "open", "opened", "yes", "high", "enable", "enabled", "start", "up"]
    static let offWords: Set<String> = ["off", "false", "0", "close", "closed", "no", "low", "disable", "disabled", "stop", "down"]

    /// nil when `values` has no on/off pair to offer.
    static func fromValues(_ values: [(key: String, value: String)]) -> OnOffPayloads? {
        let keys = values.map(\.key)
        let onKey = keys.first { onWords.contains($0.lowercased()) }
        let offKey = keys.first { offWords.contains($0.lowercased()) }
        if keys.count == 2 {
            if let onKey, onKey != offKey {
                return OnOffPayloads(on: onKey, off: keys.first { $0 != onKey }!)
            }
            if let offKey {
                return OnOffPayloads(on: keys.first { $0 != offKey }!, off: offKey)
            }
            return OnOffPayloads(on: keys[0], off: keys[1])
        }
        if let onKey, let offKey, onKey != offKey {
            return OnOffPayloads(on: onKey, off: offKey)
        }
        return nil
    }

    static func raw(_ kind: CodecKind) -> OnOffPayloads {
        switch kind {
        case .bool: OnOffPayloads(on: "true", off: "false")
        case .hex: OnOffPayloads(on: "01", off: "00")
        case .base64: OnOffPayloads(on: "AQ==", off: "AA==")
        case .text: OnOffPayloads(on: "ON", off: "OFF")
        default: OnOffPayloads(on: "1", off: "0")
        }
    }

    static func forChannel(values: [(key: String, value: String)], kind: CodecKind) -> OnOffPayloads {
        fromValues(values) ?? raw(kind)
    }
}
