/// `bluetooth.adapters` / `bluetooth.adapter` and the per-device `adapter` (docs/adapters.md).
extension ConfigValidator {
    /// A device's `adapter:` value as validated: `any` is nil, a bad value is `.invalid` (already reported).
    enum DeviceAdapter: Equatable {
        case named(String), invalid
        var name: String? { if case .named(let name) = self { name } else { nil } }
    }

    mutating func adapterSettings(_ fields: MappingFields, into settings: inout BluetoothSettings) {
        if let single = fields["adapter"], let list = fields["adapters"] {
            report(list, "bluetooth has both adapter (at \(single.position)) and adapters; use adapters")
            return
        }
        if let value = fields["adapter"] {
            if let name = adapterName(value, key: "adapter", context: "bluetooth") {
                settings.adapters = [AdapterSetting(name: name)]
            }
        }
        if let value = fields["adapters"] {
            settings.adapters = adapterList(value)
        }
    }

    /// `[hci0, {name: hci1, max_connections: 2}]`. An empty list is refused: it would bridge nothing.
    private mutating func adapterList(_ node: YAMLNode) -> [AdapterSetting]? {
        guard case .sequence(let items) = node.content else {
            report(node, "adapters in bluetooth must be a list of adapter names (hci0) or {name, max_connections} mappings, got \(node.kindDescription)")
            return nil
        }
        guard !items.isEmpty else {
            report(node, "adapters in bluetooth is empty; leave it out to use every adapter")
            return nil
        }
        var list: [AdapterSetting] = []
        var seen: [String: YAMLNode] = [:]
        for (index, item) in items.enumerated() {
            let context = "bluetooth.adapters[\(index)]"
            var setting: AdapterSetting?
            switch item.content {
            case .mapping:
                guard let fields = fields(of: item, allowed: ["name", "max_connections"], context: context) else { continue }
                requireKeys(["name"], in: fields, context: context)
                guard let nameNode = fields["name"], let name = adapterName(nameNode, key: "name", context: context) else { continue }
                var entry = AdapterSetting(name: name)
                if let value = fields["max_connections"] {
                    guard let limit = integer(value, key: "max_connections", context: context, range: 1...64) else { continue }
                    entry.maxConnections = limit
                }
                setting = entry
            default:
                setting = adapterName(item, key: "adapters", context: "bluetooth").map { AdapterSetting(name: $0) }
            }
            guard let setting else { continue }
            if let first = seen[setting.name] {
                report(item, "duplicate adapter \(setting.name) in bluetooth.adapters (first at \(first.position))")
                continue
            }
            seen[setting.name] = item
            list.append(setting)
        }
        return list.count == items.count ? list : nil
    }

    /// An adapter name as users write it: `hci0` (BlueZ's object path ends in it).
    private mutating func adapterName(_ node: YAMLNode, key: String, context: String) -> String? {
        guard let text = nonEmptyString(node, key: key, context: context) else { return nil }
        guard Self.isAdapterName(text) else {
            report(node, "\(key) in \(context) must be an adapter name like \"hci0\", got \"\(text)\"")
            return nil
        }
        return text
    }

    mutating func deviceAdapter(_ node: YAMLNode, context: String) -> DeviceAdapter? {
        guard let text = nonEmptyString(node, key: "adapter", context: context) else { return .invalid }
        if text == "any" { return nil }
        guard Self.isAdapterName(text) else {
            report(node, "adapter in \(context) must be \"any\" or an adapter name like \"hci0\", got \"\(text)\"")
            return .invalid
        }
        return .named(text)
    }

    static func isAdapterName(_ text: String) -> Bool {
        text.hasPrefix("hci") && text.count > 3 && text.dropFirst(3).allSatisfy { $0.isASCII && $0.isNumber }
    }
}
