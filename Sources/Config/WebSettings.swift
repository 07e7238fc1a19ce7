/// The `web:` section (docs/web.md): the page the daemon serves to a browser.
///
/// On by default, but only on loopback: a page that can add devices and send commands must not reach the network
/// unless a password guards it, so any other listen address needs `password_file` (checked when the config loads).
public struct WebSettings: Sendable, Equatable {
    public static let defaultListen = WebListen(host: "127.0.0.1", port: 8780)

    public var enabled = true
    public var listen = WebSettings.defaultListen
    /// The first line of `password_file`, read when the config loads; nil: no login (loopback only).
    public var password: Secret?
    public var passwordFile: SecretFile?
    /// Where people reach the page from outside (a reverse proxy, a host name): Home Assistant links each device to
    /// its page there, and its host is accepted in `Host` headers.
    public var publicURL: PublicURL?

    public init() {}
}

/// `host:port`, or `[v6]:port`.
public struct WebListen: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// "127.0.0.1:8780", "[::1]:8780", "localhost:8780", "0.0.0.0:8780", "[::]:8780".
    public static func parse(_ text: String) -> WebListen? {
        let host: Substring, portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }), host.contains(":") else {
                return nil
            }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            let allowed = host.unicodeScalars.allSatisfy { scalar in
                (scalar.isASCII && (Character(scalar).isLetter || Character(scalar).isNumber)) || scalar == "." || scalar == "-"
            }
            guard !host.isEmpty, allowed else { return nil }
        }
        guard let port = Int(portText), (1...65535).contains(port), portText.allSatisfy(\.isNumber) else { return nil }
        return WebListen(host: String(host), port: port)
    }

    /// Reachable from this machine only.
    public var isLoopback: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// `public_url`: `http(s)://host[:port][/path]`, kept as given less a trailing `/`.
public struct PublicURL: Sendable, Equatable, CustomStringConvertible {
    public let text: String
    /// Lowercased, with the port when one is given (what a browser sends in `Host`).
    public let hostAndPort: String
    public let isHTTPS: Bool

    public static func parse(_ raw: String) -> PublicURL? {
        let lower = raw.lowercased()
        let https = lower.hasPrefix("https://")
        guard https || lower.hasPrefix("http://") else { return nil }
        guard raw.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && !"\"<>\\^`{|}".unicodeScalars.contains($0) })
        else { return nil }
        let rest = lower.dropFirst(https ? 8 : 7)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var text = raw
        while text.hasSuffix("/") { text.removeLast() }
        return PublicURL(text: text, hostAndPort: String(authority), isHTTPS: https)
    }

    public var description: String { text }
}
