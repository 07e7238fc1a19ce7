/// The `web:` section (docs/web.md).
extension ConfigValidator {
    static let webKeys = ["enabled", "listen", "password_file", "public_url"]

    mutating func web(_ node: YAMLNode) -> WebSettings {
        var settings = WebSettings()
        let context = "web"
        guard let fields = fields(of: node, allowed: Self.webKeys, context: context) else { return settings }
        if let value = fields["enabled"], let enabled = bool(value, key: "enabled", context: context) {
            settings.enabled = enabled
        }
        if let listen = listen(fields, context: context) { settings.listen = listen }
        if let value = fields["password_file"], let path = nonEmptyString(value, key: "password_file", context: context) {
            let resolved = TextFile.resolve(path, relativeTo: file)
            if let password = webPassword(value, resolved) {
                settings.password = password
                settings.passwordFile = SecretFile(path: resolved, mode: TextFile.permissions(resolved))
            }
        }
        if let value = fields["public_url"], let text = nonEmptyString(value, key: "public_url", context: context) {
            if let url = PublicURL.parse(text) {
                settings.publicURL = url
            } else {
                report(value, "public_url in web must be an http:// or https:// URL with a host, got \"\(text)\"")
            }
        }
        if settings.enabled, !settings.listen.isLoopback, fields["password_file"] == nil {
            let at = fields["listen"] ?? fields.keyNode("listen") ?? node
            report(at, "web listens on \(settings.listen), which is not a loopback address: it needs password_file "
                + "(nobody on the network gets the page without a password)")
        }
        return settings
    }

    /// The first line, without surrounding whitespace. Messages name the file, never its content.
    private mutating func webPassword(_ node: YAMLNode, _ path: String) -> Secret? {
        switch TextFile.read(path, limit: TextFile.secretLimit) {
        case .failure(let error):
            report(node, "cannot read password_file \"\(path)\": \(error)")
            return nil
        case .success(let bytes):
            guard let text = String(validating: bytes, as: UTF8.self) else {
                report(node, "password_file \"\(path)\" is not valid UTF-8")
                return nil
            }
            let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let password = line.trimmingWhitespace
            guard !password.isEmpty else {
                report(node, "password_file \"\(path)\" has no password on its first line")
                return nil
            }
            return Secret(password)
        }
    }

    /// A server's `listen` (the web page's, the ESPHome proxy's): nil when absent or not an address (reported).
    mutating func listen(_ fields: MappingFields, context: String) -> WebListen? {
        guard let value = fields["listen"], let text = nonEmptyString(value, key: "listen", context: context) else {
            return nil
        }
        guard let listen = WebListen.parse(text) else {
            report(value, "listen in \(context) must be HOST:PORT or [IPv6]:PORT with a port 1-65535, got \"\(text)\"")
            return nil
        }
        return listen
    }
}

extension Substring {
    fileprivate var trimmingWhitespace: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
