import Glibc

/// Where the server listens: "127.0.0.1:8780", "0.0.0.0:8780", "[::]:8780" (both IPv6 and IPv4), "[::1]:8780",
/// "localhost:8780" (127.0.0.1: one address, so that the page is not reachable by surprise on another). Port 0 takes
/// any free port (tests). Shared by the bridge's servers (the web page's, the ESPHome API's).
public struct ListenAddress: Sendable {
    public enum Failure: Error, Equatable {
        case addressInUse(String)
        case cannotListen(String, errno: Int32)
    }

    enum Host: Sendable {
        case v4(in_addr)
        case v6(in6_addr)
    }

    let host: Host
    public let port: UInt16

    public init?(_ text: String) {
        let hostText: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                return nil
            }
            hostText = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
            var address = in6_addr()
            guard inet_pton(AF_INET6, String(hostText), &address) == 1 else { return nil }
            host = .v6(address)
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            hostText = text[..<colon]
            portText = text[text.index(after: colon)...]
            var address = in_addr()
            let name = hostText == "localhost" ? "127.0.0.1" : String(hostText)
            guard inet_pton(AF_INET, name, &address) == 1 else { return nil }
            host = .v4(address)
        }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCII), let port = UInt16(portText) else { return nil }
        self.port = port
    }

    public var isIPv6: Bool {
        if case .v6 = host { return true }
        return false
    }

    /// A non-blocking listening socket bound to the address, and the port it got.
    public func listen(backlog: Int32, text: String) throws(Failure) -> (fd: Int32, port: UInt16) {
        let family = isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
                        | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .cannotListen(text, errno: errno) }
        var on: Int32 = 1
        // A restart finds the port free although the last run's connections linger in TIME_WAIT.
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var bound: Int32
        switch host {
        case .v4(let address):
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = port.bigEndian
            sa.sin_addr = address
            bound = withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .v6(var address):
            // "[::]" is both families (what people mean by "every address"); a specific IPv6 address only its own.
            var v6only: Int32 = withUnsafeBytes(of: &address) { $0.allSatisfy { $0 == 0 } } ? 0 : 1
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &v6only, socklen_t(MemoryLayout<Int32>.size))
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = port.bigEndian
            sa.sin6_addr = address
            bound = withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
        if bound != 0 || Glibc.listen(fd, backlog) != 0 {
            let error = errno
            close(fd)
            throw error == EADDRINUSE ? .addressInUse(text) : .cannotListen(text, errno: error)
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = withUnsafeBytes(of: &storage) { raw -> UInt16 in
            // sin_port and sin6_port are both the two bytes after the family.
            UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
        }
        return (fd, port)
    }
}

/// The peer's address as text, without the port; an IPv4-mapped IPv6 address as the IPv4 one.
public func peerText(_ storage: inout sockaddr_storage) -> String {
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    switch Int32(storage.ss_family) {
    case AF_INET:
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sa in
                var address = sa.pointee.sin_addr
                return inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count)).map { String(cString: $0) } ?? ""
            }
        }
    case AF_INET6:
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sa in
                var address = sa.pointee.sin6_addr
                let text = inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)).map { String(cString: $0) } ?? ""
                return text.hasPrefix("::ffff:") && text.contains(".") ? String(text.dropFirst(7)) : text
            }
        }
    default:
        return ""
    }
}
