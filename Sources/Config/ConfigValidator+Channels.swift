import Bluetooth
import Codecs

extension ConfigValidator {
    /// The shortest `interval` (and `command_ttl`): a poll more often than ten times a second is a typo, and costs a
    /// core's worth of reads.
    static let minimumInterval = 0.1
    /// The shortest `flush_after`: a partial line is worth waiting a few milliseconds for.
    static let minimumFlushAfter = 0.01

    static let channelKeys = ["name", "characteristic", "codec", "mode", "interval", "retain", "qos", "topic", "writable",
                              "write_with_response", "values", "homeassistant", "command_ttl", "delimiter",
                              "write_delimiter", "max_line", "flush_after"]
    static let textOnlyKeys = ["delimiter", "write_delimiter", "max_line", "flush_after"]

    /// One channel of `device` (a phrase: `device "x"` or `device #2`), or nil when anything about it is wrong
    /// (every problem is reported). Also returns the node that defines its topic level, for duplicate reports.
    mutating func channel(_ node: YAMLNode, index: Int, device: String) -> (ChannelConfig, YAMLNode)? {
        let before = issues.count
        let context = peekName(node).map { "channel \"\($0)\"" } ?? "channel #\(index + 1) of \(device)"
        guard let fields = fields(of: node, allowed: Self.channelKeys, context: context) else { return nil }
        requireKeys(["name", "characteristic", "codec"], in: fields, context: context)
        let name = fields["name"].flatMap { nonEmptyString($0, key: "name", context: context) }
        let uuids = fields["characteristic"].flatMap { characteristic($0, context: context) }
        let kind = fields["codec"].flatMap { codecKind($0, context: context) }

        var mode: ChannelMode?
        if let value = fields["mode"] {
            mode = choice(value, key: "mode", context: context, as: ChannelMode.self, choices: ChannelMode.allCases.map(\.rawValue))
        }
        var channel = ChannelConfig(name: name ?? "", characteristic: BluetoothUUID(UInt16(0)), codec: try! Codec(.hex))
        if let value = fields["interval"] {
            channel.interval = seconds(value, key: "interval", context: context, minimum: Self.minimumInterval) ?? channel.interval
            if mode == .notify { report(fields.keyNode("interval")!, "interval in \(context) has no effect with mode notify") }
        }
        if let value = fields["retain"] { channel.retain = bool(value, key: "retain", context: context) ?? false }
        if let value = fields["qos"] { channel.qos = integer(value, key: "qos", context: context, range: 0...2) ?? 1 }
        if let value = fields["topic"] { channel.topic = nonEmptyString(value, key: "topic", context: context) }
        // nil: given but invalid (already reported), so rules depending on it stay quiet.
        let writable: Bool? = fields["writable"].map { bool($0, key: "writable", context: context) } ?? false
        channel.writable = writable ?? false
        if let value = fields["write_with_response"] {
            channel.writeWithResponse = bool(value, key: "write_with_response", context: context)
        }
        if let value = fields["homeassistant"] {
            channel.homeassistant = choice(value, key: "homeassistant", context: context, as: HomeAssistantComponent.self,
                                           choices: HomeAssistantComponent.allCases.map(\.rawValue)) ?? .sensor
        }
        if let value = fields["command_ttl"] {
            channel.commandTTL = seconds(value, key: "command_ttl", context: context, minimum: Self.minimumInterval) ?? channel.commandTTL
        }
        textSettings(fields, context: context, into: &channel)
        let values = fields["values"].flatMap { valuesMap($0, context: context) } ?? []
        writableRules(fields, kind: kind, writable: writable, context: context, channel: channel)
        eventRules(fields, mode: mode, context: context, channel: channel)

        var codec: Codec?
        if let kind {
            codec = buildCodec(kind, values: values, fields: fields, context: context)
            if kind != .text {
                for key in Self.textOnlyKeys {
                    if let keyNode = fields.keyNode(key) { report(keyNode, "\(key) in \(context) only applies to codec text") }
                }
            }
        }
        guard issues.count == before, let name, let uuids, let codec else { return nil }
        channel.name = name
        channel.service = uuids.service
        channel.characteristic = uuids.characteristic
        channel.codec = codec
        channel.mode = mode
        return (channel, fields["topic"] ?? fields["name"]!)
    }

    /// "2a37", "180f/2a19", or 128-bit UUIDs in either part.
    private mutating func characteristic(_ node: YAMLNode, context: String) -> (service: BluetoothUUID?, characteristic: BluetoothUUID)? {
        guard let text = string(node, key: "characteristic", context: context) else { return nil }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let uuids = parts.map { BluetoothUUID($0) }
        guard parts.count <= 2, let characteristic = uuids.last ?? nil, parts.count == 1 || uuids[0] != nil else {
            report(node, "characteristic in \(context) must be a UUID (\"2a37\" or 128-bit) or \"service/characteristic\", got \"\(text)\"")
            return nil
        }
        return (parts.count == 2 ? uuids[0] : nil, characteristic)
    }

    private mutating func codecKind(_ node: YAMLNode, context: String) -> CodecKind? {
        guard let text = string(node, key: "codec", context: context) else { return nil }
        if let kind = CodecKind(rawValue: text) { return kind }
        let names = CodecKind.allCases.map(\.rawValue)
        var message = "unknown codec \"\(text)\" in \(context)"
        if let suggestion = Suggestion.closest(to: text, in: names) {
            message += " (did you mean \"\(suggestion)\"?)"
        } else {
            message += " (expected one of \(names.joined(separator: ", ")))"
        }
        report(node, message)
        return nil
    }

