/// Loads and validates a gattbridge config (docs/configuration.md).
public enum ConfigLoader {
    /// Reads `path` and parses it; `path` is used as written in every issue.
    public static func load(path: String) throws(ConfigErrors) -> BridgeConfig {
        let bytes: [UInt8]
        switch TextFile.read(path, limit: TextFile.configLimit) {
        case .success(let contents): bytes = contents
        case .failure(let error):
            throw ConfigErrors(issues: [ConfigIssue(file: path, line: 0, column: 0, message: "cannot read the config: \(error)")])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigErrors(issues: [invalidUTF8Issue(bytes, file: path)])
        }
        return try parse(text, file: path)
    }

    /// Parses config text. `file` names it in issues, and relative `password_file` paths are resolved against
    /// its directory.
    public static func parse(_ text: String, file: String) throws(ConfigErrors) -> BridgeConfig {
        let root: YAMLNode?
        do throws(YAMLError) {
            root = try YAMLParser(text: text).parseSingleDocument()
        } catch {
            throw ConfigErrors(issues: [ConfigIssue(file: file, line: error.line, column: error.column, message: error.message)])
        }
        var validator = ConfigValidator(file: file)
        let config = validator.validate(root)
        guard validator.issues.isEmpty else {
            let sorted = validator.issues.enumerated().sorted {
                ($0.element.line, $0.element.column, $0.offset) < ($1.element.line, $1.element.column, $1.offset)
            }
            throw ConfigErrors(issues: sorted.map(\.element))
        }
        return config
    }

    /// Points at the line holding the first byte that is not UTF-8.
    private static func invalidUTF8Issue(_ bytes: [UInt8], file: String) -> ConfigIssue {
        var line = 1
        for lineBytes in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            if String(validating: lineBytes, as: UTF8.self) == nil { break }
            line += 1
        }
        return ConfigIssue(file: file, line: line, column: 1, message: "the config is not valid UTF-8")
    }
}
