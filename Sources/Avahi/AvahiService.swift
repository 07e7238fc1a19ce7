/// One DNS-SD service to announce through avahi-daemon: what `EntryGroup.AddService` takes, less what the announcer
/// fixes (every interface, both protocols, the local host name and domain).
public struct AvahiService: Sendable, Equatable {
    /// The instance name (`living-room-pi`); on a collision the announcer takes `name-2`, `name-3`…
    public var name: String
    /// `_esphomelib._tcp` for the ESPHome proxy (docs/configuration.md#esphome_proxy).
    public var type: String
    public var port: UInt16
    /// The TXT record's `key=value` strings, in order. Each must fit DNS's 255 bytes (avahi refuses the service
    /// otherwise, reported as a failure).
    public var txt: [(key: String, value: String)]

    public init(name: String, type: String, port: UInt16, txt: [(key: String, value: String)] = []) {
        self.name = name
        self.type = type
        self.port = port
        self.txt = txt
    }

    public static func == (a: AvahiService, b: AvahiService) -> Bool {
        a.name == b.name && a.type == b.type && a.port == b.port
            && a.txt.map { "\($0.key)=\($0.value)" } == b.txt.map { "\($0.key)=\($0.value)" }
    }

    /// The TXT strings as avahi's `aay`.
    var txtBytes: [[UInt8]] { txt.map { Array("\($0.key)=\($0.value)".utf8) } }

    /// The name to try after `attempt` collisions (1: `name-2`), cut so it stays within a DNS label's 63 bytes.
    static func alternativeName(_ base: String, attempt: Int) -> String {
        let suffix = "-\(attempt + 1)"
        var stem = Substring(base)
        while stem.utf8.count + suffix.utf8.count > 63 { stem = stem.dropLast() }
        return stem + suffix
    }
}
