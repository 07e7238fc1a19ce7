/// Splits one libFuzzer input into the pieces a harness needs (a selector byte, a length, the rest), so a single byte
/// string drives several parameters and mutations stay meaningful.
public struct FuzzInput {
    private let bytes: [UInt8]
    private var offset = 0

    public init(_ start: UnsafePointer<UInt8>?, _ count: Int) {
        bytes = start.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    }

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    public var isEmpty: Bool { offset >= bytes.count }

    /// The next byte, or 0 once the input is used up.
    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// Up to `count` bytes.
    public mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + max(0, count))
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    /// A piece whose length is given by the next byte.
    public mutating func chunk() -> [UInt8] {
        take(Int(byte()))
    }

    /// Everything left.
    public mutating func rest() -> [UInt8] {
        take(bytes.count - offset)
    }
}

/// An oracle failure: traps with the message, so libFuzzer records the input as a crash.
public func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                    file: StaticString = #fileID, line: UInt = #line) {
    if !condition() {
        fatalError("oracle failed: \(message())", file: file, line: line)
    }
}
