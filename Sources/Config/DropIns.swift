import Codecs

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A config with its drop-ins: the devices the bridge API saved under `<state_dir>/devices.d/` (docs/bridge-api.md).
public struct LoadedConfig: Sendable {
    public var config: BridgeConfig
    /// Problems of drop-ins that were left out (each names its own file); the other devices are in `config`.
    public var skipped: [ConfigIssue]
}

extension ConfigLoader {
    /// The directory of the API's drop-ins.
    public static func dropInDirectory(stateDir: String) -> String {
        stateDir.hasSuffix("/") ? stateDir + "devices.d" : stateDir + "/devices.d"
    }

    /// The main file plus every `*.yaml` drop-in of its `state_dir`, in name order. A bad main file throws; a bad
    /// drop-in (unreadable, invalid, or a name or address already taken) is left out and reported in `skipped`, so
    /// one broken file does not stop the other devices.
    public static func loadWithDropIns(path: String) throws(ConfigErrors) -> LoadedConfig {
        var config = try load(path: path)
        let directory = dropInDirectory(stateDir: config.stateDir)
        var skipped: [ConfigIssue] = []
        let names: [String]
        switch DropInFiles.list(directory) {
        case .success(let found): names = found
        case .failure(let error):
            return LoadedConfig(config: config, skipped: [ConfigIssue(file: directory, line: 0, column: 0,
                                                                      message: "cannot read the drop-in directory: \(error)")])
        }
        var registry = DeviceRegistry(devices: config.devices)
        registry.adapters = config.bluetooth.adapters
        registry.secretsDir = config.secretsDir
        for name in names {
            let file = directory + "/" + name
            do throws(ConfigErrors) {
                let text: String
                switch TextFile.read(file, limit: TextFile.configLimit) {
                case .success(let bytes):
                    guard let decoded = String(validating: bytes, as: UTF8.self) else {
                        throw ConfigErrors(issues: [ConfigIssue(file: file, line: 0, column: 0, message: "the drop-in is not valid UTF-8")])
                    }
                    text = decoded
                case .failure(let error):
                    throw ConfigErrors(issues: [ConfigIssue(file: file, line: 0, column: 0, message: "cannot read the drop-in: \(error)")])
                }
                config.devices.append(try parseDropIn(text, file: file, registry: &registry))
            } catch {
                skipped += error.issues
            }
        }
        return LoadedConfig(config: config, skipped: skipped)
    }

    /// One drop-in: a single device object (YAML, or JSON, which is YAML too).
    static func parseDropIn(_ text: String, file: String, registry: inout DeviceRegistry) throws(ConfigErrors) -> DeviceConfig {
        let root: YAMLNode?
        do throws(YAMLError) {
            root = try YAMLParser(text: text).parseSingleDocument()
        } catch {
            throw ConfigErrors(issues: [ConfigIssue(file: file, line: error.line, column: error.column, message: error.message)])
        }
        guard let root, !root.isNull else {
            throw ConfigErrors(issues: [ConfigIssue(file: file, line: 0, column: 0, message: "the drop-in is empty; it must hold one device")])
        }
        return try validateDevice(root, file: file, registry: &registry, source: DeviceSource(kind: .api, file: file, line: root.line))
    }

    /// A device object given as JSON (a `device/add` request), checked exactly like a device of the config file and
    /// against the devices already running; issues carry JSON paths (`channels[0].codec`). `file` is where it will be
    /// saved, its source.
    public static func validateDevice(json: JSONValue, file: String, existing: [DeviceConfig],
                                      adapters: [AdapterSetting]? = nil,
                                      secretsDir: String = BridgeConfig.defaultSecretsDir) throws(ConfigErrors) -> DeviceConfig {
        var registry = DeviceRegistry(devices: existing)
        registry.adapters = adapters
        registry.secretsDir = secretsDir
        return try validateDevice(YAMLNode(json: json, path: ""), file: file, registry: &registry,
                                  source: DeviceSource(kind: .api, file: file, line: 0))
    }

