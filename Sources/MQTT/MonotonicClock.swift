import Glibc

/// CLOCK_MONOTONIC in nanoseconds: cheap, lock-free to store in an `Atomic`, immune to wall-clock jumps.
enum MonotonicClock {
    static var nanoseconds: Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
