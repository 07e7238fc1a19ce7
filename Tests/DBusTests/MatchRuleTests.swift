import Testing
@testable import DBus

@Suite struct MatchRuleTests {
    private func signal(sender: String = ":1.7", path: String = "/org/bluez/hci0/dev_1",
                        interface: String = "org.freedesktop.DBus.Properties", member: String = "PropertiesChanged",
                        body: [DBusValue] = [.string("org.bluez.Device1")]) -> DBusMessage {
        DBusMessage(kind: .signal, path: path, interface: interface, member: member, sender: sender, body: body)
    }

    @Test func ruleStringQuotesValues() {
        let rule = MatchRule(sender: "org.bluez", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                             pathNamespace: "/org/bluez", arg0: "it's")
        #expect(rule.ruleString == "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',"
            + "member='PropertiesChanged',path_namespace='/org/bluez',arg0='it'\\''s'")
        #expect(MatchRule().ruleString == "type='signal'")
    }

    @Test func matchesHeaderFields() {
        #expect(MatchRule(interface: "org.freedesktop.DBus.Properties").matches(signal()))
        #expect(!MatchRule(interface: "org.other").matches(signal()))
        #expect(!MatchRule(member: "Other").matches(signal()))
        #expect(MatchRule(path: "/org/bluez/hci0/dev_1").matches(signal()))
        #expect(!MatchRule(path: "/org/bluez/hci0").matches(signal()))
        #expect(!MatchRule(type: "method_call").matches(signal()))
    }

    @Test func pathNamespaceMatchesWholeComponents() {
        #expect(MatchRule(pathNamespace: "/org/bluez").matches(signal()))
        #expect(MatchRule(pathNamespace: "/org/bluez/hci0/dev_1").matches(signal()))
        #expect(MatchRule(pathNamespace: "/").matches(signal()))
        #expect(!MatchRule(pathNamespace: "/org/blue").matches(signal()))
        #expect(!MatchRule(pathNamespace: "/org/bluez/hci0/dev_1/char").matches(signal()))
    }

    @Test func arg0MatchesFirstStringArgument() {
        #expect(MatchRule(arg0: "org.bluez.Device1").matches(signal()))
        #expect(!MatchRule(arg0: "org.bluez.Adapter1").matches(signal()))
        #expect(!MatchRule(arg0: "x").matches(signal(body: [])))
        #expect(!MatchRule(arg0: "/p").matches(signal(body: [.objectPath("/p")])))
    }

    @Test func senderComparedLocallyOnlyWhenUnique() {
        #expect(MatchRule(sender: ":1.7").matches(signal()))
        #expect(!MatchRule(sender: ":1.8").matches(signal()))
        // The bus resolved the well-known name; the connection checks the owner itself.
        #expect(MatchRule(sender: "org.bluez").matches(signal()))
    }
}
