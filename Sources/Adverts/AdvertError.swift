/// Why a broadcast yields nothing. A malformed or undecryptable broadcast is an error, never a guessed value.
public enum AdvertError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No data of the requested format(s) in the broadcast.
    case notRecognised
    /// The data is of the format but cannot be read: too short, a bad length, an unknown version.
    case malformed(String)
    /// The broadcast is encrypted and no bindkey was given.
    case bindkeyNeeded
    /// The bindkey is not 16 bytes (32 hex digits).
    case badBindkey
    /// Authentication failed: wrong bindkey, or altered bytes.
    case decryptionFailed
    /// A plaintext broadcast from a device configured with a bindkey: refused, as an attacker could send it.
    case unencryptedWithBindkey
    /// The format is known but this variant is not decoded (e.g. Xiaomi's legacy v2/v3 encryption).
    case unsupported(String)
    /// The format's encryption needs the sender's address and none was given nor carried in the frame.
    case addressNeeded

    public var description: String {
        switch self {
        case .notRecognised: "no broadcast of a known format"
        case .malformed(let why): "malformed broadcast: \(why)"
        case .bindkeyNeeded: "the broadcast is encrypted and no bindkey is set"
        case .badBindkey: "the bindkey must be 16 bytes (32 hex digits)"
        case .decryptionFailed: "decryption failed (wrong bindkey?)"
        case .unencryptedWithBindkey: "unencrypted broadcast from a device with a bindkey (ignored)"
        case .unsupported(let what): "unsupported: \(what)"
        case .addressNeeded: "decryption needs the sender's address"
        }
    }
}