    private static func validateDevice(_ node: YAMLNode, file: String, registry: inout DeviceRegistry,
                                       source: DeviceSource) throws(ConfigErrors) -> DeviceConfig {
        var validator = ConfigValidator(file: file)
        let device = validator.device(node, index: 0, registry: &registry, source: source)
        guard validator.issues.isEmpty, let device else {
            throw ConfigErrors(issues: validator.issues.isEmpty
                ? [ConfigIssue(file: file, line: node.line, column: node.column, message: "invalid device", path: node.path)]
                : validator.issues)
        }
        return device
    }
}

extension YAMLNode {
    /// The validator's view of a JSON value: strings are quoted scalars (so `"60"` is a string, as in YAML), numbers,
    /// booleans and null plain ones; every node carries its JSON path instead of a position.
    init(json: JSONValue, path: String) {
        func child(_ key: String) -> String { path.isEmpty ? key : path + "." + key }
        switch json {
        case .null: self.init(content: .scalar("null", .plain), line: 0, column: 0, path: path)
        case .bool(let value): self.init(content: .scalar(value ? "true" : "false", .plain), line: 0, column: 0, path: path)
        case .int, .double: self.init(content: .scalar(json.serialized, .plain), line: 0, column: 0, path: path)
        case .string(let text): self.init(content: .scalar(text, .doubleQuoted), line: 0, column: 0, path: path)
        case .array(let items):
            self.init(content: .sequence(items.enumerated().map { YAMLNode(json: $1, path: "\(path)[\($0)]") }),
                      line: 0, column: 0, path: path)
        case .object(let members):
            self.init(content: .mapping(members.map { key, value in
                Pair(key: YAMLNode(content: .scalar(key, .doubleQuoted), line: 0, column: 0, path: child(key)),
                     value: YAMLNode(json: value, path: child(key)))
            }), line: 0, column: 0, path: path)
        }
    }
}

/// The files of `devices.d/`, with plain POSIX calls like `TextFile`.
enum DropInFiles {
    /// The `*.yaml` names in `directory`, sorted; none when it does not exist.
    static func list(_ directory: String) -> Result<[String], FileReadError> {
        guard let dir = opendir(directory) else {
            return errno == ENOENT ? .success([]) : .failure(.system(errno))
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasSuffix(".yaml"), !name.hasPrefix(".") { names.append(name) }
        }
        return .success(names.sorted())
    }
}

extension ConfigLoader {
    /// A device object from YAML (or JSON) text as JSON, for sending it to `device/add` (the CLI's `--file`). YAML
    /// core-schema typing: plain scalars that read as numbers, booleans or null become those, the rest strings.
    public static func deviceJSON(yaml text: String, file: String) throws(ConfigErrors) -> JSONValue {
        let root: YAMLNode?
        do throws(YAMLError) {
            root = try YAMLParser(text: text).parseSingleDocument()
        } catch {
            throw ConfigErrors(issues: [ConfigIssue(file: file, line: error.line, column: error.column, message: error.message)])
        }
        guard let root, case .mapping = root.content else {
            throw ConfigErrors(issues: [ConfigIssue(file: file, line: root?.line ?? 0, column: root?.column ?? 0,
                                                    message: "a device file must hold one device object (a mapping)")])
        }
        return root.json
    }
}

extension YAMLNode {
    /// The node as JSON (keys as their text).
    var json: JSONValue {
        switch content {
        case .mapping(let pairs):
            return .object(pairs.map { pair in
                if case .scalar(let key, _) = pair.key.content { return (key, pair.value.json) }
                return (pair.key.json.serialized, pair.value.json)
            })
        case .sequence(let items):
            return .array(items.map(\.json))
        case .scalar(let text, let style):
            guard style == .plain else { return .string(text) }
            if isNull { return .null }
            switch text {
            case "true", "True", "TRUE": return .bool(true)
            case "false", "False", "FALSE": return .bool(false)
            default: break
            }
            if IntegerSyntax.isDecimal(text), let value = Int(text) { return .int(value) }
            if IntegerSyntax.isFloat(text), let value = Double(text) { return .double(value) }
            return .string(text)
        }
    }
}
