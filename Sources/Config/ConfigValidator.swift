/// Checks a YAML tree against docs/configuration.md and builds the typed config, collecting every problem instead of
/// stopping at the first.
struct ConfigValidator {
    let file: String
    private(set) var issues: [ConfigIssue] = []

    init(file: String) {
        self.file = file
    }

    mutating func report(_ node: YAMLNode, _ message: String) {
        report(line: node.line, column: node.column, path: node.path, message)
    }

    mutating func report(line: Int, column: Int, path: String? = nil, _ message: String) {
        issues.append(ConfigIssue(file: file, line: line, column: column, message: message, path: path))
    }

    /// The top-level sections (the other top-level keys are `bridgeKeys`).
    static let sectionKeys = ["mqtt", "bluetooth", "homeassistant", "devices", "adverts", "web", "esphome_proxy"]

    /// The whole document. An empty file is an empty mapping: every section has defaults.
    mutating func validate(_ root: YAMLNode?) -> BridgeConfig {
        var config = BridgeConfig()
        guard let root, !root.isNull else { return config }
        guard let fields = fields(of: root, allowed: Self.sectionKeys + Self.bridgeKeys, context: "the top level") else {
            return config
        }
        if let node = fields["mqtt"] { config.mqtt = mqtt(node) }
        if let node = fields["bluetooth"] { config.bluetooth = bluetooth(node) }
        if let node = fields["homeassistant"] { config.homeassistant = homeassistant(node) }
        if let node = fields["devices"] { config.devices = devices(node, adapters: config.bluetooth.adapters) }
        if let node = fields["adverts"] { config.adverts = adverts(node) }
        if let node = fields["web"] { config.web = web(node) }
        bridgeSettings(fields, into: &config)
        config.esphomeProxy = esphomeProxy(fields["esphome_proxy"], config: config)
        return config
    }

    private mutating func bluetooth(_ node: YAMLNode) -> BluetoothSettings {
        var settings = BluetoothSettings()
        guard let fields = fields(of: node, allowed: ["adapter", "adapters", "default_agent"], context: "bluetooth") else {
            return settings
        }
        adapterSettings(fields, into: &settings)
        if let value = fields["default_agent"], let enabled = bool(value, key: "default_agent", context: "bluetooth") {
            settings.defaultAgent = enabled
        }
        return settings
    }

    private mutating func homeassistant(_ node: YAMLNode) -> HomeAssistantSettings {
        var settings = HomeAssistantSettings()
        guard let fields = fields(of: node, allowed: ["enabled", "discovery_prefix"], context: "homeassistant") else {
            return settings
        }
        if let value = fields["enabled"], let enabled = bool(value, key: "enabled", context: "homeassistant") {
            settings.enabled = enabled
        }
        if let value = fields["discovery_prefix"],
           let prefix = topicPrefix(value, key: "discovery_prefix", context: "homeassistant") {
            settings.discoveryPrefix = prefix
        }
        return settings
    }

    /// A multi-level topic prefix (`base_topic`, `discovery_prefix`): non-empty levels, no wildcards, not `$…`.
    mutating func topicPrefix(_ node: YAMLNode, key: String, context: String) -> String? {
        guard let text = nonEmptyString(node, key: key, context: context) else { return nil }
        let levels = text.split(separator: "/", omittingEmptySubsequences: false)
        let bad = text.unicodeScalars.contains { $0 == "+" || $0 == "#" || isRefusedInTopics($0) }
        guard !bad, !text.hasPrefix("$"), levels.allSatisfy({ !$0.isEmpty }) else {
            report(node, "\(key) in \(context) must be an MQTT topic without wildcards (+ #), control characters, noncharacters, "
                + "a leading $ or empty levels, got \"\(text)\"")
            return nil
        }
        return text
    }
}
