/// One node of a parsed YAML document, with the 1-based position where it starts, so every config error can
/// point at the exact key or value.
struct YAMLNode: Sendable {
    enum ScalarStyle: Sendable {
        case plain, singleQuoted, doubleQuoted, literal, folded

        var isQuoted: Bool { self != .plain }
    }

    struct Pair: Sendable {
        var key: YAMLNode
        var value: YAMLNode
    }

    enum Content: Sendable {
        case scalar(String, ScalarStyle)
        case sequence([YAMLNode])
        case mapping([Pair])
    }

    var content: Content
    var line: Int
    var column: Int
    /// Set for nodes converted from JSON (a `device/add` request): the JSON path (`channels[0].codec`) errors name
    /// instead of a line and column.
    var path: String? = nil

    /// Where the node is, for messages that point at an earlier node ("first at …").
    var position: String { path.map { $0.isEmpty ? "the top level" : $0 } ?? "\(line):\(column)" }

    /// YAML 1.2 core-schema null: `~`, `null` or nothing at all, unquoted.
    var isNull: Bool {
        guard case .scalar(let text, .plain) = content else { return false }
        return text.isEmpty || text == "~" || text == "null" || text == "Null" || text == "NULL"
    }

    /// A short phrase for error messages: what the user wrote instead of what was expected.
    var kindDescription: String {
        switch content {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .scalar(let text, let style):
            if isNull { return "nothing (null)" }
            return style.isQuoted ? "the quoted string \"\(text)\"" : "\"\(text)\""
        }
    }
}
