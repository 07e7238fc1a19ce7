// Sleeps in poll with no descriptor: what a static-stdlib Swift process costs before any server.
#if canImport(Glibc)
import Glibc
#endif
while true { _ = poll(nil, 0, -1) }
