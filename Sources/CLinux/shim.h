#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H
/* Swift's Glibc module does not expose <sys/epoll.h>, <sys/eventfd.h> or <sys/timerfd.h>, and accept4() is only
   declared under _GNU_SOURCE, which a Swift import cannot set for the already built Glibc module; <malloc.h>
   (mallinfo2, for the heap gauges on /metrics) is not in it either. */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <malloc.h>
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
static inline int clinux_accept_nonblock(int fd, struct sockaddr *addr, socklen_t *len) {
    return accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}
#endif
