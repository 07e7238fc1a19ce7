/// Home Assistant only accepts `[a-zA-Z0-9_-]` in the node and object levels of a discovery topic (its discovery
/// TOPIC_MATCHER), while channel topic levels may hold any character but `+ # /`. A level that needs rewriting gets a
/// hash of its original spelling appended, so two channels that differ only in such characters ("a.b", "a b") still
/// get distinct, stable object ids.
enum DiscoveryObjectID {
    static func make(_ level: String) -> String {
        var safe = ""
        var changed = level.isEmpty
        for scalar in level.unicodeScalars {
            if isAllowed(scalar) {
                safe.unicodeScalars.append(scalar)
            } else {
                safe.append("_")
                changed = true
            }
        }
        guard changed else { return safe }
        return safe + "_" + hex8(fnv1a(Array(level.utf8)))
    }

    static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "_", "-": true
        default: false
        }
    }

    static func isValid(_ level: Substring) -> Bool {
        !level.isEmpty && level.unicodeScalars.allSatisfy(isAllowed)
    }

    /// FNV-1a, 32 bits: stable across runs and platforms, unlike `Hasher`.
    private static func fnv1a(_ bytes: [UInt8]) -> UInt32 {
        var hash: UInt32 = 0x811C_9DC5
        for byte in bytes {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return hash
    }

    private static func hex8(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }
}
