/// Topic helpers that do not need a broker.
public enum MQTTTopic {
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
