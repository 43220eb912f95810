#ifndef CLAWBACK_CCURL_SHIM_H
#define CLAWBACK_CCURL_SHIM_H
/* libcurl (and the epoll calls its event loop needs) for the HTTP module. Swift does not import C variadic functions (curl_easy_setopt,
   curl_easy_getinfo, curl_multi_setopt), nor macros that alias enum constants (CURLVERSION_NOW).
   These typed, non-variadic wrappers are the only way the HTTP module calls them; only Sources/HTTP
   imports this module, with `internal import`, so no libcurl type appears in a public Swift API. */
#include <curl/curl.h>

static inline CURLcode clawback_curl_easy_setopt_long(CURL *h, CURLoption o, long v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode clawback_curl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) {
    return curl_easy_setopt(h, o, v);
}
/* libcurl copies string options (since 7.17.0), except CURLOPT_POSTFIELDS and CURLOPT_ERRORBUFFER. */
static inline CURLcode clawback_curl_easy_setopt_string(CURL *h, CURLoption o, const char *v) {
    return curl_easy_setopt(h, o, v);
}
/* For buffers libcurl keeps a pointer to (CURLOPT_ERRORBUFFER) and callback user data. The caller owns
   the memory and must keep it alive until the handle is reset or cleaned up. */
static inline CURLcode clawback_curl_easy_setopt_pointer(CURL *h, CURLoption o, void *v) {
    return curl_easy_setopt(h, o, v);
}
/* libcurl does not copy the list: it must outlive the transfer. */
static inline CURLcode clawback_curl_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) {
    return curl_easy_setopt(h, o, v);
}
/* CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION share this signature. */
static inline CURLcode clawback_curl_easy_setopt_write_callback(CURL *h, CURLoption o, curl_write_callback v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode clawback_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode clawback_curl_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode clawback_curl_easy_getinfo_pointer(CURL *h, CURLINFO i, void **v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLMcode clawback_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) {
    return curl_multi_setopt(m, o, v);
}
static inline CURLMcode clawback_curl_multi_setopt_pointer(CURLM *m, CURLMoption o, void *v) {
    return curl_multi_setopt(m, o, v);
}
static inline CURLMcode clawback_curl_multi_setopt_socket_callback(CURLM *m, curl_socket_callback f) {
    return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, f);
}
static inline CURLMcode clawback_curl_multi_setopt_timer_callback(CURLM *m, curl_multi_timer_callback f) {
    return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, f);
}
/* CURL_SOCKET_TIMEOUT is a macro of a macro; Swift does not import it. */
static const curl_socket_t clawback_curl_socket_timeout = CURL_SOCKET_TIMEOUT;
static inline curl_version_info_data *clawback_curl_version_info(void) {
    return curl_version_info(CURLVERSION_NOW);
}
/* CURLMsg.data is a union; Swift reads the member through this accessor. */
static inline CURLcode clawback_curl_msg_result(CURLMsg *m) { return m->data.result; }

/* The multi loop's readiness: epoll, driven by libcurl's socket callback (CURL_POLL_*), and an eventfd
   that wakes it. epoll_event is a packed struct holding a union, so it stays on this side. */
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

static inline int clawback_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }
static inline int clawback_eventfd_create(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }
static inline void clawback_eventfd_signal(int fd) {
    uint64_t one = 1;
    ssize_t written = write(fd, &one, sizeof one); /* EAGAIN: the counter is already non-zero, which is all we need */
    (void)written;
}
static inline void clawback_eventfd_drain(int fd) {
    uint64_t count;
    ssize_t read_bytes = read(fd, &count, sizeof count);
    (void)read_bytes;
}
/* Watches fd for libcurl's CURL_POLL_IN, _OUT or _INOUT, or stops watching it (CURL_POLL_REMOVE).
   `registered` says whether the caller believes fd is in the epoll set already, so the right one of ADD and
   MOD is tried first (a failing MOD per request was a third of the loop's epoll_ctl calls). An fd number
   libcurl closed and reused is handled by falling back to the other. Returns 0 or errno. */
static inline int clawback_epoll_watch(int ep, int fd, int what, int registered) {
    if (what == CURL_POLL_REMOVE) {
        return epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL) == 0 || errno == ENOENT || errno == EBADF ? 0 : errno;
    }
    struct epoll_event event = {0};
    event.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    event.data.fd = fd;
    int first = registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(ep, first, fd, &event) == 0) return 0;
    if (errno != (registered ? ENOENT : EEXIST)) return errno;
    return epoll_ctl(ep, registered ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event) == 0 ? 0 : errno;
}
/* Waits up to timeout_ms (-1: forever) and fills fds[i] with a ready fd and masks[i] with its
   CURL_CSELECT_* bits. Returns how many, 0 on timeout or signal, or -errno. */
static inline int clawback_epoll_wait(int ep, int *fds, int *masks, int capacity, int timeout_ms) {
    struct epoll_event events[256];
    int n = epoll_wait(ep, events, capacity < 256 ? capacity : 256, timeout_ms);
    if (n < 0) return errno == EINTR ? 0 : -errno;
    for (int i = 0; i < n; i++) {
        fds[i] = events[i].data.fd;
        /* A hang-up is reported as readable: libcurl then reads what is left and the end of the stream. */
        masks[i] = (events[i].events & (EPOLLIN | EPOLLHUP) ? CURL_CSELECT_IN : 0)
            | (events[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) | (events[i].events & EPOLLERR ? CURL_CSELECT_ERR : 0);
    }
    return n;
}
#endif
