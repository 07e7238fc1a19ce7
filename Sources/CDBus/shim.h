#include <dbus/dbus.h>
// The event loop's wake-up counter (not exported by Swift's Glibc module).
#include <sys/eventfd.h>
// recvmmsg(2) for the notify sockets: one system call reads every queued notification. Swift's Glibc module is
// built without _GNU_SOURCE, so neither `struct mmsghdr` nor `recvmmsg` is visible; this is the same layout and the
// same system call.
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
struct gattbridge_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};
static inline int gattbridge_recvmmsg(int fd, struct gattbridge_mmsghdr *vector, unsigned int count, int flags) {
    return (int)syscall(SYS_recvmmsg, fd, vector, count, flags, (void *)0);
}
