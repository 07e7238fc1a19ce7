// MHD_start_daemon and MHD_get_daemon_info are variadic: Swift cannot call them, these wrappers can.
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

// No internal thread: the caller's poll loop waits for the one epoll descriptor (gb_mhd_epoll_fd) and calls MHD_run.
// Suspend/resume for the SSE streams; at most `limit` connections of at most `memory` bytes each (MHD's own bound:
// request headers and body buffers live in that pool); idle connections closed after `timeout` seconds.
static inline struct MHD_Daemon *gb_mhd_start(uint16_t port, unsigned int limit, size_t memory, unsigned int timeout,
                                              MHD_AccessHandlerCallback handler, MHD_RequestCompletedCallback done) {
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = __builtin_bswap16(port);
    addr.sin_addr.s_addr = __builtin_bswap32(0x7f000001);  // 127.0.0.1
    return MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, port, NULL, NULL,
                            handler, NULL,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                            MHD_OPTION_CONNECTION_LIMIT, limit,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout,
                            MHD_OPTION_NOTIFY_COMPLETED, done, NULL,
                            MHD_OPTION_END);
}

static inline int gb_mhd_epoll_fd(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_EPOLL_FD);
    return info ? info->epoll_fd : -1;
}
