/* SPDX-License-Identifier: MIT */
/*
 * The gateway's memory under many concurrent streams: N streamed requests
 * at once (curl multi, one connection each) through the gateway to a local
 * upstream that streams slowly (a text delta every 50 ms for SECONDS). The
 * gateway runs in a child process of its own, with the judge on the real
 * session (tests/gateway/session_judge.h), so that its VmRSS and VmHWM
 * (/proc/PID/status) are the gateway's alone: before the streams, the
 * largest VmRSS seen while all N were open, and the peak after.
 *   bench_gateway_streams [streams] [seconds]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>
#include <microhttpd.h>

#include "gateway/gateway.h"
#include "session_judge.h"

#define DELTA_MS 50

static const char START[] =
	"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":"
	"{\"input_tokens\":100,\"output_tokens\":1}}}\n\n"
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
	"\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
static const char DELTA[] =
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
	"\"delta\":{\"type\":\"text_delta\",\"text\":\"a few more words of the answer \"}}\n\n";
static const char END[] =
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
	"\"end_turn\"},\"usage\":{\"output_tokens\":10}}\n\n"
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

static int deltas;

/* One slow stream: START, a DELTA every DELTA_MS, END. */
static ssize_t slow_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	int *n = cls;
	const char *s;
	size_t len;

	(void)pos;
	if (*n > deltas + 1)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (*n > 0)
		usleep(DELTA_MS * 1000);
	s = *n == 0 ? START : *n <= deltas ? DELTA : END;
	len = strlen(s);
	if (len > max)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	memcpy(buf, s, len);
	(*n)++;
	return (ssize_t)len;
}

static enum MHD_Result upstream(void *cls, struct MHD_Connection *c, const char *url,
				const char *method, const char *version, const char *upload,
				size_t *upload_size, void **con_cls)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	int *n;

	(void)cls, (void)url, (void)method, (void)version, (void)upload;
	if (!*con_cls) {
		*con_cls = c; /* the first call: headers only */
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (!(n = calloc(1, sizeof(*n))))
		return MHD_NO;
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, slow_read, n, free);
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

static const char POLICY[] = "{\"version\":1,\"models\":{\"prices\":[{\"model\":\"m-*\","
			     "\"input\":1,\"output\":2}]}}";

/* The child: the gateway, serving until killed. Tells the parent its
 * port and token on out. */
static int gateway_child(unsigned up_port, FILE *out)
{
	struct tjudge t = { .mu = PTHREAD_MUTEX_INITIALIZER };
	shk_session_config sc = { .max_repeat_keys = 1u << 20, .max_inflight = 1024 };
	struct shk_source_judge judge = tj_source(&t);
	struct shk_gateway_config cfg;
	struct shk_gateway *gw;
	shk_policy *pol;
	char up[64];

	snprintf(up, sizeof(up), "http://127.0.0.1:%u", up_port);
	if (shk_policy_load_buffer(POLICY, sizeof(POLICY) - 1, "bench", &pol, NULL) < 0 ||
	    shk_session_new(&sc, &t.session) < 0)
		return 1;
	cfg = (struct shk_gateway_config){ .policy = pol, .anthropic_upstream = up, .max_connections = 512 };
	if (shk_gateway_start(&cfg, &judge, &gw) < 0)
		return 1;
	fprintf(out, "%u %s\n", (unsigned)shk_gateway_port(gw), shk_gateway_token(gw));
	fflush(out);
	for (;;)
		pause();
}

static long status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	long kb = -1;
	size_t n = strlen(field);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			kb = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return kb;
}

static size_t count_bytes(char *p, size_t s, size_t n, void *ctx)
{
	(void)p;
	*(size_t *)ctx += s * n;
	return s * n;
}

