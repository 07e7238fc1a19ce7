import DBus
import LoopHosting

/// The D-Bus event loop as host of the bridge's servers (the web page's, the ESPHome API's): each one's descriptor
/// waits in the loop's `poll` beside the bus and the broker, so a request is answered on the thread that holds the
/// bridge's state, with no thread of the server's own and no wake-up while no client is connected
/// (docs/dev/web-server.md).
public struct EventLoopHost: LoopHost {
    let loop: EventLoop

    public init(loop: EventLoop) {
        self.loop = loop
    }

    public func attach(interest: @escaping @Sendable () -> LoopInterest,
                       serve: @escaping @Sendable (Int16) -> Bool) {
        loop.addSource(interest: {
            let wanted = interest()
            return PollInterest(fd: wanted.fd, events: wanted.events, deadline: wanted.deadline)
        }, serve: serve)
    }

    public func execute(_ work: @escaping @Sendable () -> Void) { loop.execute(work) }

    public var isHostThread: Bool { loop.isLoopThread }
}
