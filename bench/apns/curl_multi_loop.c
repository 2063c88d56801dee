/* The libcurl floor for the APNs client benchmark: a plain C loop on one curl multi handle sending N APNs-style
 * POSTs over C HTTP/2 connections x S streams, reusing easy handles, with no framework around it.
 * Prints notifications/s and CPU microseconds per notification (getrusage: user + system of this process).
 *
 * Build: gcc -O2 -Wall -Wextra -o curl_multi_loop bench/apns/curl_multi_loop.c -lcurl
 * Run:   ./curl_multi_loop <url> <ca_file> <n> <conns> <streams>
 *        e.g. ./curl_multi_loop https://127.0.0.1:28443/3/device/abab... /tmp/apns-sink-28443/cert.pem 100000 4 100
 * Write-shape knobs (issue 27; unset: libcurl's defaults): CURL_LOOP_NODELAY=0|1 (CURLOPT_TCP_NODELAY, libcurl's
 * default 1), CURL_LOOP_BUFFERSIZE=bytes (CURLOPT_BUFFERSIZE), CURL_LOOP_UPLOAD_BUFFERSIZE=bytes
 * (CURLOPT_UPLOAD_BUFFERSIZE). bench/apns/sink-syscalls.sh shows what each does to the sink's reads per request.
 * CURL_LOOP_COALESCE_US=µs: after a poll returns, wait until that long has passed since the previous turn, so one
 * curl_multi_perform (which walks every transfer on the multi) would handle more answers (issue 27; measured: it
 * changes nothing here, each turn already takes tens of answers, docs/BENCHMARKS.md).
 * CURL_LOOP_SOCKET=1: the event-driven loop (curl_multi_socket_action over epoll, curl's socket and timer callbacks)
 * instead of curl_multi_perform + curl_multi_poll (issue 27; measured: it costs more CPU per notification with this
 * libcurl, not less, docs/BENCHMARKS.md "The event-driven curl loop").
 * CURL_LOOP_PAUSE_MS=ms: sleep that long before the clock starts, so bench/apns/sink-syscalls.sh, started right after
 * the loop, is attached before the first request (outside the timed section; the figures printed are unchanged).
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>

/* The same 130-byte alert payload as h2load.sh and the Swift benchmark. */
static const char BODY[] = "{\"aps\":{\"alert\":{\"title\":\"Benchmark\",\"body\":\"A notification body of a typical "
                           "size for APNs pushes.\"},\"sound\":\"default\"},\"id\":123}";

static size_t discard(char *ptr, size_t size, size_t nmemb, void *userdata) {
    (void)ptr;
    (void)userdata;
    return size * nmemb; /* error bodies ({"reason":…}) are tiny; the sink sends none */
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata) {
    (void)ptr;
    (void)userdata;
    return size * nmemb;
}

static int on_prereq(void *userdata, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
                     int conn_local_port) {
    (void)userdata, (void)conn_primary_ip, (void)conn_local_ip, (void)conn_primary_port, (void)conn_local_port;
    return CURL_PREREQFUNC_OK;
}

/* The options push-server's APNsTransfer sets that this loop does not by default, one knob each (issue 27: what
 * each costs per request). CURL_LOOP_OPTS is a comma-separated list of: timeouts, keepalive, maxage, dnscache,
 * protocols, sslversion, callbacks, url (CURLOPT_URL set again before each request, as the server did for each
 * device), curlu (instead: one parsed URL handle per easy handle, CURLOPT_CURLU, whose path is set again before each
 * request, as the server does), all (everything but curlu). */
static int has_opt(const char *name) {
    const char *opts = getenv("CURL_LOOP_OPTS");
    if (!opts) return 0;
    if (strstr(opts, "all")) return strcmp(name, "curlu") != 0;
    return strstr(opts, name) != NULL;
}

