/// One problem in a config file, positioned 1-based; line 0 means the whole file (e.g. it cannot be read).
public struct ConfigIssue: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int
    public var message: String
    /// For a device given as JSON (`device/add`): the JSON path of the offending value (`channels[0].codec`, empty
    /// for the object itself), which replaces file, line and column in the description.
    public var path: String?

    public init(file: String, line: Int, column: Int, message: String, path: String? = nil) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
        self.path = path
    }

    /// `FILE:LINE:COLUMN: message`, the format editors and CI annotate; `PATH: message` for JSON input.
    public var description: String {
        if let path { return path.isEmpty ? message : "\(path): \(message)" }
        return line > 0 ? "\(file):\(line):\(column): \(message)" : "\(file): \(message)"
    }
}

/// Every problem found in a config, in file order; thrown so a user fixes them all in one round.
public struct ConfigErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public var issues: [ConfigIssue]

    public init(issues: [ConfigIssue]) {
        self.issues = issues
    }

    /// One issue per line.
    public var description: String {
        issues.map(\.description).joined(separator: "\n")
    }
}
