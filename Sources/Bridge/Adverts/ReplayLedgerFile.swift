import Adverts
import Config

#if canImport(Glibc)
import Glibc
#endif

/// Where the replay ledger's marks live between runs (docs/adverts.md, "Replays"): `<state_dir>/replay-counters`,
/// one line per device and key (`ReplayLedger.lines`), no key in it. Kept apart from `devices.d`, which holds configs.
enum ReplayLedgerFile {
    /// Far above one line (~50 bytes) per keyed device of any real config.
    static let limit = 256 * 1024

    static func path(stateDir: String) -> String {
        stateDir.hasSuffix("/") ? stateDir + "replay-counters" : stateDir + "/replay-counters"
    }

    /// The saved marks; none when there is no file yet. A file that cannot be read is an error to log: the bridge
    /// runs on, believing the first counter of each keyed device again.
    static func load(stateDir: String) -> Result<ReplayLedger, FileReadError> {
        switch TextFile.read(path(stateDir: stateDir), limit: limit) {
        case .success(let bytes):
            return .success(ReplayLedger(lines: String(decoding: bytes, as: UTF8.self)))
        case .failure(.system(ENOENT)):
            return .success(ReplayLedger())
        case .failure(let error):
            return .failure(error)
        }
    }

    /// Atomic (a crash leaves the old marks or the new ones); not synced to disk on every counter, which an SD card
    /// would pay for: after a power loss, the marks of the last few seconds may be lost.
    static func save(_ ledger: ReplayLedger, stateDir: String) throws(DropInStore.Failure) {
        try DropInStore.save(ledger.lines, to: path(stateDir: stateDir), replace: true, durable: false)
    }
}
