/// Turns the chunks a `text` characteristic notifies into lines (docs/configuration.md#codecs).
///
/// BLE serial bridges (HM-10 and friends) deliver a line in arbitrary fragments of ≤ MTU−3 bytes, so bytes are
/// buffered per channel until the delimiter arrives, which may itself be split across chunks.
public struct TextFramer: Sendable {
    public let delimiter: [UInt8]
    public let maxLine: Int
    /// With the default "\n" delimiter a preceding "\r" is part of the delimiter too, so "\r\n" devices work
    /// without configuration.
    private let acceptsCRLF: Bool
    private var buffer: [UInt8] = []
    /// Bytes of `buffer` already searched without finding a delimiter start.
    private var scanned = 0

    /// An empty `delimiter` turns framing off: every chunk is one message (still cut at `maxLine`).
    public init(delimiter: String = "\n", maxLine: Int = 1024) {
        self.delimiter = Array(delimiter.utf8)
        self.maxLine = max(1, maxLine)
        acceptsCRLF = delimiter == "\n"
    }

    public var hasPending: Bool { !buffer.isEmpty }

    /// Complete lines, without their delimiter, and pieces of lines longer than `maxLine`, in order.
    /// Empty lines are skipped: an empty MQTT payload on a retained topic would delete the retained value.
    public mutating func append(_ chunk: [UInt8]) -> [String] {
        guard !delimiter.isEmpty else {
            return UTF8Cut.pieces(chunk[...], size: maxLine).map(Self.string)
        }
        buffer.append(contentsOf: chunk)
        var lines: [String] = []
        var start = 0
        var searchFrom = scanned
        while let end = firstDelimiter(from: searchFrom) {
            var line = buffer[start..<end]
            if acceptsCRLF, line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            lines += pieces(of: line)
            start = end + delimiter.count
            searchFrom = start
        }
        // What is left has no delimiter; cut it once it is known to be longer than maxLine, not counting
        // trailing bytes that may be the start of a delimiter still in flight.
        var rest = buffer[start...]
        while rest.count - heldBack(rest) > maxLine {
            let cut = UTF8Cut.point(in: rest, limit: maxLine)
            lines.append(Self.string(rest.prefix(cut)))
            rest = rest.dropFirst(cut)
        }
        buffer = Array(rest)
        scanned = max(0, buffer.count - (delimiter.count - 1))
        return lines
    }

    /// The pending partial line, as-is (used when `flush_after` elapses), or nil when nothing is pending.
    public mutating func flush() -> String? {
        guard !buffer.isEmpty else { return nil }
        defer {
            buffer = []
            scanned = 0
        }
        return Self.string(buffer[...])
    }

    private func firstDelimiter(from offset: Int) -> Int? {
        guard buffer.count >= delimiter.count else { return nil }
        var index = offset
        let first = delimiter[0]
        while index <= buffer.count - delimiter.count {
            if buffer[index] == first, buffer[index..<index + delimiter.count].elementsEqual(delimiter) {
                return index
            }
            index += 1
        }
        return nil
    }

    /// The length of the longest proper delimiter prefix at the end of `rest` ("\r" of "\r\n", or a trailing
    /// "\r" in CRLF-accepting mode): those bytes may end the line rather than belong to it.
    private func heldBack(_ rest: ArraySlice<UInt8>) -> Int {
        if acceptsCRLF { return rest.last == UInt8(ascii: "\r") ? 1 : 0 }
        var length = min(delimiter.count - 1, rest.count)
        while length > 0 {
            if rest.suffix(length).elementsEqual(delimiter.prefix(length)) { return length }
            length -= 1
        }
        return 0
    }

    private func pieces(of line: ArraySlice<UInt8>) -> [String] {
        UTF8Cut.pieces(line, size: maxLine).map(Self.string)
    }

    private static func string(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}
