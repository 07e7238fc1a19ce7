/// Makes a config name safe as one MQTT topic level (docs/mqtt.md): `+`, `#`, `/` and every code point that libmosquitto
/// refuses in a topic become `_` (wildcards, the separator, and what `mosquitto_validate_utf8` rejects: NUL, the C0
/// and C1 control characters, DEL and the Unicode noncharacters U+FDD0–U+FDEF and U+nFFFE/U+nFFFF; a name with one
/// of those used to pass `config check` while every publish for it failed), and leading `$` are removed (topics
/// starting with `$` are reserved for the broker, e.g. `$SYS`). Shared by config validation, which rejects names that
/// collide after sanitising, and the bridge, which builds topics with it.
public func sanitizeTopicLevel(_ name: String) -> String {
    // Most names are printable ASCII without a reserved character: returned as they are, with no copy (every
    // broadcast's publish builds its topic from its device's name).
    if name.utf8.first != UInt8(ascii: "$"), name.utf8.allSatisfy({ byte in
        (0x20...0x7E).contains(byte) && byte != UInt8(ascii: "+") && byte != UInt8(ascii: "#") && byte != UInt8(ascii: "/")
    }) {
        return name
    }
    var scalars = String.UnicodeScalarView()
    for scalar in name.unicodeScalars {
        if scalar == "+" || scalar == "#" || scalar == "/" || isRefusedInTopics(scalar) {
            scalars.append("_")
        } else if scalar == "$", scalars.isEmpty {
            continue
        } else {
            scalars.append(scalar)
        }
    }
    return String(scalars)
}

/// The code points libmosquitto refuses anywhere in a topic (`mosquitto_validate_utf8`): the control characters
/// (general category Cc: U+0000–U+001F, U+007F–U+009F) and the noncharacters. Surrogates cannot occur in a Swift
/// string, and every other code point is accepted. Both sets are fixed by the Unicode standard, so they are tested by
/// value rather than through the standard library's property tables, which would otherwise be paged in for every
/// topic (`TopicLevelTests` checks the two agree on every scalar).
func isRefusedInTopics(_ scalar: Unicode.Scalar) -> Bool {
    let value = scalar.value
    return value < 0x20 || (0x7F...0x9F).contains(value)                // Cc
        || (0xFDD0...0xFDEF).contains(value) || value & 0xFFFE == 0xFFFE  // U+FDD0–U+FDEF, U+xxFFFE and U+xxFFFF
}
