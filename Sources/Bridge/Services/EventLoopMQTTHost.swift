import DBus
import MQTT

/// The MQTT link served by the D-Bus event loop: one thread and one `poll` for the notify sockets, the bus and the
/// broker (docs/dev/ARCHITECTURE.md), where a thread of the client's own woke separately to read PUBACKs.
struct EventLoopMQTTHost: MQTTLoopHost {
    let loop: EventLoop

    func attach(interest: @escaping @Sendable () -> MQTTPollInterest, serve: @escaping @Sendable (Int16) -> Bool) {
        loop.addSource(interest: {
            let wanted = interest()
            return PollInterest(fd: wanted.fd, events: wanted.events, deadline: wanted.deadline, wakeBy: wanted.wakeBy)
        }, serve: serve)
    }

    func wake() { loop.wakeUp() }

    var isHostThread: Bool { loop.isLoopThread }
}
