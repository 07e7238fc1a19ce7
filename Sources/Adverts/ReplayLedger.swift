import Codecs

/// The replay rule of encrypted broadcasts (docs/adverts.md, "Replays"): under one key, a packet is believed only
/// when its encryption counter is above every counter ever accepted under that key from that sender. The counter is
/// part of the AES-CCM nonce, so a device never sends one twice; any capture an attacker holds carries a counter at
/// or below the mark, and stays worthless however the packets are ordered or how often the bridge restarts (the
/// marks are saved, `lines` and `init(lines:)`).
///
/// A real device whose counter goes back (a battery change, a factory reset) is not believed either: the user re-arms
/// it (`rearm`), which is the one way a mark goes down. Pure and bounded: one entry per (address, key) that decrypted
/// at least once, pruned to the configured keyed devices by `keep`.
public struct ReplayLedger: Sendable, Equatable {
    /// Who a mark belongs to: the sender's address and a fingerprint of the key, so a new bindkey starts afresh and
    /// the saved file names no key.
    public struct Entry: Hashable, Sendable, Comparable {
        public var address: String
        public var key: KeyFingerprint

        public init(address: String, key: KeyFingerprint) {
            self.address = address
            self.key = key
        }

        public static func < (lhs: Entry, rhs: Entry) -> Bool {
            (lhs.address, lhs.key.hex) < (rhs.address, rhs.key.hex)
        }
    }

    public enum Verdict: Sendable, Equatable {
        /// Above the mark: believed, and the mark is now this counter.
        case fresh
        /// The mark itself: the same packet heard again (a second adapter, the device's own repeats).
        case repeated
        /// Below the mark: a replay, or a device that counted from zero again; not believed.
        case wentBack(mark: UInt32)
    }

    public private(set) var marks: [Entry: UInt32] = [:]

    public init() {}

    public mutating func admit(_ counter: UInt32, under entry: Entry) -> Verdict {
        guard let mark = marks[entry] else {
            marks[entry] = counter
            return .fresh
        }
        if counter == mark { return .repeated }
        if counter < mark { return .wentBack(mark: mark) }
        marks[entry] = counter
        return .fresh
    }

    /// Forgets every mark of `address`: its next packet is believed, whatever its counter.
    public mutating func rearm(address: String) {
        marks = marks.filter { $0.key.address != address }
    }

    /// Keeps only the marks of these entries (the configured devices' addresses and keys).
    public mutating func keep(_ entries: Set<Entry>) {
        marks = marks.filter { entries.contains($0.key) }
    }

    // MARK: The saved form

    /// One line per mark, `<address> <key fingerprint> <counter>`, sorted: what the bridge saves in its `state_dir`.
    public var lines: String {
        marks.keys.sorted().map { "\($0.address) \($0.key.hex) \(marks[$0]!)\n" }.joined()
    }

    /// The marks of a saved file. A line that does not read is skipped (a damaged file loses those marks, it does
    /// not stop the bridge); of two lines for one entry the higher counter wins. At most `maxEntries` are read, so a
    /// file that grew by accident cannot grow the bridge.
    public init(lines text: String, maxEntries: Int = 4096) {
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            guard marks.count < maxEntries else { break }
            let fields = line.split(separator: " ")
            guard fields.count == 3, fields[0].utf8.count <= 17, let key = KeyFingerprint(hex: String(fields[1])),
                  let counter = UInt32(fields[2]) else { continue }
            let entry = Entry(address: String(fields[0]), key: key)
            marks[entry] = max(marks[entry] ?? 0, counter)
        }
    }
}

/// Eight bytes that tell keys apart without revealing them: the AES-CCM tag, under the key, of an empty message with
/// a fixed nonce (a key check value, as payment systems print beside a key). Finding the key from it is breaking AES.
public struct KeyFingerprint: Hashable, Sendable {
    public let bytes: [UInt8]

    public init?(key: [UInt8]) {
        guard let sealed = AESCCM.encrypt(key: key, nonce: Array("gattbridge-kcv".utf8.prefix(13)), plaintext: [],
                                          tagLength: 8) else { return nil }
        bytes = sealed.tag
    }

    init?(hex: String) {
        guard hex.utf8.count == 16, let bytes = try? Hex.decode(hex), bytes.count == 8 else { return nil }
        self.bytes = bytes
    }

    public var hex: String {
        Hex.encode(bytes)
    }
}
