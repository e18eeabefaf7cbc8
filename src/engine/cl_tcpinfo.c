/*  cl_tcpinfo.c - what the kernel knows about one TCP connection
    (cl_tcpinfo.h), through getsockopt(TCP_INFO) and SO_COOKIE.

    "Waiting" means bytes written and not yet sent (tcpi_notsent_bytes):
    the socket holds more than the congestion window lets out, which
    stays so while the link is full and the program keeps writing; a
    program with nothing more to send empties it within a round trip.
*/
#include "engine/cl_tcpinfo.h"

#include <arpa/inet.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

int cl_tcpinfo_read(int fd, cl_tcpinfo_t *out)
{
    if (fd < 0)
        return -1;
    struct tcp_info ti;
    memset(&ti, 0, sizeof ti);
    socklen_t len = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_sent) + sizeof ti.tcpi_bytes_sent)
        return -1;
    uint64_t cookie = 0;
    socklen_t clen = sizeof cookie;
    if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &clen) != 0 || clen != sizeof cookie)
        return -1;
    out->cookie = cookie;
    out->acked = ti.tcpi_bytes_acked;
    out->sent = ti.tcpi_bytes_sent;
    out->rwnd_us = ti.tcpi_rwnd_limited;
    out->waiting = ti.tcpi_notsent_bytes > 0;
    out->drained = ti.tcpi_notsent_bytes == 0 && ti.tcpi_unacked == 0;
    return 0;
}

bool cl_tcpinfo_loopback(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &len) != 0)
        return false;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    }
    if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr))
            return true;
        return IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127;
    }
    return false;
}
