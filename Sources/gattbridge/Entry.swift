import Glibc

/// The process entry point, kept synchronous on purpose. An `async` main parks the main thread in `dispatch_main()`,
/// which leaves through `pthread_exit()`: its forced unwind loads libgcc_s and reads the executable's unwind tables
/// (about 2 MB that then stay resident for the daemon's whole life, a fifth of its memory budget). Instead the main
/// thread hands `GattBridge.execute()` to the concurrency pool and sleeps; that function always ends the process with
/// `exit()`. Signals still reach libdispatch's sources: its handler forwards any signal that lands on this thread.
/// Nothing here uses the main actor, which nobody drains any more.
@main
enum Entry {
    static func main() {
        Task.detached { await GattBridge.execute() }
        while true { pause() }
    }
}
