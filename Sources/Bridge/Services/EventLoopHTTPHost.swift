import DBus
import HTTPServer

/// The web page's server served by the D-Bus event loop: its one epoll descriptor waits in the loop's `poll` beside
/// the bus and the broker, so a request is answered on the thread that holds the bridge's state, with no thread of
/// the server's own and no wake-up while no browser is connected (docs/dev/web-server.md).
public struct EventLoopHTTPHost: HTTPLoopHost {
    let loop: EventLoop

    public init(loop: EventLoop) {
        self.loop = loop
    }

    public func attach(interest: @escaping @Sendable () -> HTTPPollInterest,
                       serve: @escaping @Sendable (Int16) -> Bool) {
        loop.addSource(interest: {
            let wanted = interest()
            return PollInterest(fd: wanted.fd, events: wanted.events, deadline: wanted.deadline)
        }, serve: serve)
    }

    public func execute(_ work: @escaping @Sendable () -> Void) { loop.execute(work) }

    public var isHostThread: Bool { loop.isLoopThread }
}
