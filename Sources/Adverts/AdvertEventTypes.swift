/// Every event type an event of a given name can carry, so a consumer can announce them all before the first one
/// happens (Home Assistant's event entities and device triggers list their types up front).
public enum AdvertEventTypes {
    /// The types for an event name as the decoders give it (`button`, `button_2`, `dimmer`, `command_1`); empty for
    /// a name no decoder produces.
    public static func types(of name: String) -> [String] {
        switch baseName(name) {
        case "button": BTHomeObjects.buttonEvents.sorted { $0.key < $1.key }.map(\.value)
        case "dimmer": BTHomeObjects.dimmerEvents.sorted { $0.key < $1.key }.map(\.value)
        case "command": BTHomeObjects.commandEvents.sorted { $0.key < $1.key }.map(\.value)
        default: []
        }
    }

    /// `button_2` → `button`: several objects of one kind in a packet are numbered after their name.
    static func baseName(_ name: String) -> Substring {
        guard let underscore = name.lastIndex(of: "_"), name[name.index(after: underscore)...].allSatisfy(\.isNumber),
              name.index(after: underscore) != name.endIndex
        else { return Substring(name) }
        return name[..<underscore]
    }
}
