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
        if refusesBoth("passkey", in: fields, context: context) { return nil }
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
        guard let resolved = secretFilePath(value, key: "passkey_file", context: context, secretsDir: secrets?.directory) else {
            return nil
        }
        if let user = secrets?.inUse[resolved] {
            report(value, "passkey_file in \(context) is already used by device \"\(user)\"; each device needs its own")
            return nil
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

/// What the secret keys share (`passkey`/`passkey_file` here, `bindkey`/`bindkey_file` in ConfigValidator+Adverts).
extension ConfigValidator {
    /// True (and reported at the later of the two) when a secret is given both inline (`key`) and as `<key>_file`.
    mutating func refusesBoth(_ key: String, in fields: MappingFields, context: String) -> Bool {
        guard let inline = fields.keyNode(key), let file = fields.keyNode(key + "_file") else { return false }
        report(inline.line > file.line ? inline : file,
               "\(context) has both \(key) and \(key)_file; use one (\(key)_file is preferred)")
        return true
    }

    /// The path a secret file key (`passkey_file`, `bindkey_file`) names: relative to the config file, or, for a device
    /// from the bridge API (`secretsDir` set), the real path of a file under that directory. nil when that fails
    /// (reported).
    mutating func secretFilePath(_ value: YAMLNode, key: String, context: String, secretsDir: String?) -> String? {
        guard let path = nonEmptyString(value, key: key, context: context) else { return nil }
        guard let secretsDir else { return TextFile.resolve(path, relativeTo: file) }
        // Checked before anything is read, with one answer for every path outside: whoever sends device/add learns
        // nothing about the rest of the file system.
        guard let located = SecretsDirectory.locate(path, in: secretsDir) else {
            report(value, "\(key) in \(context) must name a file in the secrets directory \(secretsDir) (secrets_dir)")
            return nil
        }
        return located
    }
}
