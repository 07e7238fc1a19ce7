import Bluetooth

/// Telling "the peripheral wants a paired, encrypted link" apart from other failures, for the hint docs/pairing.md asks for.
extension BlueZError {
    /// ATT errors meaning the link is not secure enough: 0x05 Insufficient Authentication, 0x08 Insufficient
    /// Authorization, 0x0c Insufficient Encryption Key Size, 0x0f Insufficient Encryption. BlueZ 5.66 answers an
    /// unpaired read of an `encrypt-authenticated-*` characteristic with 0x0e (Unlikely Error) after its own attempt
    /// to raise security failed, so that one counts too (checked on real BlueZ, see the pairing notes).
    static let securityATTCodes = ["0x05", "0x08", "0x0c", "0x0e", "0x0f"]

    /// True when a read, write or subscription most likely failed because the device needs pairing.
    public var suggestsPairing: Bool {
        switch self {
        case .failed(let reason):
            let lowered = reason.lowercased()
            if let range = lowered.firstRange(of: "att error: ") {
                let code = lowered[range.upperBound...].prefix(4)
                return Self.securityATTCodes.contains(String(code))
            }
            return lowered.contains("insufficient authentication") || lowered.contains("insufficient encryption")
        case .notPaired, .notAuthorized, .authenticationFailed, .authenticationRejected, .authenticationCanceled,
             .authenticationTimeout:
            return true
        case .other(_, let message):
            let lowered = message.lowercased()
            return lowered.contains("authentication") || lowered.contains("encryption")
        default:
            return false
        }
    }

    /// The one-off commands' form of the hint (`read`, `write`, `listen`): they have no config to set `pairing` in,
    /// so it names the command that bonds instead.
    public func pairingAdvice(address: BluetoothAddress) -> String? {
        guard suggestsPairing else { return nil }
        return "the device seems to need pairing (insufficient authentication or encryption): run gattbridge pair \(address) first"
    }
}
