internal import CYAML

/// A YAML syntax or structure problem, positioned 1-based.
struct YAMLError: Error, Sendable {
    var line: Int
    var column: Int
    var message: String
}

/// Owns one libyaml parser and turns its document into `YAMLNode`s.
///
/// Aliases are expanded into copies, with bounds on depth and total size so a recursive alias or an alias
/// "bomb" fails with an error instead of hanging or exhausting memory.
final class YAMLParser {
    static let maxDepth = 64
    static let maxNodes = 100_000

    private let parser: UnsafeMutablePointer<yaml_parser_t>
    private let input: UnsafeMutableBufferPointer<UInt8>
    /// Bytes of text in `input` (which has room for at least one, even for empty text).
    private let length: Int
    private var convertedNodes = 0

    init(text: String) {
        parser = .allocate(capacity: 1)
        let bytes = Array(text.utf8)
        length = bytes.count
        input = .allocate(capacity: max(1, bytes.count))
        _ = input.initialize(from: bytes)
        yaml_parser_initialize(parser)
        yaml_parser_set_input_string(parser, input.baseAddress, bytes.count)
    }

    deinit {
        yaml_parser_delete(parser)
        parser.deallocate()
        input.deallocate()
    }

    /// The single document's root, or nil for an empty stream.
    func parseSingleDocument() throws(YAMLError) -> YAMLNode? {
        try checkNestingDepth()
        var document = yaml_document_t()
        guard yaml_parser_load(parser, &document) == 1 else { throw syntaxError() }
        defer { yaml_document_delete(&document) }
        guard let root = yaml_document_get_root_node(&document) else { return nil }
        let node = try convert(root, in: &document, depth: 0)

        var next = yaml_document_t()
        guard yaml_parser_load(parser, &next) == 1 else { throw syntaxError() }
        defer { yaml_document_delete(&next) }
        if yaml_document_get_root_node(&next) != nil {
            throw YAMLError(line: Int(next.start_mark.line) + 1, column: Int(next.start_mark.column) + 1,
                            message: "the config must be a single YAML document")
        }
        return node
    }

    /// Refuses a document nested deeper than `maxDepth` before `yaml_parser_load` sees it.
    ///
    /// libyaml's scanner re-checks every open flow level's possible simple key at each token, so its time grows with
    /// the square of the flow nesting depth (40,000 `[` took 8.8 s), long before `convert` could refuse the depth.
    /// Here libyaml's own event stream is read on a separate parser, counting open collections, and stops at the
    /// first one beyond the limit: at most `maxDepth` levels are ever open, so the scan stays linear. Using libyaml's
    /// tokens rather than counting brackets by hand means quotes, comments and block indentation are read exactly
    /// as the real parse will read them. A syntax error ends the scan quietly: the real parse reports it, having
    /// reached it through the same shallow prefix.
    private func checkNestingDepth() throws(YAMLError) {
        let scanner = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
        yaml_parser_initialize(scanner)
        defer {
            yaml_parser_delete(scanner)
            scanner.deallocate()
        }
        yaml_parser_set_input_string(scanner, input.baseAddress, length)
        var open = 0
        while true {
            var event = yaml_event_t()
            guard yaml_parser_parse(scanner, &event) == 1 else { return }
            defer { yaml_event_delete(&event) }
            switch event.type {
            case YAML_STREAM_END_EVENT:
                return
            case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT, YAML_SCALAR_EVENT, YAML_ALIAS_EVENT:
                // The same rule as `convert`: a node inside `maxDepth` collections is one too deep.
                guard open < Self.maxDepth else {
                    throw YAMLError(line: Int(event.start_mark.line) + 1, column: Int(event.start_mark.column) + 1,
                                    message: "the document is nested more than \(Self.maxDepth) levels deep")
                }
                if event.type == YAML_SEQUENCE_START_EVENT || event.type == YAML_MAPPING_START_EVENT { open += 1 }
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                open -= 1
            default:
                break
            }
        }
    }

    private func syntaxError() -> YAMLError {
        let problem = parser.pointee.problem.map { String(cString: $0) } ?? "unknown error"
        var message = "YAML syntax error: \(problem)"
        if let context = parser.pointee.context.map({ String(cString: $0) }) {
            let mark = parser.pointee.context_mark
            message += " (\(context) at line \(mark.line + 1), column \(mark.column + 1))"
        }
        if parser.pointee.error == YAML_READER_ERROR {
            // Reader errors (bad encoding) carry a byte offset instead of a mark.
            let (line, column) = position(ofOffset: parser.pointee.problem_offset)
            return YAMLError(line: line, column: column, message: message)
        }
        let mark = parser.pointee.problem_mark
        return YAMLError(line: Int(mark.line) + 1, column: Int(mark.column) + 1, message: message)
    }

    private func position(ofOffset offset: Int) -> (Int, Int) {
        var line = 1
        var lineStart = 0
        for index in 0..<min(offset, input.count) where input[index] == 0x0A {
            line += 1
            lineStart = index + 1
        }
        let column = String(decoding: input[lineStart..<min(offset, input.count)], as: UTF8.self).count + 1
        return (line, column)
    }

    private func convert(_ node: UnsafeMutablePointer<yaml_node_t>, in document: inout yaml_document_t, depth: Int) throws(YAMLError) -> YAMLNode {
        let mark = node.pointee.start_mark
        let line = Int(mark.line) + 1
        let column = Int(mark.column) + 1
        convertedNodes += 1
        guard depth < Self.maxDepth, convertedNodes <= Self.maxNodes else {
            throw YAMLError(line: line, column: column, message: "the document is nested too deeply or too large (recursive alias?)")
        }
        switch node.pointee.type {
        case YAML_SCALAR_NODE:
            let scalar = node.pointee.data.scalar
            let text = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
            return YAMLNode(content: .scalar(text, Self.style(scalar.style)), line: line, column: column)
        case YAML_SEQUENCE_NODE:
            var items: [YAMLNode] = []
            var item = node.pointee.data.sequence.items.start
            let top = node.pointee.data.sequence.items.top
            while let current = item, current != top {
                guard let child = yaml_document_get_node(&document, current.pointee) else { break }
                items.append(try convert(child, in: &document, depth: depth + 1))
                item = current + 1
            }
            return YAMLNode(content: .sequence(items), line: line, column: column)
        case YAML_MAPPING_NODE:
            var pairs: [YAMLNode.Pair] = []
            var pair = node.pointee.data.mapping.pairs.start
            let top = node.pointee.data.mapping.pairs.top
            while let current = pair, current != top {
                guard let key = yaml_document_get_node(&document, current.pointee.key),
                      let value = yaml_document_get_node(&document, current.pointee.value) else { break }
                pairs.append(YAMLNode.Pair(key: try convert(key, in: &document, depth: depth + 1),
                                           value: try convert(value, in: &document, depth: depth + 1)))
                pair = current + 1
            }
            return YAMLNode(content: .mapping(pairs), line: line, column: column)
        default:
            return YAMLNode(content: .scalar("", .plain), line: line, column: column)
        }
    }

    private static func style(_ style: yaml_scalar_style_t) -> YAMLNode.ScalarStyle {
        switch style {
        case YAML_SINGLE_QUOTED_SCALAR_STYLE: .singleQuoted
        case YAML_DOUBLE_QUOTED_SCALAR_STYLE: .doubleQuoted
        case YAML_LITERAL_SCALAR_STYLE: .literal
        case YAML_FOLDED_SCALAR_STYLE: .folded
        default: .plain
        }
    }
}
