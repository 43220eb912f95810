#ifndef CLAWBACK_CLIBPQ_SHIM_H
#define CLAWBACK_CLIBPQ_SHIM_H
/* libpq for the Postgres module. Only Sources/Postgres imports this module, with `internal import`,
   so no libpq type appears in a public Swift API. */
#include <libpq-fe.h>
#include <poll.h>

/* A notice processor that does nothing. Without one, libpq prints server NOTICEs (for example from
   `DROP ... IF EXISTS`) straight to stderr, where they would interleave with the job's structured logs. */
static inline void clawback_pq_ignore_notice(void *arg, const char *message) { (void)arg; (void)message; }
static inline void clawback_pq_silence_notices(PGconn *conn) {
    PQsetNoticeProcessor(conn, clawback_pq_ignore_notice, (void *)0);
}

/* Waits until the connection's socket is readable (or writable, when `for_write`), or `timeout_ms` passes.
   Returns poll(2)'s result: >0 ready, 0 timed out, <0 error (errno set). */
static inline int clawback_pq_wait_socket(int fd, int for_write, int timeout_ms) {
    struct pollfd p;
    p.fd = fd;
    p.events = for_write ? POLLOUT : POLLIN;
    p.revents = 0;
    return poll(&p, 1, timeout_ms);
}
#endif
