// Turning the kernel's fault-around off for chosen mappings (Sources/Systemd/StartupPageTrim.swift says why).
// Static inline: the Swift side cannot call the variadic syscall(2) and ioctl(2) with these structs itself.
#pragma once
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

// Newer than some build hosts' kernel headers (Linux 5.11 and 6.7); the running kernel decides.
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif

/// A userfaultfd whose write-protect faults the kernel resolves itself (asynchronous mode): registering a mapping
/// with it needs no reader. -1 (errno set) where the kernel lacks the mode (before 6.7), `userfaultfd` is filtered
/// (seccomp, containers) or not emulated (qemu-user).
static inline int gattbridge_fault_around_switch(void) {
#ifdef SYS_userfaultfd
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0) return -1;
    struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC };
    if (ioctl(fd, UFFDIO_API, &api) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
#else
    errno = ENOSYS;
    return -1;
#endif
}

/// Registers [start, start + length) for write-protect tracking, which is all it takes for the kernel to stop
/// faulting around in it (mm/memory.c, `uffd_disable_fault_around`). Nothing is write-protected: no page is ever
/// marked, so reads and writes go on as before. 0, or -1 with errno.
static inline int gattbridge_fault_around_off(int fd, unsigned long start, unsigned long length) {
    struct uffdio_register registration = {
        .range = { .start = start, .len = length },
        .mode = UFFDIO_REGISTER_MODE_WP,
    };
    return ioctl(fd, UFFDIO_REGISTER, &registration);
}
