/// Makes a config name safe as one MQTT topic level (docs/mqtt.md): `+`, `#`, `/` and every code point that libmosquitto
/// refuses in a topic become `_` (wildcards, the separator, and what `mosquitto_validate_utf8` rejects: NUL, the C0
/// and C1 control characters, DEL and the Unicode noncharacters U+FDD0–U+FDEF and U+nFFFE/U+nFFFF; a name with one
/// of those used to pass `config check` while every publish for it failed), and leading `$` are removed (topics
/// starting with `$` are reserved for the broker, e.g. `$SYS`). Shared by config validation, which rejects names that
/// collide after sanitising, and the bridge, which builds topics with it.
public func sanitizeTopicLevel(_ name: String) -> String {
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
/// string, and every other code point is accepted.
func isRefusedInTopics(_ scalar: Unicode.Scalar) -> Bool {
    scalar.properties.generalCategory == .control || scalar.properties.isNoncharacterCodePoint
}
