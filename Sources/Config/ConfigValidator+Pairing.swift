/// The per-device pairing keys of docs/pairing.md: `pairing`, `passkey_file`, `passkey`.
extension ConfigValidator {
    static let pairingKeys = ["pairing", "passkey", "passkey_file"]

    /// nil when something is wrong (reported at the offending key); `.none` when no key is given. `secrets` is set
    /// for a device from the bridge API: its `passkey_file` must lie under that directory and not be another
    /// device's (the real paths in use, with the device using each).
    mutating func pairing(_ fields: MappingFields, context: String,
                          secrets: (directory: String, inUse: [String: String])? = nil) -> PairingConfig? {
        var mode = PairingMode.none
        if let value = fields["pairing"] {
            guard let text = string(value, key: "pairing", context: context) else { return nil }
            guard let parsed = PairingMode(rawValue: text) else {
                let choices = PairingMode.allCases.map(\.rawValue).joined(separator: ", ")
                report(value, "pairing in \(context) must be one of \(choices), got \"\(text)\"")
                return nil
            }
            mode = parsed
        }
        let inline = fields["passkey"], fileNode = fields["passkey_file"]
        if inline != nil || fileNode != nil, mode != .passkey {
            let key = fields.keyNode("passkey") ?? fields.keyNode("passkey_file")!
            report(key, "\(inline != nil ? "passkey" : "passkey_file") in \(context) needs pairing: passkey")
            return nil
        }
        guard mode == .passkey else { return PairingConfig(mode: mode) }
        if inline != nil, fileNode != nil {
            let later = fields.keyNode("passkey")!.line > fields.keyNode("passkey_file")!.line
                ? fields.keyNode("passkey")! : fields.keyNode("passkey_file")!
            report(later, "\(context) has both passkey and passkey_file; use one (passkey_file is preferred)")
            return nil
        }
        if let inline {
            // The text is never echoed: it is a secret even when malformed (a typo of the real one).
            guard case .scalar(let text, _) = inline.content, !inline.isNull,
                  PairingConfig.parsePasskey(text) != nil else {
                report(inline, "passkey in \(context) must be six digits")
                return nil
            }
            return PairingConfig(mode: .passkey, passkey: Secret(text))
        }
        guard let value = fileNode else {
            let key = fields.keyNode("pairing")!
            report(key, "\(context) has pairing: passkey but neither passkey_file nor passkey")
            return nil
        }
        guard let path = nonEmptyString(value, key: "passkey_file", context: context) else { return nil }
        var resolved = TextFile.resolve(path, relativeTo: file)
        if let secrets {
            // Checked before anything is read, with one answer for every path outside: whoever sends device/add
            // learns nothing about the rest of the file system.
            guard let located = SecretsDirectory.locate(path, in: secrets.directory) else {
                report(value, "passkey_file in \(context) must name a file in the secrets directory \(secrets.directory) "
                    + "(secrets_dir)")
                return nil
            }
            if let user = secrets.inUse[located] {
                report(value, "passkey_file in \(context) is already used by device \"\(user)\"; each device needs its own")
                return nil
            }
            resolved = located
        }
        switch PairingConfig.readPasskey(file: resolved) {
        case .failure(let problem):
            report(value, problem.description)
            return nil
        case .success(let text):
            return PairingConfig(mode: .passkey, passkey: Secret(text),
                                 passkeyFile: SecretFile(path: resolved, mode: TextFile.permissions(resolved)))
        }
    }
}
