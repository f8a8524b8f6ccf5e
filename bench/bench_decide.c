/* SPDX-License-Identifier: MIT */
/*
 * bench_decide [VECTORS.json] [ROUNDS]
 *
 * Decisions per second and ns per shk_decide() over pre-parsed conformance
 * vectors (default: the 15 published ones), and proof that decide() does not
 * touch the heap: this binary defines malloc/calloc/realloc/free (and the
 * aligned variants) itself, forwarding to glibc's __libc_* entry points and
 * counting calls while a flag is set. Every allocation in the process — from
 * libshackle, jansson or libc — goes through them. It also times
 * shk_session_evaluate() on a typical call. It prints figures; it asserts
 * nothing about time.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <shackle/decide.h>
#include <shackle/json.h>
#include <shackle/session.h>
#include <shackle/vector.h>

#ifndef SHK_SHARED_DIR
#define SHK_SHARED_DIR "../shared"
#endif

/* ---- counting allocator -------------------------------------------------- */

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t n);

static volatile int counting;
static volatile unsigned long heap_calls;

static void count(void)
{
	if (counting)
		heap_calls++;
}

void *malloc(size_t n)
{
	count();
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	count();
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	count();
	return __libc_realloc(p, n);
}

void free(void *p)
{
	count();
	__libc_free(p);
}

void *memalign(size_t align, size_t n)
{
	count();
	return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	count();
	return __libc_memalign(align, n);
}

int posix_memalign(void **ret, size_t align, size_t n)
{
	void *p;

	count();
	p = __libc_memalign(align, n);
	if (!p)
		return 12; /* ENOMEM */
	*ret = p;
	return 0;
}

/* ---- benchmark ------------------------------------------------------------ */

/* CPU time of this thread: on a loaded machine wall time mostly measures the
 * other processes. Both are printed. */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int load(const char *path, shk_doc *doc, shk_vector *vec, size_t max, size_t *ret_n)
{
	shk_parse_error perr;
	shk_val *top = NULL;
	const shk_val *fx;
	char err[256];
	size_t n = 0;

	if (shk_json_load_file(doc, path, &top, &perr) < 0) {
		fprintf(stderr, "bench_decide: %s:%d:%d: %s\n", path, perr.line, perr.column, perr.text);
		return -1;
	}
	fx = shk_val_type(top) == SHK_ARRAY ? top : shk_object_get(top, "fixtures");
	for (size_t i = 0; i < shk_val_len(fx) && n < max; i++) {
		if (shk_vector_load(shk_array_at(fx, i), &vec[n], err, sizeof(err)) < 0) {
			fprintf(stderr, "bench_decide: %s: fixture %zu: %s\n", path, i, err);
			return -1;
		}
		n++;
	}
	*ret_n = n;
	return n ? 0 : -1;
}

static void bench_session(unsigned long rounds)
{
	shk_session_config c;
	shk_session *s = NULL;
	shk_doc *doc = NULL;
	shk_toolcall tc;
	shk_outcome o;
	shk_parse_error perr;
	shk_val *params = NULL;
	const char *text = "{\"argv\":[\"curl\",\"-s\",\"https://api.example.com/v1/items\"],\"path\":\"/usr/bin/curl\"}";
	unsigned long allowed = 0;
	double t0, t1;

	memset(&c, 0, sizeof(c));
	c.guard.budget_usd = 5.0;
	c.guard.max_repeat_calls = 5;
	c.guard.error_amplification = true;
	c.guard.window_duration_s = 60;
	c.guard.window_max_calls = 300;
	c.guard.hitl_budget_threshold = 0.2;
	c.guard.trip_on_deny = true;
	if (shk_session_new(&c, &s) < 0 || shk_doc_new(&doc) < 0 ||
	    shk_json_parse(doc, text, strlen(text), "bench", &params, &perr) < 0)
		return;
	memset(&tc, 0, sizeof(tc));
	tc.tool_name = "exec:curl";
	tc.params = params;
	tc.nonce = 1;
	tc.estimated_cost_usd = 0.001;
	shk_toolcall_prepare(&tc);
	heap_calls = 0;
	counting = 1;
	t0 = cpu_s();
	for (unsigned long i = 0; i < rounds; i++) {
		tc.nonce = i + 1;
		shk_session_evaluate(s, &tc, SHK_ACTION_ALLOW, (int64_t)i, &o);
		allowed += o.verdict == SHK_ALLOW;
	}
	t1 = cpu_s();
	counting = 0;
	printf("shk_session_evaluate (exec call, error-signal scan, decide, layers): %.1f ns/call (CPU), "
	       "heap allocations during %lu calls: %lu (%lu allowed)\n",
	       (t1 - t0) * 1e9 / (double)rounds, rounds, heap_calls, allowed);
	shk_session_free(s);
	shk_doc_free(doc);
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : NULL;
	unsigned long rounds = argc > 2 ? strtoul(argv[2], NULL, 0) : 200000;
	char def[4096];
	shk_vector vec[256];
	shk_doc *doc = NULL;
	size_t n = 0;
	unsigned long total, mismatches = 0;
	volatile unsigned sink = 0;
	double best = 1e30, wall = 0;
	const int reps = 5;

	if (!path) {
		const char *dir = getenv("SHACKLE_SHARED_DIR");
		snprintf(def, sizeof(def), "%s/conformance/sp1.0/conformance.json", dir ? dir : SHK_SHARED_DIR);
		path = def;
	}
	if (rounds == 0 || shk_doc_new(&doc) < 0 || load(path, doc, vec, 256, &n) < 0)
		return 2;
	for (size_t i = 0; i < n; i++) {
		shk_decision d = shk_decide(&vec[i].config, &vec[i].state, &vec[i].call);
		mismatches += d.verdict != vec[i].expected_verdict || d.reason != vec[i].expected_reason;
	}
	total = rounds * (unsigned long)n;
	heap_calls = 0;
	counting = 1;
	for (int rep = 0; rep < reps; rep++) {
		double c0 = cpu_s(), w0 = wall_s(), c1, w1;

		for (unsigned long r = 0; r < rounds; r++)
			for (size_t i = 0; i < n; i++) {
				shk_decision d = shk_decide(&vec[i].config, &vec[i].state, &vec[i].call);
				sink += (unsigned)d.reason;
			}
		c1 = cpu_s();
		w1 = wall_s();
		if (c1 - c0 < best) {
			best = c1 - c0;
			wall = w1 - w0;
		}
	}
	counting = 0;
	printf("vectors: %s (%zu, %lu not matching their expected result)\n", path, n, mismatches);
	printf("decide(): best of %d runs of %lu decisions: %.1f ns/decide (CPU time), %.0f decisions/s; "
	       "wall clock of that run %.1f ns/decide\n",
	       reps, total, best * 1e9 / (double)total, (double)total / best, wall * 1e9 / (double)total);
	printf("heap allocations during %lu decide() calls: %lu\n", total * reps, heap_calls);
	bench_session(rounds);
	(void)sink;
	shk_doc_free(doc);
	return heap_calls || mismatches ? 1 : 0;
}
