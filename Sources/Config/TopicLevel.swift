/// Makes a config name safe as one MQTT topic level (SPEC §4): `+`, `#`, `/`, NUL and control characters
/// become `_` (they are wildcards, separators or invalid in topics), and leading `$` are removed (topics
/// starting with `$` are reserved for the broker, e.g. `$SYS`). Shared by config validation, which rejects
/// names that collide after sanitising, and the bridge, which builds topics with it.
public func sanitizeTopicLevel(_ name: String) -> String {
    var scalars = String.UnicodeScalarView()
    for scalar in name.unicodeScalars {
        if scalar == "+" || scalar == "#" || scalar == "/" || scalar.properties.generalCategory == .control {
            scalars.append("_")
        } else if scalar == "$", scalars.isEmpty {
            continue
        } else {
            scalars.append(scalar)
        }
    }
    return String(scalars)
}
