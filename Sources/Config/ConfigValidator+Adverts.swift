import Adverts
import Codecs

/// Passive broadcasts (docs/adverts.md): the top-level `adverts:` section and a device's `advert`, `bindkey_file` and
/// `bindkey` keys, and `allow_plaintext`.
extension ConfigValidator {
    static let advertsKeys = ["enabled", "auto", "auto_limit", "timeout"]
    static let advertDeviceKeys = ["advert", "bindkey", "bindkey_file", "allow_plaintext"]
    /// Every unsaved broadcaster costs a little memory and a few retained topics; ten thousand is far beyond any
    /// home, and small enough that a typo (`auto_limit: 1000000000`) is caught.
    static let autoLimitRange = 0...10_000

    mutating func adverts(_ node: YAMLNode) -> AdvertSettings {
        var settings = AdvertSettings()
        let context = "adverts"
        guard let fields = fields(of: node, allowed: Self.advertsKeys, context: context) else { return settings }
        if let value = fields["enabled"], let enabled = bool(value, key: "enabled", context: context) {
            settings.enabled = enabled
        }
        if let value = fields["auto"], let formats = advertFormats(value) {
            settings.auto = formats
        }
        if let value = fields["auto_limit"],
           let limit = integer(value, key: "auto_limit", context: context, range: Self.autoLimitRange) {
            settings.autoLimit = limit
        }
        if let value = fields["timeout"], let timeout = seconds(value, key: "timeout", context: context) {
            settings.timeout = timeout
        }
        return settings
    }

    /// `auto: [bthome, xiaomi]`: each format once. `auto:` with nothing after it is an empty list.
    private mutating func advertFormats(_ node: YAMLNode) -> [AdvertFormat]? {
        if node.isNull { return [] }
        guard case .sequence(let items) = node.content else {
            report(node, "auto in adverts must be a list of formats (\(Self.formatNames.joined(separator: ", "))), "
                + "got \(node.kindDescription)")
            return nil
        }
        var formats: [AdvertFormat] = []
        var seen: [AdvertFormat: YAMLNode] = [:]
        var failed = false
        for item in items {
            guard let format = choice(item, key: "auto", context: "adverts", as: AdvertFormat.self,
                                      choices: Self.formatNames) else {
                failed = true
                continue
            }
            if let first = seen[format] {
                report(item, "duplicate format \"\(format.rawValue)\" in auto of adverts (first at \(first.position))")
                failed = true
                continue
            }
            seen[format] = item
            formats.append(format)
        }
        return failed ? nil : formats
    }

    static var formatNames: [String] { AdvertFormat.allCases.map(\.rawValue) }
    /// The formats with an encrypted variant, the only ones a bindkey is for.
    static let encryptedFormats: Set<AdvertFormat> = [.bthome, .xiaomi]

    /// A device's broadcast settings: `advert` and its key. nil when something is wrong (reported at the offending
    /// key). `secretsDir` is set for a device from the bridge API: its `bindkey_file` must lie under that directory.
    mutating func deviceAdvert(_ fields: MappingFields, context: String, secretsDir: String?) -> DeviceAdvert? {
        var advert: AdvertSelection?
        if let value = fields["advert"] {
            guard let text = string(value, key: "advert", context: context) else { return nil }
            guard let selection = AdvertSelection(text) else {
                let choices = ["auto"] + Self.formatNames
                var message = "advert in \(context) must be one of \(choices.joined(separator: ", ")), "
                    + "got \"\(ReportText.escaped(text))\""
                if let suggestion = Suggestion.closest(to: text, in: choices) { message += " (did you mean \"\(suggestion)\"?)" }
                report(value, message)
                return nil
            }
            advert = selection
        }
        var allowPlaintext = false
        if let value = fields["allow_plaintext"] {
            guard let allowed = bool(value, key: "allow_plaintext", context: context) else { return nil }
            guard fields["bindkey"] != nil || fields["bindkey_file"] != nil else {
                // Without a key every frame is plaintext already: the key would mislead about what it protects.
                report(fields.keyNode("allow_plaintext")!, "allow_plaintext in \(context) is for a device with a bindkey")
                return nil
            }
            allowPlaintext = allowed
        }
        let inline = fields["bindkey"], fileNode = fields["bindkey_file"]
        guard inline != nil || fileNode != nil else { return DeviceAdvert(selection: advert) }
        guard advert != nil else {
            let key = inline != nil ? "bindkey" : "bindkey_file"
            report(fields.keyNode(key)!, "\(key) in \(context) needs advert: (the format of its broadcasts, or auto)")
            return nil
        }
        if case .format(let format) = advert, !Self.encryptedFormats.contains(format) {
            let key = inline != nil ? "bindkey" : "bindkey_file"
            report(fields.keyNode(key)!, "\(key) in \(context) is of no use with advert: \(format.rawValue) (only bthome and "
                + "xiaomi broadcasts are encrypted)")
            return nil
        }
        if refusesBoth("bindkey", in: fields, context: context) { return nil }
        if let inline {
            // Never echoed: a malformed key is still most of the real one.
            guard case .scalar(let text, _) = inline.content, !inline.isNull, let key = Bindkey(hex: text) else {
                report(inline, "bindkey in \(context) must be 32 hex digits")
                return nil
            }
            return DeviceAdvert(selection: advert, bindkey: key, allowPlaintext: allowPlaintext)
        }
        // A bindkey is never sent anywhere (it only decrypts what the device says), so unlike a passkey file one may
        // serve two devices.
        guard let value = fileNode,
              let resolved = secretFilePath(value, key: "bindkey_file", context: context, secretsDir: secretsDir) else {
            return nil
        }
        switch Self.readBindkey(file: resolved) {
        case .failure(let problem):
            report(value, problem.description)
            return nil
        case .success(let key):
            return DeviceAdvert(selection: advert, bindkey: key,
                                bindkeyFile: SecretFile(path: resolved, mode: TextFile.permissions(resolved)),
                                allowPlaintext: allowPlaintext)
        }
    }

    /// A bindkey file: 32 hex digits, surrounding white space (a final newline) allowed. The problem names the file,
    /// never its content.
    static func readBindkey(file path: String) -> Result<Bindkey, BindkeyFileProblem> {
        switch TextFile.read(path, limit: TextFile.secretLimit) {
        case .failure(let error):
            return .failure(BindkeyFileProblem(description: "cannot read bindkey_file \"\(path)\": \(error)"))
        case .success(let bytes):
            guard let text = String(validating: bytes, as: UTF8.self), let key = Bindkey(hex: text) else {
                return .failure(BindkeyFileProblem(description: "bindkey_file \"\(path)\" must hold 32 hex digits"))
            }
            return .success(key)
        }
    }
}

/// A device's validated broadcast settings, before they go into its `DeviceConfig`.
struct DeviceAdvert {
    var selection: AdvertSelection?
    var bindkey: Bindkey?
    var bindkeyFile: SecretFile?
    var allowPlaintext = false
}

/// Why a bindkey file cannot be used; names the file, never what it holds.
struct BindkeyFileProblem: Error, CustomStringConvertible {
    var description: String
}
