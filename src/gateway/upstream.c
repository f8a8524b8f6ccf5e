/* SPDX-License-Identifier: MIT */
/* The upstream side: one libcurl easy handle per request on a multi handle
 * per agent connection, driven by the thread that serves that connection. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gateway/internal.h"

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int gw_upstream_global_init(void)
{
	pthread_once(&global_once, global_init);
	return global_rc == CURLE_OK ? 0 : -EIO;
}

int gw_upstream_open(struct gw_upstream *u)
{
	*u = (struct gw_upstream){ 0 };
	u->multi = curl_multi_init();
	return u->multi ? 0 : -ENOMEM;
}

void gw_upstream_close(struct gw_upstream *u)
{
	gw_upstream_end(u);
	gw_buf_free(&u->body);
	if (u->multi)
		curl_multi_cleanup(u->multi);
	u->multi = NULL;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void keep_header(char *dst, size_t dstlen, const char *v, size_t n)
{
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	while (n && *v == ' ')
		v++, n--;
	if (n >= dstlen)
		n = dstlen - 1;
	memcpy(dst, v, n);
	dst[n] = 0;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct gw_upstream *u = ctx;
	size_t n = size * nmemb;

	u->last_ms = now_ms();
	if (n >= 5 && !strncmp(p, "HTTP/", 5)) { /* a new response (after a 1xx) */
		u->content_type[0] = u->retry_after[0] = u->request_id[0] = 0;
	} else if (n <= 2 && (p[0] == '\r' || p[0] == '\n')) {
		curl_easy_getinfo(u->easy, CURLINFO_RESPONSE_CODE, &u->status);
		if (u->status >= 200) {
			u->headers_done = true;
			u->sse = u->want_sse && u->status == 200 &&
				 !strncasecmp(u->content_type, "text/event-stream", 17);
		}
	} else if (n > 13 && !strncasecmp(p, "content-type:", 13)) {
		keep_header(u->content_type, sizeof(u->content_type), p + 13, n - 13);
	} else if (n > 12 && !strncasecmp(p, "retry-after:", 12)) {
		keep_header(u->retry_after, sizeof(u->retry_after), p + 12, n - 12);
	} else if (n > 11 && !strncasecmp(p, "request-id:", 11)) {
		keep_header(u->request_id, sizeof(u->request_id), p + 11, n - 11);
	} else if (n > 13 && !strncasecmp(p, "x-request-id:", 13)) {
		keep_header(u->request_id, sizeof(u->request_id), p + 13, n - 13);
	}
	return n;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct gw_upstream *u = ctx;
	size_t n = size * nmemb;

	u->last_ms = now_ms();
	if (u->sse)
		return u->on_data(u->ctx, p, n) < 0 ? 0 : n;
	if (u->body.len + n > u->body_max || gw_buf_add(&u->body, p, n) < 0)
		return 0; /* too large to judge: the transfer fails */
	return n;
}

static int set_options(struct gw_upstream *u, const char *url, const char *body, size_t len,
		       long timeout_s)
{
	CURL *e = u->easy;
	long connect_s = timeout_s < 30 ? timeout_s : 30;

	if (curl_easy_setopt(e, CURLOPT_URL, url) ||
	    curl_easy_setopt(e, CURLOPT_POST, 1L) ||
	    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body) ||
	    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len) ||
	    curl_easy_setopt(e, CURLOPT_HTTPHEADER, u->hdrs) ||
	    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header) ||
	    curl_easy_setopt(e, CURLOPT_HEADERDATA, u) ||
	    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) ||
	    curl_easy_setopt(e, CURLOPT_WRITEDATA, u) ||
	    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, u->errbuf) ||
	    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) ||
	    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") ||
	    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) ||
	    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, connect_s) ||
	    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L) ||
	    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "") ||
	    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS))
		return -EIO;
	return 0;
}

int gw_upstream_begin(struct gw_upstream *u, const char *url, const char *const *headers,
		      const char *body, size_t len, long timeout_s)
{
	int r;

	gw_upstream_end(u);
	u->sse = u->headers_done = u->done = false;
	u->status = 0;
	u->result = CURLE_OK;
	u->body.len = 0;
	u->errbuf[0] = 0;
	u->timeout_ms = timeout_s * 1000;
	u->last_ms = now_ms();
	u->content_type[0] = u->retry_after[0] = u->request_id[0] = 0;
	for (size_t i = 0; headers[i]; i++) {
		struct curl_slist *l = curl_slist_append(u->hdrs, headers[i]);

		if (!l)
			return -ENOMEM;
		u->hdrs = l;
	}
	u->easy = curl_easy_init();
	if (!u->easy)
		return -ENOMEM;
	if ((r = set_options(u, url, body, len, timeout_s)) < 0)
		return r;
	return curl_multi_add_handle(u->multi, u->easy) == CURLM_OK ? 0 : -EIO;
}

int gw_upstream_pump(struct gw_upstream *u, int wait_ms)
{
	CURLMsg *m;
	int running = 0, left;

	if (u->done)
		return 0;
	if (curl_multi_perform(u->multi, &running) != CURLM_OK)
		return -EIO;
	while ((m = curl_multi_info_read(u->multi, &left)))
		if (m->msg == CURLMSG_DONE && m->easy_handle == u->easy) {
			u->done = true;
			u->result = m->data.result;
		}
	if (!u->done && curl_multi_poll(u->multi, NULL, 0, wait_ms, NULL) != CURLM_OK)
		return -EIO;
	/* Slow is silent: curl's low-speed limit averages in the upload just
	 * sent, so an upstream that never answers would pass for a live one. */
	if (!u->done && now_ms() - u->last_ms > u->timeout_ms) {
		u->done = true;
		u->result = CURLE_OPERATION_TIMEDOUT;
		snprintf(u->errbuf, sizeof(u->errbuf), "no byte for %lld s",
			 (long long)(u->timeout_ms / 1000));
	}
	return 0;
}

void gw_upstream_end(struct gw_upstream *u)
{
	if (u->easy) {
		curl_multi_remove_handle(u->multi, u->easy);
		curl_easy_cleanup(u->easy);
		u->easy = NULL;
	}
	curl_slist_free_all(u->hdrs);
	u->hdrs = NULL;
}
