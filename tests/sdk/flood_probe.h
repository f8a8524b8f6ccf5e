/* SPDX-License-Identifier: MIT */
/*
 * For the flood case: a thread that stands for the kernel's path, asking
 * the judge directly (as the supervisor's loop would) while the socket is
 * flooded, and timing each answer; and a plain C client that checks the
 * socket still answers afterwards. Test-only code.
 */
#ifndef SHACKLE_TESTS_FLOOD_PROBE_H
#define SHACKLE_TESTS_FLOOD_PROBE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <shackle/json.h>

#include "judge/source.h"

#define PROBE_MAX 200000

struct probe {
	struct shk_source_judge iface;
	atomic_bool stop;
	int failed;
	unsigned n;
	double worst_ms;
	float ms[PROBE_MAX];
};

static double probe_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *probe_main(void *arg)
{
	struct probe *p = arg;
	shk_doc *doc = NULL;
	shk_val *params;

	if (shk_doc_new(&doc) < 0 || !(params = shk_object(doc))) {
		p->failed++;
		shk_doc_free(doc);
		return NULL;
	}
	while (!atomic_load(&p->stop) && p->n < PROBE_MAX) {
		struct shk_source_call call = { .kind = SHK_SOURCE_SDK, .tool = "kernel:exec",
						.params = params, .origin = "probe" };
		struct shk_source_answer a;
		double t0 = probe_now_ms(), dt;

		if (p->iface.judge(p->iface.ctx, &call, &a) < 0 || a.verdict == SHK_DENY)
			p->failed++;
		dt = probe_now_ms() - t0;
		p->ms[p->n++] = (float)dt;
		if (dt > p->worst_ms)
			p->worst_ms = dt;
		usleep(1000);
	}
	shk_doc_free(doc);
	return NULL;
}

static int probe_cmp(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

static void probe_report(struct probe *p)
{
	if (!p->n)
		return;
	qsort(p->ms, p->n, sizeof(p->ms[0]), probe_cmp);
	fprintf(stderr, "flood: judge called directly %u times meanwhile: p50 %.3f ms, p99 %.3f ms, "
		"worst %.3f ms, %d failed\n", p->n, p->ms[p->n / 2], p->ms[p->n * 99 / 100],
		p->worst_ms, p->failed);
}

/* A register on a fresh connection gets its register_response. */
static bool still_answers(const char *path)
{
	const char *msg = "{\"protocol_version\":\"1.0.0\",\"register\":{\"agent_id\":\"after\"}}\n";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[2048];
	ssize_t n;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	bool ok;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    write(fd, msg, strlen(msg)) != (ssize_t)strlen(msg)) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	ok = n > 0 && (buf[n] = '\0', strstr(buf, "\"register_response\"") != NULL);
	close(fd);
	return ok;
}

#endif
