/// Topic helpers that do not need a broker.
public enum MQTTTopic {
    /// Makes a user-chosen name (device, channel) safe as exactly one topic level (SPEC §4): wildcards, the level
    /// separator, NUL and control characters become `_`; a leading `$` would make the topic a broker-internal one
    /// that wildcard subscribers never see, so it is removed; an empty level becomes `_`.
    public static func sanitizeLevel(_ level: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in level.unicodeScalars.drop(while: { $0 == "$" }) {
            switch scalar {
            case "+", "#", "/": result.append("_")
            case _ where scalar.properties.generalCategory == .control: result.append("_")
            default: result.append(scalar)
            }
        }
        return result.isEmpty ? "_" : String(result)
    }

    /// MQTT filter matching (MQTT 5 §4.7): `+` is one level (possibly empty), a trailing `#` is the parent level and
    /// everything below it; topics starting with `$` are not matched by a filter starting with a wildcard.
    public static func matches(filter: String, topic: String) -> Bool {
        let filterLevels = filter.split(separator: "/", omittingEmptySubsequences: false)
        let topicLevels = topic.split(separator: "/", omittingEmptySubsequences: false)
        if topic.hasPrefix("$"), let first = filterLevels.first, first == "+" || first == "#" { return false }
        var index = 0
        for level in filterLevels {
            if level == "#" { return index == filterLevels.count - 1 }
            guard index < topicLevels.count else { return false }
            if level != "+" && level != topicLevels[index] { return false }
            index += 1
        }
        return index == topicLevels.count
    }
}
