// GET / (the embedded page), GET /events (SSE, one small JSON event a second per client), POST /api/echo (<= 64 KiB,
// else 413). Port 8783 or $PORT. One thread: a poll loop, as the daemon's D-Bus loop would drive it, waits for
// libmicrohttpd's one epoll descriptor and its timeout, and for the next tick only while a client follows /events.
import CMicroHTTPD
#if canImport(Glibc)
import Glibc
#endif

let maxBody = 64 * 1024
// TICK_MS=N: an event every N ms instead of every second (to check that a quiet follower outlives the timeout).
let tickMs = Int64(getenv("TICK_MS").flatMap { Int(String(cString: $0)) } ?? 1000)
// EVENT_PAD=N pads each event with N bytes (the stalled-client measurement, to fill socket buffers in seconds).
let pad = String(repeating: "x", count: getenv("EVENT_PAD").flatMap { Int(String(cString: $0)) } ?? 0)

/// One follower of /events: it has seen events up to `seen`. Its stream asks for data only when the socket can take
/// more; with nothing new the connection is suspended until the next tick, so a stalled client holds nothing.
final class Follower {
    let connection: OpaquePointer
    var seen: Int
    var suspended = false
    var pending: [UInt8] = []  // the event being written, at most one
    var offset = 0
    init(connection: OpaquePointer, seen: Int) { self.connection = connection; self.seen = seen }
}

/// A request being read (POST /api/echo): its body so far, or that it was too large.
final class Upload {
    var body: [UInt8] = []
    var tooLarge = false
}

// Only the loop thread touches these (libmicrohttpd calls back from MHD_run, on that thread).
nonisolated(unsafe) var latest = 0
nonisolated(unsafe) var followers: [ObjectIdentifier: Follower] = [:]

func queue(_ connection: OpaquePointer?, _ status: Int32, _ type: String?, _ bytes: UnsafeRawBufferPointer,
           persistent: Bool) -> MHD_Result {
    let response = MHD_create_response_from_buffer(
        bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress),
        persistent ? .RESPMEM_PERSISTENT : .RESPMEM_MUST_COPY)
    if let type { MHD_add_response_header(response, "Content-Type", type) }
    let result = MHD_queue_response(connection, UInt32(status), response)
    MHD_destroy_response(response)
    return result
}

func queueEmpty(_ connection: OpaquePointer?, _ status: Int32) -> MHD_Result {
    queue(connection, status, nil, UnsafeRawBufferPointer(start: nil, count: 0), persistent: true)
}

let readEvents: MHD_ContentReaderCallback = { cls, _, buf, max in
    let follower = Unmanaged<Follower>.fromOpaque(cls!).takeUnretainedValue()
    if follower.offset == follower.pending.count {
        guard follower.seen < latest else {
            MHD_suspend_connection(follower.connection)
            follower.suspended = true
            return 0
        }
        follower.seen = latest
        follower.pending = Array("data: {\"n\":\(latest),\"rssi\":-60,\"pad\":\"\(pad)\"}\n\n".utf8)
        follower.offset = 0
    }
    let n = min(follower.pending.count - follower.offset, max)
    follower.pending.withUnsafeBytes {
        UnsafeMutableRawPointer(buf!).copyMemory(from: $0.baseAddress! + follower.offset, byteCount: n)
    }
    follower.offset += n
    return n
}

let freeFollower: MHD_ContentReaderFreeCallback = { cls in
    let follower = Unmanaged<Follower>.fromOpaque(cls!).takeRetainedValue()
    followers[ObjectIdentifier(follower)] = nil
}

let handler: MHD_AccessHandlerCallback = { _, connection, url, method, _, uploadData, uploadSize, state in
    let path = String(cString: url!), verb = String(cString: method!)
    switch (verb, path) {
    case ("GET", "/"):
        return pageHTML.withUTF8Buffer {
            queue(connection, 200, "text/html; charset=utf-8", UnsafeRawBufferPointer($0), persistent: true)
        }
    case ("GET", "/events"):
        let follower = Follower(connection: connection!, seen: latest - 1)
        followers[ObjectIdentifier(follower)] = follower
        let response = MHD_create_response_from_callback(
            UInt64.max,  // MHD_SIZE_UNKNOWN
            16 * 1024, readEvents, Unmanaged.passRetained(follower).toOpaque(), freeFollower)
        MHD_add_response_header(response, "Content-Type", "text/event-stream")
        MHD_add_response_header(response, "Cache-Control", "no-store")
        let result = MHD_queue_response(connection, 200, response)
        MHD_destroy_response(response)
        return result
    case ("POST", "/api/echo"):
        guard let current = state!.pointee else {
            // First call, headers only: refuse a declared oversize body before reading it.
            if let length = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"),
               let n = Int(String(cString: length)), n > maxBody {
                return queueEmpty(connection, 413)
            }
            state!.pointee = Unmanaged.passRetained(Upload()).toOpaque()
            return .YES
        }
        let upload = Unmanaged<Upload>.fromOpaque(current).takeUnretainedValue()
        if uploadSize!.pointee > 0 {
            if upload.body.count + uploadSize!.pointee > maxBody { upload.tooLarge = true }
            if !upload.tooLarge {
                upload.body.append(contentsOf: UnsafeRawBufferPointer(start: uploadData, count: uploadSize!.pointee))
            }
            uploadSize!.pointee = 0
            return .YES
        }
        if upload.tooLarge { return queueEmpty(connection, 413) }
        return upload.body.withUnsafeBytes { queue(connection, 200, "application/json", $0, persistent: false) }
    default:
        return queueEmpty(connection, 404)
    }
}

let completed: MHD_RequestCompletedCallback = { _, _, state, _ in
    if let current = state?.pointee {
        Unmanaged<Upload>.fromOpaque(current).release()
        state!.pointee = nil
    }
}

signal(SIGPIPE, SIG_IGN)
let port = UInt16(getenv("PORT").flatMap { Int(String(cString: $0)) } ?? 8783)
guard let daemon = gb_mhd_start(port, 16, 32 * 1024, 60, handler, completed) else {
    perror("MHD_start_daemon")
    exit(1)
}
let epollFD = gb_mhd_epoll_fd(daemon)

func nowMs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

var nextTick = nowMs() + tickMs
while true {
    // The wait: libmicrohttpd's own timeout (connection timeouts), and the next tick only while someone follows.
    var wait: Int64 = -1
    var mhdTimeout: CUnsignedLongLong = 0
    if MHD_get_timeout(daemon, &mhdTimeout) == .YES { wait = Int64(mhdTimeout) }
    let now = nowMs()
    if followers.isEmpty {
        nextTick = now + tickMs
    } else {
        let untilTick = max(0, nextTick - now)
        wait = wait < 0 ? untilTick : min(wait, untilTick)
    }
    var fds = pollfd(fd: epollFD, events: Int16(POLLIN), revents: 0)
    _ = poll(&fds, 1, Int32(clamping: wait))
    if !followers.isEmpty && nowMs() >= nextTick {
        latest += 1
        nextTick += tickMs
        for follower in followers.values where follower.suspended {
            follower.suspended = false
            MHD_resume_connection(follower.connection)
        }
    }
    MHD_run(daemon)
}
