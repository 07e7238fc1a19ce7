import Testing
@testable import Config

@Suite struct YAMLParserTests {
    @Test func positionsAreOneBasedForKeysAndValues() throws {
        let root = try #require(try YAMLParser(text: "a: 1\nlist:\n  - x: \"y\"\n    z: 'w'\n").parseSingleDocument())
        guard case .mapping(let pairs) = root.content else { Issue.record("not a mapping"); return }
        #expect((root.line, root.column) == (1, 1))
        #expect((pairs[0].key.line, pairs[0].key.column, pairs[0].value.line, pairs[0].value.column) == (1, 1, 1, 4))
        guard case .sequence(let items) = pairs[1].value.content, case .mapping(let inner) = items[0].content else {
            Issue.record("unexpected shape")
            return
        }
        #expect((items[0].line, items[0].column) == (3, 5))
        #expect((inner[1].value.line, inner[1].value.column) == (4, 8))
        guard case .scalar(let text, let style) = inner[0].value.content else { Issue.record("not a scalar"); return }
        #expect(text == "y" && style == .doubleQuoted)
    }

    @Test func columnsCountCharactersNotBytes() throws {
        let root = try #require(try YAMLParser(text: "é: ü\n").parseSingleDocument())
        guard case .mapping(let pairs) = root.content else { Issue.record("not a mapping"); return }
        #expect(pairs[0].value.column == 4)
    }

    @Test func nullsAndStyles() throws {
        let root = try #require(try YAMLParser(text: "a:\nb: ~\nc: null\nd: \"\"\ne: 'null'\n").parseSingleDocument())
        guard case .mapping(let pairs) = root.content else { Issue.record("not a mapping"); return }
        #expect(pairs.map(\.value.isNull) == [true, true, true, false, false])
    }

    @Test func emptyStreamHasNoRoot() throws {
        #expect(try YAMLParser(text: "").parseSingleDocument() == nil)
        #expect(try YAMLParser(text: "# only a comment\n").parseSingleDocument() == nil)
    }

    @Test func syntaxErrorPosition() {
        #expect(throws: YAMLError.self) { try YAMLParser(text: "a: [\n").parseSingleDocument() }
        do {
            _ = try YAMLParser(text: "a: b\n  c: d\n").parseSingleDocument()
            Issue.record("expected an error")
        } catch {
            #expect((error.line, error.column) == (2, 4))
            #expect(error.message == "YAML syntax error: mapping values are not allowed in this context")
        }
    }

    @Test func selfReferencingAliasIsBounded() {
        #expect(throws: YAMLError.self) { try YAMLParser(text: "a: &x [*x]\n").parseSingleDocument() }
    }
}
