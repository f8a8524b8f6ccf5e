/* SPDX-License-Identifier: MIT */
/*
 * What the model gateway adds, over loopback against a local upstream (an
 * in-process libmicrohttpd server answering at once): per non-streamed
 * request the latency direct and through the gateway (p50, p99, one
 * kept-alive connection), the time to the first streamed byte, and
 * requests/s with several kept-alive clients. The judge is the real
 * shk_session behind a mutex (tests/gateway/session_judge.h).
 *   bench_gateway [requests]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <microhttpd.h>

#include "gateway/gateway.h"
#include "session_judge.h"

static const char ANSWER[] =
	"{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m-bench\","
	"\"content\":[{\"type\":\"text\",\"text\":\"hello\"}],\"stop_reason\":\"end_turn\","
	"\"usage\":{\"input_tokens\":100,\"output_tokens\":10}}";
static const char STREAM[] =
	"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":"
	"{\"input_tokens\":100,\"output_tokens\":1}}}\n\n"
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
	"\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
	"\"end_turn\"},\"usage\":{\"output_tokens\":10}}\n\n"
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

static enum MHD_Result upstream(void *cls, struct MHD_Connection *c, const char *url,
				const char *method, const char *version, const char *upload,
				size_t *upload_size, void **con_cls)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	bool *stream = *con_cls;

	(void)cls, (void)url, (void)method, (void)version;
	if (!stream) {
		*con_cls = calloc(1, sizeof(bool));
		return *con_cls ? MHD_YES : MHD_NO;
	}
	if (*upload_size) {
		*stream |= memmem(upload, *upload_size, "\"stream\":true", 13) != NULL;
		*upload_size = 0;
		return MHD_YES;
	}
	r = MHD_create_response_from_buffer(*stream ? sizeof(STREAM) - 1 : sizeof(ANSWER) - 1,
					    (void *)(*stream ? STREAM : ANSWER), MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(r, "Content-Type", *stream ? "text/event-stream" : "application/json");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

static void upstream_done(void *cls, struct MHD_Connection *c, void **con_cls,
			  enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)c, (void)toe;
	free(*con_cls);
	*con_cls = NULL;
}

static size_t sink(char *p, size_t s, size_t n, void *ctx)
{
	(void)p, (void)ctx;
	return s * n;
}

struct client {
	CURL *e;
	struct curl_slist *h;
	char url[128], body[160];
};

static int client_open(struct client *cl, unsigned port, const char *token, bool stream)
{
	char auth[128];

	snprintf(cl->url, sizeof(cl->url), "http://127.0.0.1:%u/v1/messages", port);
	snprintf(auth, sizeof(auth), "x-api-key: %s", token);
	cl->e = curl_easy_init();
	cl->h = curl_slist_append(curl_slist_append(NULL, auth), "Content-Type: application/json");
	if (!cl->e || !cl->h)
		return -ENOMEM;
	curl_easy_setopt(cl->e, CURLOPT_URL, cl->url);
	curl_easy_setopt(cl->e, CURLOPT_HTTPHEADER, cl->h);
	curl_easy_setopt(cl->e, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(cl->e, CURLOPT_TCP_NODELAY, 1L);
	snprintf(cl->body, sizeof(cl->body), "{\"model\":\"m-bench\",\"max_tokens\":64,%s"
		 "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", stream ? "\"stream\":true," : "");
	curl_easy_setopt(cl->e, CURLOPT_POSTFIELDS, cl->body);
	return 0;
}

static void client_close(struct client *cl)
{
	curl_easy_cleanup(cl->e);
	curl_slist_free_all(cl->h);
}

/* One request: total or time to first byte in µs; -1 on failure. */
static double one(struct client *cl, bool ttfb)
{
	double t = 0;
	long code = 0;

	if (curl_easy_perform(cl->e) != CURLE_OK)
		return -1;
	curl_easy_getinfo(cl->e, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(cl->e, ttfb ? CURLINFO_STARTTRANSFER_TIME : CURLINFO_TOTAL_TIME, &t);
	return code == 200 ? t * 1e6 : -1;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* p50 and p99 of n requests on one kept-alive connection. */
static int series(unsigned port, const char *token, bool stream, int n, double *p50, double *p99)
{
	struct client cl;
	double *v = calloc((size_t)n, sizeof(double));
	int r = v ? client_open(&cl, port, token, stream) : -ENOMEM;

	for (int i = 0; r == 0 && i < n + 100; i++) {
		double t = one(&cl, stream);

		if (t < 0)
			r = -EIO;
		else if (i >= 100) /* warm-up */
			v[i - 100] = t;
	}
	if (r == 0) {
		qsort(v, (size_t)n, sizeof(double), cmp);
		*p50 = v[n / 2];
		*p99 = v[n * 99 / 100];
	}
	client_close(&cl);
	free(v);
	return r;
}

struct load {
	unsigned port;
	const char *token;
	int64_t until_ns;
	long done;
	int err;
};

static void *load_thread(void *arg)
{
	struct load *l = arg;
	struct client cl;

	if (client_open(&cl, l->port, l->token, false) < 0) {
		l->err = 1;
		return NULL;
	}
	while (now_ns() < l->until_ns) {
		if (one(&cl, false) < 0)
			l->err = 1;
		l->done++;
	}
	client_close(&cl);
	return NULL;
}

static double throughput(unsigned port, const char *token, int nthreads, double seconds)
{
	struct load l[16];
	pthread_t th[16];
	int64_t t0 = now_ns();
	long total = 0;

	for (int i = 0; i < nthreads; i++) {
		l[i] = (struct load){ .port = port, .token = token,
				      .until_ns = t0 + (int64_t)(seconds * 1e9) };
		pthread_create(&th[i], NULL, load_thread, &l[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		total += l[i].err ? -1000000000L : l[i].done;
	}
	return total < 0 ? -1 : (double)total / ((double)(now_ns() - t0) / 1e9);
}

static const char POLICY[] = "{\"version\":1,\"models\":{\"prices\":[{\"model\":\"m-*\","
			     "\"input\":1,\"output\":2}]}}";

static int bench(unsigned up_port, int n)
{
	struct tjudge t = { .mu = PTHREAD_MUTEX_INITIALIZER };
	shk_session_config sc = { .max_repeat_keys = 1u << 20, .max_inflight = 1024 };
	struct shk_source_judge judge = tj_source(&t);
	struct shk_gateway_config cfg = { 0 };
	struct shk_gateway *gw;
	shk_policy *pol;
	char up[64];
	double d50, d99, g50, g99, ds50, ds99, gs50, gs99, rps_d, rps_g;
	int r;

	snprintf(up, sizeof(up), "http://127.0.0.1:%u", up_port);
	if (shk_policy_load_buffer(POLICY, sizeof(POLICY) - 1, "bench", &pol, NULL) < 0 ||
	    shk_session_new(&sc, &t.session) < 0)
		return 1;
	cfg = (struct shk_gateway_config){ .policy = pol, .anthropic_upstream = up };
	if ((r = shk_gateway_start(&cfg, &judge, &gw)) < 0)
		return fprintf(stderr, "bench_gateway: %s\n", strerror(-r)), 1;
	if (series(up_port, "x", false, n, &d50, &d99) < 0 ||
	    series(shk_gateway_port(gw), shk_gateway_token(gw), false, n, &g50, &g99) < 0 ||
	    series(up_port, "x", true, n, &ds50, &ds99) < 0 ||
	    series(shk_gateway_port(gw), shk_gateway_token(gw), true, n, &gs50, &gs99) < 0)
		return fprintf(stderr, "bench_gateway: a request failed\n"), 1;
	rps_d = throughput(up_port, "x", 4, 3);
	rps_g = throughput(shk_gateway_port(gw), shk_gateway_token(gw), 4, 3);
	printf("non-streamed, %d requests on one kept-alive connection (µs):\n", n);
	printf("  direct   p50 %8.1f  p99 %8.1f\n  gateway  p50 %8.1f  p99 %8.1f\n", d50, d99, g50, g99);
	printf("  added    p50 %8.1f  p99 %8.1f\n", g50 - d50, g99 - d99);
	printf("streamed, time to first byte (µs):\n");
	printf("  direct   p50 %8.1f  p99 %8.1f\n  gateway  p50 %8.1f  p99 %8.1f\n", ds50, ds99, gs50, gs99);
	printf("  added    p50 %8.1f  p99 %8.1f\n", gs50 - ds50, gs99 - ds99);
	printf("requests/s, 4 kept-alive clients for 3 s: direct %.0f, gateway %.0f\n", rps_d, rps_g);
	shk_gateway_stop(gw);
	shk_session_free(t.session);
	shk_policy_free(pol);
	return rps_d < 0 || rps_g < 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;
	int rc;

	if (n < 100)
		n = 100;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, upstream, NULL,
			     MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_THREAD_POOL_SIZE, 2u,
			     MHD_OPTION_NOTIFY_COMPLETED, upstream_done,
			     NULL, MHD_OPTION_END);
	info = d ? MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
	if (!info)
		return fprintf(stderr, "bench_gateway: upstream did not start\n"), 1;
	rc = bench(info->port, n);
	MHD_stop_daemon(d);
	curl_global_cleanup();
	return rc;
}
