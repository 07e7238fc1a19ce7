import Glibc

/// A plain OS thread for tests that need real parallelism outside Swift's cooperative pool.
final class TestThread: @unchecked Sendable {
    private var thread = pthread_t()
    private let body: @Sendable () -> Void

    private init(_ body: @escaping @Sendable () -> Void) { self.body = body }

    static func detached(_ body: @escaping @Sendable () -> Void) -> TestThread {
        let thread = TestThread(body)
        let box = Unmanaged.passRetained(thread)
        let rc = pthread_create(&thread.thread, nil, { argument in
            let thread = Unmanaged<TestThread>.fromOpaque(argument!).takeRetainedValue()
            thread.body()
            return nil
        }, box.toOpaque())
        precondition(rc == 0, "pthread_create failed: \(rc)")
        return thread
    }

    func join() { pthread_join(thread, nil) }
}