    /// The ordered `values` map with the node of each value, for positioned encoding errors.
    private mutating func valuesMap(_ node: YAMLNode, context: String) -> [(key: String, value: String, node: YAMLNode)]? {
        guard case .mapping(let pairs) = node.content else {
            report(node, "values in \(context) must be a mapping like { \"ON\": \"01\", \"OFF\": \"00\" }, got \(node.kindDescription)")
            return nil
        }
        var entries: [(key: String, value: String, node: YAMLNode)] = []
        var seen: [String: YAMLNode] = [:]
        for pair in pairs {
            guard case .scalar(let key, _) = pair.key.content, !pair.key.isNull else {
                report(pair.key, "keys of values in \(context) must be strings, got \(pair.key.kindDescription)")
                continue
            }
            if let first = seen[key] {
                report(pair.key, "duplicate key \"\(key)\" in values of \(context) (first at \(first.line):\(first.column))")
                continue
            }
            seen[key] = pair.key
            guard let value = string(pair.value, key: "values[\"\(key)\"]", context: context) else { continue }
            entries.append((key, value, pair.value))
        }
        return entries
    }

    private mutating func buildCodec(_ kind: CodecKind, values: [(key: String, value: String, node: YAMLNode)],
                                     fields: MappingFields, context: String) -> Codec? {
        if !values.isEmpty, !kind.canEncode {
            report(fields["values"]!, "values in \(context) cannot be used with codec \(kind), which is decode-only")
            return nil
        }
        var valid = true
        for entry in values {
            do throws(CodecError) {
                _ = try Codec(kind).encode(entry.value)
            } catch {
                report(entry.node, "value \"\(entry.value)\" for \"\(entry.key)\" in \(context) cannot be encoded by codec \(kind): \(error.message)")
                valid = false
            }
        }
        guard valid else { return nil }
        return try? Codec(kind, values: values.map { ($0.key, $0.value) })
    }

    private mutating func writableRules(_ fields: MappingFields, kind: CodecKind?, writable: Bool?, context: String,
                                        channel: ChannelConfig) {
        if writable == true, let kind, !kind.canEncode {
            report(fields["writable"]!, "\(context) cannot be writable: codec \(kind) is decode-only")
        }
        if writable == false, let key = fields.keyNode("write_with_response") {
            report(key, "write_with_response in \(context) has no effect unless writable is true")
        }
        if channel.homeassistant.needsCommandTopic, writable == false, let value = fields["homeassistant"] {
            report(value, "homeassistant \(channel.homeassistant.rawValue) in \(context) needs writable: true")
        }
    }

    /// An event channel's values are actions: Home Assistant fires an event for every message it receives on the
    /// state topic, so a retained or polled value would fire again and again without anything being pressed.
    /// Without values there would be no event types to announce, and Home Assistant ignores events of undeclared types.
    private mutating func eventRules(_ fields: MappingFields, mode: ChannelMode?, context: String, channel: ChannelConfig) {
        guard channel.homeassistant.isEvent, let option = fields["homeassistant"] else { return }
        let spelling = channel.homeassistant.rawValue
        let example = "like { \"press\": \"01\", \"double_press\": \"02\" }"
        if let values = fields["values"] {
            if case .mapping(let pairs) = values.content, pairs.isEmpty {
                report(values, "values in \(context) must name at least one event type for homeassistant \(spelling), \(example)")
            }
        } else {
            report(option, "homeassistant \(spelling) in \(context) needs values naming its event types, \(example)")
        }
        if channel.retain, let value = fields["retain"] {
            report(value, "retain in \(context) cannot be true with homeassistant \(spelling): a retained event fires again whenever Home Assistant subscribes")
        }
        if mode == .read, let value = fields["mode"] {
            report(value, "mode read in \(context) cannot be used with homeassistant \(spelling): every poll would fire an event")
        }
    }

    private mutating func textSettings(_ fields: MappingFields, context: String, into channel: inout ChannelConfig) {
        if let value = fields["delimiter"], let text = delimiter(value, key: "delimiter", context: context) {
            channel.delimiter = text
        }
        channel.writeDelimiter = channel.delimiter
        if let value = fields["write_delimiter"], let text = delimiter(value, key: "write_delimiter", context: context) {
            channel.writeDelimiter = text
        }
        if let value = fields["max_line"] {
            channel.maxLine = integer(value, key: "max_line", context: context, range: 1...1_048_576) ?? channel.maxLine
        }
        if let value = fields["flush_after"] {
            channel.flushAfter = seconds(value, key: "flush_after", context: context, minimum: Self.minimumFlushAfter) ?? channel.flushAfter
        }
    }

    /// A delimiter may be empty. A backslash escape outside double quotes is almost certainly a mistake:
    /// `\n` unquoted is two characters, not a newline.
    private mutating func delimiter(_ node: YAMLNode, key: String, context: String) -> String? {
        guard let text = string(node, key: key, context: context) else { return nil }
        if case .scalar(_, let style) = node.content, style != .doubleQuoted,
           text.contains("\\n") || text.contains("\\r") || text.contains("\\t") {
            report(node, "\(key) in \(context) contains a backslash escape that YAML only interprets in double quotes; write it as \"\(text)\"")
            return nil
        }
        return text
    }
}
