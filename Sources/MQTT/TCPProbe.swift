internal import CMosquitto
import Glibc

/// A bounded TCP connect to the broker's address, closed at once: proves the address answers before a blocking
/// libmosquitto connect is allowed to run (see `MosquittoHandle.connect`).
enum TCPProbe {
    /// `(MOSQ_ERR_SUCCESS, 0)` when some address of `host` accepted a connection within the timeout; otherwise
    /// `(MOSQ_ERR_EAI, 0)` for a failed lookup or `(MOSQ_ERR_ERRNO, errno)` for the last connect's error
    /// (ETIMEDOUT when nothing answered in time).
    static func connect(host: String, port: Int, timeoutMilliseconds: Int32) -> (rc: Int32, errno: Int32) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            return (Int32(MOSQ_ERR_EAI.rawValue), 0)
        }
        defer { freeaddrinfo(first) }
        let deadline = MonotonicClock.nanoseconds + Int64(timeoutMilliseconds) * 1_000_000
        var lastError = ETIMEDOUT
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry?.pointee {
            entry = address.ai_next
            let remaining = Int32(clamping: (deadline - MonotonicClock.nanoseconds) / 1_000_000)
            guard remaining > 0 else { return (Int32(MOSQ_ERR_ERRNO.rawValue), ETIMEDOUT) }
            let error = attempt(address, timeoutMilliseconds: remaining)
            if error == 0 { return (MOSQ_SUCCESS, 0) }
            lastError = error
        }
        return (Int32(MOSQ_ERR_ERRNO.rawValue), lastError)
    }

    /// 0 on success, else the errno of the failure.
    private static func attempt(_ address: addrinfo, timeoutMilliseconds: Int32) -> Int32 {
        let fd = socket(address.ai_family, address.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                        address.ai_protocol)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        if Glibc.connect(fd, address.ai_addr, address.ai_addrlen) == 0 { return 0 }
        guard errno == EINPROGRESS else { return errno }
        var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let start = MonotonicClock.nanoseconds
        var ready: Int32
        repeat {
            let waited = Int32(clamping: (MonotonicClock.nanoseconds - start) / 1_000_000)
            ready = poll(&entry, 1, max(timeoutMilliseconds - waited, 0))
        } while ready < 0 && errno == EINTR
        guard ready > 0 else { return ready == 0 ? ETIMEDOUT : errno }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return errno }
        return error
    }
}
