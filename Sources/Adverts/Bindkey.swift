import Codecs

/// The 16-byte AES key of an encrypted BTHome or Xiaomi device, written as 32 hex digits. A secret: no printing
/// path (`description`, `debugDescription`, `Mirror`, hence `dump` of a config holding it) shows the key.
public struct Bindkey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let bytes: [UInt8]

    /// 32 hex digits, surrounding white space (a file's final newline) ignored; nil for anything else.
    public init?(hex text: String) {
        let trimmed = text.trimmingPrefix(while: \.isWhitespace)
        let digits = String(trimmed.reversed().trimmingPrefix(while: \.isWhitespace).reversed())
        let hexDigit = { (byte: UInt8) in byte < 0x80 && Character(Unicode.Scalar(byte)).isHexDigit }
        guard digits.utf8.count == 32, digits.utf8.allSatisfy(hexDigit),
              let bytes = try? Hex.decode(digits), bytes.count == 16
        else { return nil }
        self.bytes = bytes
    }

    public var description: String { "<bindkey>" }
    public var debugDescription: String { "<bindkey>" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
