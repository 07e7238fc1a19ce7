import Testing
@testable import MQTT

@Suite struct MQTTTopicTests {
    @Test(arguments: [
        ("a/b/c", "a/b/c", true), ("a/b/c", "a/b", false), ("a/+/c", "a/x/c", true), ("a/+/c", "a/x/y/c", false),
        ("a/+", "a/", true), ("+", "a", true), ("+", "a/b", false), ("a/#", "a", true), ("a/#", "a/b/c", true),
        ("a/#", "b/c", false), ("#", "a/b", true), ("#", "$SYS/x", false), ("+/x", "$SYS/x", false),
        ("$SYS/#", "$SYS/broker", true), ("a/#/b", "a/x/b", false), ("B/+/+/set", "B/dev/led/set", true),
        ("B/+/+/set", "B/dev/led/get", false), ("/+", "/a", true), ("+/+", "/a", true),
    ])
    func matches(filter: String, topic: String, expected: Bool) {
        #expect(MQTTTopic.matches(filter: filter, topic: topic) == expected)
    }
}