static void server_options(CURL *e) {
    if (has_opt("timeouts")) {
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 30000L);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    }
    if (has_opt("keepalive")) {
        curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 60L);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 30L);
    }
    if (has_opt("maxage")) curl_easy_setopt(e, CURLOPT_MAXAGE_CONN, 900L);
    if (has_opt("dnscache")) curl_easy_setopt(e, CURLOPT_DNS_CACHE_TIMEOUT, 0L);
    if (has_opt("protocols")) curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
    if (has_opt("sslversion")) curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    if (has_opt("callbacks")) {
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

#define CHECK_MULTI(call)                                                                    \
    do {                                                                                     \
        CURLMcode mc_ = (call);                                                              \
        if (mc_ != CURLM_OK) {                                                               \
            fprintf(stderr, "%s failed: %s\n", #call, curl_multi_strerror(mc_));              \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

/* CURL_LOOP_SOCKET=1: the event-driven form of the loop. curl tells which sockets to watch (CURLMOPT_SOCKETFUNCTION)
 * and when to call it back on a timer (CURLMOPT_TIMERFUNCTION); epoll waits, and curl_multi_socket_action moves only
 * the transfers on the socket that is ready (or whose timer is due), where curl_multi_perform walks every transfer on
 * the multi each turn. */
static int epoll_fd = -1;
static double timer_due = -1; /* when curl wants CURL_SOCKET_TIMEOUT, in now_s() time; -1: no timer */

static int on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp) {
    (void)e;
    CURLM *multi = userp;
    struct epoll_event ev = {0};
    ev.data.fd = s;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(epoll_fd, EPOLL_CTL_DEL, s, NULL);
        curl_multi_assign(multi, s, NULL);
        return 0;
    }
    ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
    if (socketp) {
        epoll_ctl(epoll_fd, EPOLL_CTL_MOD, s, &ev);
    } else {
        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, s, &ev);
        curl_multi_assign(multi, s, &epoll_fd); /* any non-NULL pointer: "already added" */
    }
    return 0;
}

static int on_timer(CURLM *multi, long ms, void *userp) {
    (void)multi;
    (void)userp;
    timer_due = ms < 0 ? -1 : now_s() + (double)ms / 1000.0;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s <url> <ca_file> <n> <conns> <streams>\n", argv[0]);
        return 2;
    }
    const char *url = argv[1], *ca = argv[2];
    long n = atol(argv[3]), conns = atol(argv[4]), streams = atol(argv[5]);
    long handles = conns * streams;
    if (n <= 0 || conns <= 0 || streams <= 0) return 2;
    if (handles > n) handles = n;

    curl_global_init(CURL_GLOBAL_ALL);
    CURLM *multi = curl_multi_init();
    CHECK_MULTI(curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX));
    CHECK_MULTI(curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, conns));
    CHECK_MULTI(curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, streams));
    int socket_loop = getenv("CURL_LOOP_SOCKET") && atoi(getenv("CURL_LOOP_SOCKET")) == 1;
    if (socket_loop) {
        epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        CHECK_MULTI(curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, on_socket));
        CHECK_MULTI(curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, multi));
        CHECK_MULTI(curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, on_timer));
    }

    struct curl_slist *headers = NULL;
    headers = curl_slist_append(headers, "apns-topic: com.example.app");
    headers = curl_slist_append(headers, "apns-push-type: alert");
    headers = curl_slist_append(headers, "apns-priority: 10");
    headers = curl_slist_append(headers, "apns-expiration: 0");
    headers = curl_slist_append(headers, "content-type: application/json");
    headers = curl_slist_append(headers, "authorization: bearer eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWTEyMzQ1NjcifQ."
                                         "eyJpc3MiOiJURUFNMTIzNDU2IiwiaWF0IjoxNzAwMDAwMDAwfQ.c2lnbmF0dXJlLXBsYWNl"
                                         "aG9sZGVyLWZvci1hLXNpbmstdGhhdC1jaGVja3Mtbm90aGluZy0xMjM0NTY3ODkw");

    CURL **easy = calloc((size_t)handles, sizeof(CURL *));
    for (long i = 0; i < handles; i++) {
        CURL *e = curl_easy_init();
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
        curl_easy_setopt(e, CURLOPT_CAINFO, ca);
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, BODY); /* not copied: BODY is static */
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)(sizeof(BODY) - 1));
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
        if (getenv("CURL_LOOP_NODELAY")) curl_easy_setopt(e, CURLOPT_TCP_NODELAY, atol(getenv("CURL_LOOP_NODELAY")));
        if (getenv("CURL_LOOP_BUFFERSIZE")) curl_easy_setopt(e, CURLOPT_BUFFERSIZE, atol(getenv("CURL_LOOP_BUFFERSIZE")));
        if (getenv("CURL_LOOP_UPLOAD_BUFFERSIZE"))
            curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, atol(getenv("CURL_LOOP_UPLOAD_BUFFERSIZE")));
        server_options(e);
        easy[i] = e;
    }
    int set_url = has_opt("url"), use_curlu = has_opt("curlu");
    CURLU **parsed = calloc((size_t)handles, sizeof(CURLU *));
    const char *path = strstr(url, "://") ? strchr(strstr(url, "://") + 3, '/') : NULL;
    for (long i = 0; use_curlu && i < handles; i++) {
        parsed[i] = curl_url();
        if (curl_url_set(parsed[i], CURLUPART_URL, url, 0) != CURLUE_OK || !path) {
            fprintf(stderr, "bad url: %s\n", url);
            return 2;
        }
        curl_easy_setopt(easy[i], CURLOPT_CURLU, parsed[i]);
        curl_easy_setopt(easy[i], CURLOPT_PRIVATE, parsed[i]);
    }

    long started = 0, done = 0, ok = 0, failed = 0, other_status = 0, connects = 0;
    long coalesce_us = getenv("CURL_LOOP_COALESCE_US") ? atol(getenv("CURL_LOOP_COALESCE_US")) : 0;
    double turn_at = 0;
    if (getenv("CURL_LOOP_PAUSE_MS")) { /* before the clock starts: time for a syscall counter to attach */
        long ms = atol(getenv("CURL_LOOP_PAUSE_MS"));
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    double t0 = now_s(), c0 = cpu_s();
    for (long i = 0; i < handles; i++, started++) CHECK_MULTI(curl_multi_add_handle(multi, easy[i]));

    while (done < n) {
        int running = 0;
        if (!socket_loop) {
            CHECK_MULTI(curl_multi_perform(multi, &running));
        } else {
            struct epoll_event events[64];
            double wait = timer_due < 0 ? 1.0 : timer_due - now_s();
            int ready = epoll_wait(epoll_fd, events, 64, wait <= 0 ? 0 : (int)(wait * 1000) + 1);
            for (int i = 0; i < ready; i++) {
                int flags = ((events[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                            ((events[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                            ((events[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
                CHECK_MULTI(curl_multi_socket_action(multi, events[i].data.fd, flags, &running));
            }
            if (timer_due >= 0 && now_s() >= timer_due) {
                timer_due = -1;
                CHECK_MULTI(curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running));
            }
        }
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE) continue;
            CURL *e = msg->easy_handle;
            long status = 0, nc = 0;
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
            curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &nc);
            connects += nc;
            if (msg->data.result != CURLE_OK) {
                if (failed < 5) fprintf(stderr, "transfer failed: %s\n", curl_easy_strerror(msg->data.result));
                failed++;
            } else if (status == 200) {
                ok++;
            } else {
                other_status++;
            }
            done++;
            CHECK_MULTI(curl_multi_remove_handle(multi, e));
            if (started < n) { /* reuse the easy handle for the next notification */
                if (use_curlu) {
                    CURLU *u = NULL;
                    curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&u);
                    curl_url_set(u, CURLUPART_PATH, path, 0);
                } else if (set_url) {
                    curl_easy_setopt(e, CURLOPT_URL, url);
                }
                CHECK_MULTI(curl_multi_add_handle(multi, e));
                started++;
            }
        }
        if (done < n && !socket_loop) {
            CHECK_MULTI(curl_multi_poll(multi, NULL, 0, 1000, NULL));
            if (coalesce_us > 0) { /* let more answers arrive before the next turn walks every transfer */
                double since = now_s() - turn_at, want = (double)coalesce_us / 1e6;
                if (since < want) {
                    struct timespec ts = {0, (long)((want - since) * 1e9)};
                    nanosleep(&ts, NULL);
                }
            }
            turn_at = now_s();
        }
    }
    double wall = now_s() - t0, cpu = cpu_s() - c0;

    printf("curl_multi_loop n=%ld conns=%ld streams=%ld: %.0f notifications/s, %.1f us CPU/notification "
           "(wall %.2f s, cpu %.2f s, 200: %ld, other status: %ld, failed: %ld, connections opened: %ld) [%s]\n",
           n, conns, streams, (double)n / wall, cpu * 1e6 / (double)n, wall, cpu, ok, other_status, failed, connects,
           curl_version());

    for (long i = 0; i < handles; i++) curl_easy_cleanup(easy[i]);
    for (long i = 0; i < handles; i++) curl_url_cleanup(parsed[i]);
    free(easy);
    free(parsed);
    curl_slist_free_all(headers);
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    return failed == 0 && other_status == 0 ? 0 : 1;
}
