#ifndef CLIBCURL_SHIM_H
#define CLIBCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are C variadic functions (and, with GCC/Clang,
   type-checking macros), so Swift cannot call them. One typed static-inline wrapper per argument kind;
   Swift imports static inline functions and clang compiles them into the caller. */
static inline CURLcode ccurl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_str(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_write_cb(CURL *h, CURLoption o, curl_write_callback cb) { return curl_easy_setopt(h, o, cb); }
static inline CURLcode ccurl_setopt_header_cb(CURL *h, curl_write_callback cb) { return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb); }
static inline CURLcode ccurl_setopt_read_cb(CURL *h, curl_read_callback cb) { return curl_easy_setopt(h, CURLOPT_READFUNCTION, cb); }
static inline CURLcode ccurl_setopt_sockopt_cb(CURL *h, curl_sockopt_callback cb) { return curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, cb); }
static inline CURLcode ccurl_setopt_debug_cb(CURL *h, curl_debug_callback cb) { return curl_easy_setopt(h, CURLOPT_DEBUGFUNCTION, cb); }
static inline CURLcode ccurl_setopt_prereq_cb(CURL *h, curl_prereq_callback cb) { return curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, cb); }
static inline CURLcode ccurl_setopt_opensocket_cb(CURL *h, curl_opensocket_callback cb) { return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, cb); }
static inline CURLcode ccurl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_getinfo_double(CURL *h, CURLINFO i, double *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_getinfo_str(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLMcode ccurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode ccurl_multi_setopt_ptr(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode ccurl_multi_setopt_socketcb(CURLM *m, curl_socket_callback cb) { return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, cb); }
static inline CURLMcode ccurl_multi_setopt_timercb(CURLM *m, curl_multi_timer_callback cb) { return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, cb); }
/* CURLMsg carries a union {void *whatever; CURLcode result;}; a helper keeps call sites readable. */
static inline CURLcode ccurl_msg_result(const CURLMsg *m) { return m->data.result; }
/* CURLVERSION_NOW is a macro naming an enum constant: Swift does not import it. */
static inline curl_version_info_data *ccurl_version_info_now(void) { return curl_version_info(CURLVERSION_NOW); }
#endif
