/// Typed readers for scalar values. Each reports a problem at the value's position and returns nil.
///
/// Strings take the scalar's text as written, whatever YAML would type it as (`name: 1234`, `value: 01`), since
/// the user obviously meant that text. Numbers and booleans must be unquoted: a quoted "1883" is a string in
/// YAML, and accepting it would make the type rules guesswork.
extension ConfigValidator {
    mutating func string(_ node: YAMLNode, key: String, context: String, secret: Bool = false) -> String? {
        guard case .scalar(let text, _) = node.content, !node.isNull else {
            let got = secret && !node.isNull ? "a non-string value" : node.kindDescription
            report(node, "\(key) in \(context) must be a string, got \(got)")
            return nil
        }
        return text
    }

    mutating func nonEmptyString(_ node: YAMLNode, key: String, context: String) -> String? {
        guard let text = string(node, key: key, context: context) else { return nil }
        guard !text.isEmpty else {
            report(node, "\(key) in \(context) must not be empty")
            return nil
        }
        return text
    }

    mutating func integer(_ node: YAMLNode, key: String, context: String, range: ClosedRange<Int>) -> Int? {
        let expectation = "\(key) in \(context) must be an integer from \(range.lowerBound) to \(range.upperBound)"
        guard case .scalar(let text, let style) = node.content, !node.isNull, style == .plain,
              IntegerSyntax.isDecimal(text) else {
            report(node, "\(expectation), got \(node.kindDescription)\(quotedNumberHint(node))")
            return nil
        }
        guard let value = Int(text), range.contains(value) else {
            report(node, "\(expectation), got \(text)")
            return nil
        }
        return value
    }

    mutating func bool(_ node: YAMLNode, key: String, context: String) -> Bool? {
        if case .scalar(let text, .plain) = node.content {
            switch text {
            case "true", "True", "TRUE": return true
            case "false", "False", "FALSE": return false
            default: break
            }
        }
        var hint = ""
        if case .scalar(let text, let style) = node.content {
            let lowered = text.lowercased()
            if style.isQuoted, lowered == "true" || lowered == "false" {
                hint = " (remove the quotes)"
            } else if ["yes", "no", "on", "off", "y", "n"].contains(lowered) {
                hint = " (YAML 1.2 reads this as a string)"
            }
        }
        report(node, "\(key) in \(context) must be true or false, got \(node.kindDescription)\(hint)")
        return nil
    }

    /// A duration in seconds, integer or decimal, greater than zero (`Seconds`).
    /// A duration in seconds; `minimum` refuses values too small to be meant (an `interval` of 5e-324 s is a busy
    /// loop), naming the minimum.
    mutating func seconds(_ node: YAMLNode, key: String, context: String, minimum: Double? = nil) -> Duration? {
        let expectation = "\(key) in \(context) must be \(Seconds.expectation)"
        guard case .scalar(let text, let style) = node.content, !node.isNull, style == .plain,
              IntegerSyntax.isDecimal(text) || IntegerSyntax.isFloat(text) else {
            report(node, "\(expectation), got \(node.kindDescription)\(quotedNumberHint(node))")
            return nil
        }
        guard let duration = Seconds.parse(text) else {
            report(node, "\(expectation), got \(text)")
            return nil
        }
        if let minimum, duration < .seconds(minimum) {
            report(node, "\(key) in \(context) must be at least \(minimum == minimum.rounded() ? String(Int(minimum)) : String(minimum)) s, got \(text)")
            return nil
        }
        return duration
    }

    /// One of `choices` (the config spellings of an enum).
    mutating func choice<T: RawRepresentable>(_ node: YAMLNode, key: String, context: String, as type: T.Type,
                                              choices: [String]) -> T? where T.RawValue == String {
        guard let text = string(node, key: key, context: context) else { return nil }
        if let value = T(rawValue: text) { return value }
        var message = "\(key) in \(context) must be one of \(choices.joined(separator: ", ")), got \"\(text)\""
        if let suggestion = Suggestion.closest(to: text, in: choices) { message += " (did you mean \"\(suggestion)\"?)" }
        report(node, message)
        return nil
    }

    private func quotedNumberHint(_ node: YAMLNode) -> String {
        guard case .scalar(let text, let style) = node.content, style.isQuoted,
              IntegerSyntax.isDecimal(text) || IntegerSyntax.isFloat(text) else { return "" }
        return " (remove the quotes)"
    }
}

/// YAML 1.2 core-schema number syntax, decimal only.
enum IntegerSyntax {
    static func isDecimal(_ text: String) -> Bool {
        var digits = Substring(text)
        if digits.first == "-" || digits.first == "+" { digits = digits.dropFirst() }
        return !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// `[-+]? (\.[0-9]+ | [0-9]+ (\.[0-9]*)?) ([eE][-+]?[0-9]+)?`
    static func isFloat(_ text: String) -> Bool {
        var chars = Substring(text)
        func digits() -> Int {
            let count = chars.prefix(while: { $0.isASCII && $0.isNumber }).count
            chars = chars.dropFirst(count)
            return count
        }
        if chars.first == "-" || chars.first == "+" { chars = chars.dropFirst() }
        var mantissa = digits()
        if chars.first == "." {
            chars = chars.dropFirst()
            mantissa += digits()
        }
        guard mantissa > 0 else { return false }
        if chars.first == "e" || chars.first == "E" {
            chars = chars.dropFirst()
            if chars.first == "-" || chars.first == "+" { chars = chars.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return chars.isEmpty
    }
}
