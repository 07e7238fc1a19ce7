/*
 * LD_PRELOAD shim for BlueZ's btvirt (emulator/btdev.c, 5.66 and still upstream): it keeps connection handles
 * consistent when one emulated controller has several connections.
 *
 * The bug: btdev numbers each side of a link on its own (the lowest free handle from 42), but
 *   - the LE Connection Complete event it sends to the peripheral carries the CENTRAL's handle, and
 *   - ACL data and some LE events crossing the link keep the SENDER's handle.
 * With one connection per controller both numbers are 42 and nothing shows. As soon as the central (hci0)
 * holds a second connection (handle 43) while the peripheral's side is 42, the peripheral's replies are
 * dropped (btdev finds no connection 43 on it), its kernel never sees the disconnection, and every ATT
 * request of the second link times out after 30 s ("Operation timed out: 0x02", services resolved err -5).
 *
 * The fix, at btvirt's boundary to the kernel (/dev/vhci), without touching btvirt:
 *   - the peripheral's LE Connection Complete gets the handle btdev really gave its side (the lowest free
 *     handle from 42 on that controller, mirrored here), so each kernel uses btdev's own numbering;
 *   - a packet that btdev forwards from controller S to controller D (written to D's vhci while btvirt is
 *     handling S's packet) and that names S's handle of the S–D link gets D's handle instead.
 * btvirt is single-threaded: it reads one packet from a vhci fd and writes everything that packet causes
 * before it polls again, so "the controller being handled" is the fd of the last read() until the next
 * epoll_wait().
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FDS 256
#define MAX_LINKS 64
#define FIRST_HANDLE 42

struct link_end {
    int fd;
    uint16_t handle;
    int peer_fd;
    uint16_t peer_handle;
    int used;
};

static unsigned char is_vhci[MAX_FDS];
static struct link_end links[MAX_LINKS];
static int current_src = -1;

static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_epoll_wait)(int, struct epoll_event *, int, int);

static void resolve(void) {
    if (!real_read) {
        real_read = dlsym(RTLD_NEXT, "read");
        real_writev = dlsym(RTLD_NEXT, "writev");
        real_open = dlsym(RTLD_NEXT, "open");
        real_open64 = dlsym(RTLD_NEXT, "open64");
        real_epoll_wait = dlsym(RTLD_NEXT, "epoll_wait");
    }
}

static uint16_t get16(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static void put16(unsigned char *p, uint16_t v) { p[0] = v & 0xff; p[1] = v >> 8; }

static struct link_end *find(int fd, uint16_t handle) {
    for (int i = 0; i < MAX_LINKS; i++)
        if (links[i].used && links[i].fd == fd && links[i].handle == handle)
            return &links[i];
    return NULL;
}

static void add(int fd, uint16_t handle, int peer_fd, uint16_t peer_handle) {
    struct link_end *e = find(fd, handle);
    for (int i = 0; !e && i < MAX_LINKS; i++)
        if (!links[i].used)
            e = &links[i];
    if (!e)
        return;
    *e = (struct link_end){fd, handle, peer_fd, peer_handle, 1};
}

static void forget_fd(int fd) {
    for (int i = 0; i < MAX_LINKS; i++)
        if (links[i].used && (links[i].fd == fd || links[i].peer_fd == fd))
            links[i].used = 0;
}

static uint16_t lowest_free(int fd) {
    uint16_t h = FIRST_HANDLE;
    while (find(fd, h))
        h++;
    return h;
}

/* A handle at `p` in a packet for `dst` that btdev numbered as the sender's: give it dst's number. */
static void translate(unsigned char *p, int dst, uint16_t flags_mask) {
    if (current_src < 0 || current_src == dst)
        return;
    uint16_t raw = get16(p);
    struct link_end *e = find(current_src, raw & 0x0fff);
    if (e && e->peer_fd == dst)
        put16(p, (uint16_t)((raw & flags_mask) | e->peer_handle));
}

static void fix_packet(int fd, unsigned char *pkt, size_t len) {
    if (len >= 5 && pkt[0] == 0x02) { /* ACL data: handle + flags */
        translate(pkt + 1, fd, 0xf000);
        return;
    }
    if (len < 4 || pkt[0] != 0x04)
        return;
    unsigned char evt = pkt[1], *params = pkt + 3;
    size_t plen = len - 3;
    switch (evt) {
    case 0x05: /* Disconnection Complete: status, handle */
        if (plen >= 3 && params[0] == 0) {
            translate(params + 1, fd, 0);
            struct link_end *e = find(fd, get16(params + 1));
            if (e)
                e->used = 0;
        }
        break;
    case 0x08: /* Encryption Change: status, handle */
        if (plen >= 3)
            translate(params + 1, fd, 0);
        break;
    case 0x0e: /* Command Complete for HCI_Reset: btdev dropped every connection of this controller */
        if (plen >= 4 && get16(params + 1) == 0x0c03)
            forget_fd(fd);
        break;
    case 0x3e: /* LE meta event */
        if (plen < 4)
            break;
        switch (params[0]) {
        case 0x01: /* LE Connection Complete: status, handle, role, ... */
        case 0x0a: /* LE Enhanced Connection Complete: same start */
            if (plen >= 5 && params[1] == 0 && params[4] == 0x01 && current_src >= 0 && current_src != fd) {
                uint16_t central_handle = get16(params + 2);
                uint16_t own = lowest_free(fd);
                add(fd, own, current_src, central_handle);
                add(current_src, central_handle, fd, own);
                put16(params + 2, own);
            }
            break;
        case 0x03: /* LE Connection Update Complete: status, handle */
        case 0x04: /* LE Read Remote Features Complete: status, handle */
        case 0x0c: /* LE PHY Update Complete: status, handle */
            translate(params + 2, fd, 0);
            break;
        case 0x05: /* LE Long Term Key Request: handle */
        case 0x06: /* LE Remote Connection Parameter Request: handle */
        case 0x07: /* LE Data Length Change: handle */
        case 0x14: /* LE Channel Selection Algorithm: handle */
            translate(params + 1, fd, 0);
            break;
        }
        break;
    }
}

static int track_open(const char *path, int fd) {
    if (fd >= 0 && fd < MAX_FDS && path && strcmp(path, "/dev/vhci") == 0) {
        is_vhci[fd] = 1;
        forget_fd(fd);
    }
    return fd;
}

int open(const char *path, int flags, ...) {
    resolve();
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    return track_open(path, real_open(path, flags, mode));
}

int open64(const char *path, int flags, ...) {
    resolve();
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    return track_open(path, real_open64(path, flags, mode));
}

ssize_t read(int fd, void *buf, size_t count) {
    resolve();
    ssize_t n = real_read(fd, buf, count);
    if (n > 0)  /* a vhci packet, or a timer's expiry: whatever is written next is caused by this */
        current_src = (fd >= 0 && fd < MAX_FDS && is_vhci[fd]) ? fd : -1;
    return n;
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
    resolve();
    current_src = -1;
    return real_epoll_wait(epfd, events, maxevents, timeout);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    resolve();
    if (fd < 0 || fd >= MAX_FDS || !is_vhci[fd])
        return real_writev(fd, iov, iovcnt);
    unsigned char pkt[4096];
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (len + iov[i].iov_len > sizeof(pkt))
            return real_writev(fd, iov, iovcnt);
        memcpy(pkt + len, iov[i].iov_base, iov[i].iov_len);
        len += iov[i].iov_len;
    }
    fix_packet(fd, pkt, len);
    struct iovec one = {pkt, len};
    return real_writev(fd, &one, 1);
}