/* N streams at once; the largest VmRSS of the gateway while all are open. */
static int streams(pid_t gw, unsigned port, const char *token, int n, long *ret_during)
{
	CURLM *m = curl_multi_init();
	CURL **e = calloc((size_t)n, sizeof(*e));
	size_t *got = calloc((size_t)n, sizeof(*got));
	struct curl_slist *h;
	char url[96], auth[128];
	static const char body[] = "{\"model\":\"m-bench\",\"max_tokens\":64,\"stream\":true,"
				   "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
	int running = 1, open_all, failed = 0;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/v1/messages", port);
	snprintf(auth, sizeof(auth), "x-api-key: %s", token);
	h = curl_slist_append(curl_slist_append(NULL, auth), "Content-Type: application/json");
	*ret_during = -1;
	for (int i = 0; e && got && i < n; i++) {
		e[i] = curl_easy_init();
		curl_easy_setopt(e[i], CURLOPT_URL, url);
		curl_easy_setopt(e[i], CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(e[i], CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(e[i], CURLOPT_WRITEFUNCTION, count_bytes);
		curl_easy_setopt(e[i], CURLOPT_WRITEDATA, &got[i]);
		curl_easy_setopt(e[i], CURLOPT_FORBID_REUSE, 1L);
		curl_multi_add_handle(m, e[i]);
	}
	while (running) {
		curl_multi_perform(m, &running);
		curl_multi_poll(m, NULL, 0, 100, NULL);
		open_all = running == n;
		for (int i = 0; open_all && i < n; i++)
			open_all = got[i] > 0;
		if (open_all) {
			long kb = status_kb(gw, "VmRSS");

			*ret_during = kb > *ret_during ? kb : *ret_during;
		}
	}
	for (int i = 0; e && got && i < n; i++) {
		long code = 0;

		curl_easy_getinfo(e[i], CURLINFO_RESPONSE_CODE, &code);
		failed += code != 200 || got[i] < sizeof(START) - 1 + (size_t)deltas * (sizeof(DELTA) - 1);
		curl_multi_remove_handle(m, e[i]);
		curl_easy_cleanup(e[i]);
	}
	curl_slist_free_all(h);
	curl_multi_cleanup(m);
	free(e);
	free(got);
	return failed;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64, secs = argc > 2 ? atoi(argv[2]) : 5, failed;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t salen = sizeof(sa);
	struct MHD_Daemon *d;
	char token[96];
	unsigned port;
	long before, during, peak;
	int fds[2], lfd;
	FILE *in;
	pid_t pid;

	if (n < 1 || n > 500 || secs < 1)
		return fprintf(stderr, "usage: bench_gateway_streams [streams 1-500] [seconds]\n"), 2;
	deltas = secs * 1000 / DELTA_MS;
	/* The upstream's socket first, its threads after the fork: a child
	 * forked from threads may inherit a lock one of them held (ASan's
	 * allocator's, for one) and hang. */
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1024) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &salen) < 0 || pipe(fds) < 0)
		return fprintf(stderr, "bench_gateway_streams: upstream socket: %m\n"), 1;
	if ((pid = fork()) == 0) {
		close(fds[0]);
		close(lfd);
		_exit(gateway_child(ntohs(sa.sin_port), fdopen(fds[1], "w")));
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL,
			     0, NULL, NULL, upstream, NULL, MHD_OPTION_LISTEN_SOCKET, lfd,
			     MHD_OPTION_CONNECTION_LIMIT, 1024u, MHD_OPTION_END);
	if (!d)
		return fprintf(stderr, "bench_gateway_streams: upstream did not start\n"), 1;
	close(fds[1]);
	in = fdopen(fds[0], "r");
	if (pid < 0 || !in || fscanf(in, "%u %95s", &port, token) != 2)
		return fprintf(stderr, "bench_gateway_streams: the gateway did not start\n"), 1;
	usleep(200 * 1000);
	before = status_kb(pid, "VmRSS");
	failed = streams(pid, port, token, n, &during);
	peak = status_kb(pid, "VmHWM");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	MHD_stop_daemon(d);
	curl_global_cleanup();
	printf("%d concurrent streams, %d s each (a text delta every %d ms), %d failed\n", n, secs,
	       DELTA_MS, failed);
	printf("gateway process VmRSS: before %ld kB, largest while all %d were open %ld kB "
	       "(%+.1f kB per stream); VmHWM %ld kB\n", before, n, during,
	       during >= 0 ? (double)(during - before) / n : 0.0, peak);
	return failed || during < 0;
}
