#ifndef CLAWBACK_CCURL_SHIM_H
#define CLAWBACK_CCURL_SHIM_H
/* libcurl for the HTTP module. Swift does not import C variadic functions (curl_easy_setopt,
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
static inline CURLcode clawback_curl_easy_getinfo_pointer(CURL *h, CURLINFO i, void **v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLMcode clawback_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) {
    return curl_multi_setopt(m, o, v);
}
static inline curl_version_info_data *clawback_curl_version_info(void) {
    return curl_version_info(CURLVERSION_NOW);
}
/* CURLMsg.data is a union; Swift reads the member through this accessor. */
static inline CURLcode clawback_curl_msg_result(CURLMsg *m) { return m->data.result; }
#endif
