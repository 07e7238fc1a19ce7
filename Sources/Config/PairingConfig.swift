/// How a device is paired (docs/pairing.md): `pairing: none | just_works | passkey` and, for `passkey`, its six digits from
/// `passkey_file` (preferred) or `passkey`.
public enum PairingMode: String, Sendable, Equatable, CaseIterable {
    case none
    case justWorks = "just_works"
    case passkey
}

/// A device's pairing settings. The passkey is a `Secret`, so no log line, error or dump shows it.
public struct PairingConfig: Sendable, Equatable {
    public var mode: PairingMode
    /// The six digits; set exactly when `mode` is `passkey`.
    public var passkey: Secret?
    /// Where the passkey was read from (nil: written inline in the config, which `config check` warns about).
    public var passkeyFile: SecretFile?

    public init(mode: PairingMode = .none, passkey: Secret? = nil, passkeyFile: SecretFile? = nil) {
        self.mode = mode
        self.passkey = passkey
        self.passkeyFile = passkeyFile
    }

    public static let none = PairingConfig()

    /// The number BlueZ's `RequestPasskey` answers with (`u`).
    public var passkeyNumber: UInt32? {
        passkey.flatMap { Self.parsePasskey($0.value) }
    }

    /// Exactly six ASCII digits (leading zeros allowed): what a peripheral's keypad or label shows.
    public static func parsePasskey(_ text: String) -> UInt32? {
        guard text.utf8.count == 6, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return UInt32(text)
    }
}

extension PairingConfig {
    public struct PasskeyFileProblem: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Reads a passkey file: six digits, a trailing newline allowed. The problem names the file, never its content.
    public static func readPasskey(file path: String) -> Result<String, PasskeyFileProblem> {
        switch TextFile.read(path, limit: TextFile.secretLimit) {
        case .failure(let error):
            return .failure(PasskeyFileProblem(description: "cannot read passkey_file \"\(path)\": \(error)"))
        case .success(let bytes):
            // A trailing newline (echo 123456 > file) is not part of the passkey.
            let digits = bytes.reversed().drop { $0 == 0x0A || $0 == 0x0D || $0 == 0x20 || $0 == 0x09 }.reversed()
            let text = String(decoding: Array(digits), as: UTF8.self)
            guard parsePasskey(text) != nil else {
                return .failure(PasskeyFileProblem(description: "passkey_file \"\(path)\" must hold six digits"))
            }
            return .success(text)
        }
    }
}
