// libmicrohttpd's variadic calls (MHD_start_daemon, MHD_get_daemon_info, MHD_get_connection_info), which Swift cannot
// call, behind plain functions; and its macros that Swift does not import.
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <microhttpd.h>

static size_t gb_mhd_keep_escapes(void *cls, struct MHD_Connection *connection, char *text) {
    (void)cls;
    (void)connection;
    return strlen(text);
}

// Starts a daemon on a listening socket the caller made (so that "address in use" is the caller's errno, not a
// message in MHD's log), with no thread of its own: the caller waits for gb_mhd_epoll_fd and calls MHD_run.
// Escapes are kept (gb_mhd_keep_escapes): the caller decodes the path and query once and refuses what must not pass
// (MHD's own decoding would hand over "%00" as the end of the C string and "%2e%2e" as "..").
static inline struct MHD_Daemon *gb_mhd_start(unsigned int flags, int listen_fd, unsigned int connection_limit,
                                              size_t connection_memory, unsigned int timeout_s,
                                              MHD_AccessHandlerCallback handler, void *handler_cls,
                                              MHD_RequestCompletedCallback completed, void *completed_cls) {
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_UNESCAPE_CALLBACK, gb_mhd_keep_escapes, NULL,
                            MHD_OPTION_END);
}

static inline int gb_mhd_epoll_fd(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_EPOLL_FD);
    return info ? info->epoll_fd : -1;
}

static inline int gb_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? (int)info->connect_fd : -1;
}

// The peer's address copied into `out` (a sockaddr_storage); 0 when MHD has none.
static inline int gb_mhd_client_address(struct MHD_Connection *connection, struct sockaddr_storage *out) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!info || !info->client_addr) return 0;
    socklen_t len = info->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    memcpy(out, info->client_addr, len);
    return 1;
}

static const uint64_t gb_mhd_size_unknown = MHD_SIZE_UNKNOWN;
static const ssize_t gb_mhd_end_of_stream = MHD_CONTENT_READER_END_OF_STREAM;
static const ssize_t gb_mhd_end_with_error = MHD_CONTENT_READER_END_WITH_ERROR;
static const unsigned int gb_mhd_flags_base = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
static const unsigned int gb_mhd_flag_ipv6 = MHD_USE_IPv6;
static const unsigned int gb_mhd_flag_error_log = MHD_USE_ERROR_LOG;
