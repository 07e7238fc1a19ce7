/// The keys of one YAML mapping that passed the structural checks.
struct MappingFields {
    fileprivate(set) var pairs: [String: YAMLNode.Pair] = [:]
    /// Where the mapping starts, for "missing key" errors.
    let line: Int
    let column: Int
    /// The mapping's JSON path when it came from JSON.
    var path: String? = nil

    subscript(key: String) -> YAMLNode? { pairs[key]?.value }

    func keyNode(_ key: String) -> YAMLNode? { pairs[key]?.key }
}

extension ConfigValidator {
    /// Checks that `node` is a mapping with scalar, unique, known keys; reports every violation. A null node
    /// (`mqtt:` with nothing after it) is an empty mapping. Returns nil when `node` is not a mapping.
    mutating func fields(of node: YAMLNode, allowed: [String], context: String) -> MappingFields? {
        var fields = MappingFields(line: node.line, column: node.column, path: node.path)
        if node.isNull { return fields }
        guard case .mapping(let pairs) = node.content else {
            report(node, "\(context) must be a mapping of keys to values, got \(node.kindDescription)")
            return nil
        }
        var seen: [String: YAMLNode] = [:]
        for pair in pairs {
            guard case .scalar(let key, _) = pair.key.content else {
                report(pair.key, "keys in \(context) must be plain names, got \(pair.key.kindDescription)")
                continue
            }
            if let first = seen[key] {
                report(pair.key, "duplicate key \"\(key)\" in \(context) (first at \(first.position))")
                continue
            }
            seen[key] = pair.key
            guard allowed.contains(key) else {
                var message = "unknown key \"\(key)\" in \(context)"
                if let suggestion = Suggestion.closest(to: key, in: allowed) {
                    message += " (did you mean \"\(suggestion)\"?)"
                }
                report(pair.key, message)
                continue
            }
            fields.pairs[key] = pair
        }
        return fields
    }

    /// The `name` scalar of a mapping, read before validation so every message about the mapping names it.
    func peekName(_ node: YAMLNode) -> String? {
        guard case .mapping(let pairs) = node.content else { return nil }
        for pair in pairs {
            if case .scalar("name", _) = pair.key.content, case .scalar(let name, _) = pair.value.content,
               !pair.value.isNull, !name.isEmpty {
                return name
            }
        }
        return nil
    }

    mutating func requireKeys(_ keys: [String], in fields: MappingFields, context: String) {
        for key in keys where fields[key] == nil {
            report(line: fields.line, column: fields.column, path: fields.path, "\(context) is missing required key \"\(key)\"")
        }
    }
}
