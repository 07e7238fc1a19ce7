/// Where to cut a run of UTF-8 bytes into pieces of bounded size.
enum UTF8Cut {
    /// The largest cut ≤ `limit` that does not split a multi-byte sequence, so each piece decodes on its own
    /// without U+FFFD at its edges. Falls back to `limit` when backing off would leave an empty piece or the
    /// bytes are not valid UTF-8 there anyway.
    static func point(in bytes: ArraySlice<UInt8>, limit: Int) -> Int {
        guard bytes.count > limit else { return bytes.count }
        let base = bytes.startIndex
        var cut = limit
        var steps = 0
        while steps < 3, cut > 0, isContinuation(bytes[base + cut]) {
            cut -= 1
            steps += 1
        }
        if cut > 0, cut < limit, bytes[base + cut] >= 0xC0, sequenceLength(bytes[base + cut]) > limit - cut {
            return cut
        }
        return limit
    }

    private static func isContinuation(_ byte: UInt8) -> Bool {
        byte & 0xC0 == 0x80
    }

    private static func sequenceLength(_ lead: UInt8) -> Int {
        switch lead {
        case 0xC0...0xDF: 2
        case 0xE0...0xEF: 3
        case 0xF0...0xF7: 4
        default: 1
        }
    }

    /// Splits `bytes` into pieces of at most `size` bytes (at least 1), at character boundaries where possible.
    static func pieces(_ bytes: ArraySlice<UInt8>, size: Int) -> [ArraySlice<UInt8>] {
        let size = max(1, size)
        var rest = bytes
        var out: [ArraySlice<UInt8>] = []
        while !rest.isEmpty {
            let cut = point(in: rest, limit: size)
            out.append(rest.prefix(cut))
            rest = rest.dropFirst(cut)
        }
        return out
    }
}
