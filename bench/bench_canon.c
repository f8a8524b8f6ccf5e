/* SPDX-License-Identifier: MIT */
/*
 * Canonical-hash throughput: SHA-256 over the canonical JSON form, in MB/s of
 * canonical bytes, for the published SP/1.0 params and vectors and a few
 * larger synthetic params objects. Inputs are parsed/built once; each timed
 * loop runs about one second (clock_gettime, CLOCK_MONOTONIC).
 *
 * Heap allocations inside the timed loops are counted by interposing malloc
 * (glibc's __libc_* entry points), which also sees allocations made inside
 * libc (snprintf, strtod). Not available under AddressSanitizer.
 *
 * usage: bench_canon [conformance.json]   (default: the shared vectors)
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/sha256.h"

#include <shackle/canon.h>
#include <shackle/json.h>

#ifndef SHK_SHARED_DIR
#define SHK_SHARED_DIR "../shared"
#endif

#if defined(__SANITIZE_ADDRESS__)
#define COUNT_ALLOCS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define COUNT_ALLOCS 0
#endif
#endif
#ifndef COUNT_ALLOCS
#define COUNT_ALLOCS 1
#endif

static unsigned long n_allocs;
static int counting;

#if COUNT_ALLOCS
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t m);
void *__libc_realloc(void *p, size_t n);

void *malloc(size_t n)
{
	n_allocs += counting;
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	n_allocs += counting;
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	n_allocs += counting;
	return __libc_realloc(p, n);
}
#endif

#define MAX_ITEMS 64

struct corpus {
	const char *name;
	const shk_val *items[MAX_ITEMS];
	size_t n;
	size_t bytes; /* canonical bytes of one pass over items */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void add(struct corpus *c, const shk_val *v)
{
	char *buf;
	size_t len;

	if (c->n == MAX_ITEMS || shk_canon_dump(v, &buf, &len) < 0) {
		fprintf(stderr, "bench_canon: cannot add an item to %s\n", c->name);
		exit(1);
	}
	free(buf);
	c->items[c->n++] = v;
	c->bytes += len;
}

static int run(struct corpus *c)
{
	uint8_t digest[SHK_SHA256_LEN];
	unsigned long iters = 0, batch = 1, allocs;
	double t0, t;

	/* Warm up, then grow the batch until a batch takes ~10 ms. */
	for (;;) {
		t0 = now();
		for (unsigned long i = 0; i < batch; i++)
			for (size_t k = 0; k < c->n; k++)
				if (shk_canon_sha256(c->items[k], digest) < 0)
					return -1;
		if (now() - t0 > 0.01)
			break;
		batch *= 2;
	}
	n_allocs = 0;
	counting = 1;
	t0 = now();
	do {
		for (unsigned long i = 0; i < batch; i++)
			for (size_t k = 0; k < c->n; k++)
				shk_canon_sha256(c->items[k], digest);
		iters += batch;
		t = now() - t0;
	} while (t < 1.0);
	counting = 0;
	allocs = n_allocs;
	printf("%-34s %8zu B %10.1f MB/s %10.0f ns/hash",
	       c->name, c->bytes, (double)c->bytes * (double)iters / t / 1e6,
	       t * 1e9 / ((double)iters * (double)c->n));
	if (COUNT_ALLOCS)
		printf("  %.2f allocs/hash\n", (double)allocs / ((double)iters * (double)c->n));
	else
		printf("  (allocations not counted under ASan)\n");
	return 0;
}

/* The ceiling: the library's SHA-256 alone over a buffer of the same bytes. */
static void run_raw_sha256(void)
{
	static unsigned char buf[1 << 16];
	unsigned char d[32];
	unsigned long iters = 0;
	double t0 = now(), t;

	memset(buf, 'x', sizeof(buf));
	do {
		for (int i = 0; i < 64; i++)
			shk_sha256_once(buf, sizeof(buf), d);
		iters += 64;
		t = now() - t0;
	} while (t < 1.0);
	printf("%-34s %8zu B %10.1f MB/s  (ceiling: hashing alone)\n", "raw SHA-256 of a buffer",
	       sizeof(buf), (double)sizeof(buf) * (double)iters / t / 1e6);
}

/* Proof that the counter sees allocations: shk_canon_dump must malloc. */
static bool alloc_counter_works(const shk_val *v)
{
	char *buf = NULL;

	n_allocs = 0;
	counting = 1;
	shk_canon_dump(v, &buf, NULL);
	counting = 0;
	free(buf);
	return n_allocs > 0;
}

/* Figures from a busy machine are not comparable: say how busy it was. */
static void print_load(void)
{
	FILE *f = fopen("/proc/loadavg", "re");
	double l1;

	if (f && fscanf(f, "%lf", &l1) == 1)
		printf("load average (1 min) at start: %.2f on %ld CPUs\n", l1,
		       sysconf(_SC_NPROCESSORS_ONLN));
	if (f)
		fclose(f);
}

/* Deterministic pseudo-random numbers (no libc rand state involved). */
static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 11;
}

static shk_val *exec_params(shk_doc *doc)
{
	static const char *const argv[] = {
		"cc", "-O2", "-g", "-Wall", "-Wextra", "-I/home/agent/src/include",
		"-DNDEBUG", "-c", "src/core/decide.c", "-o", "build/decide.o",
		"-fstack-protector-strong", "-D_GNU_SOURCE", "-std=gnu11",
	};
	shk_val *p = shk_object(doc), *a = shk_array(doc), *env = shk_object(doc);
	char k[32], v[96];

	for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++)
		shk_array_append(a, shk_cstring(doc, argv[i]));
	for (int i = 0; i < 24; i++) {
		snprintf(k, sizeof(k), "VAR_%02d", i);
		snprintf(v, sizeof(v), "/usr/local/lib/agent/%d:/opt/tools/bin:/usr/bin", i);
		shk_object_set_str(env, k, shk_cstring(doc, v));
	}
	shk_object_set_str(p, "argv", a);
	shk_object_set_str(p, "env", env);
	shk_object_set_str(p, "path", shk_cstring(doc, "/usr/bin/cc"));
	shk_object_set_str(p, "cwd", shk_cstring(doc, "/home/agent/src"));
	shk_object_set_str(p, "pid", shk_int(doc, 48213));
	shk_object_set_str(p, "tool", shk_cstring(doc, "exec"));
	return p;
}

/* An LLM-style request: nested messages, unicode text with escapes. */
static shk_val *llm_params(shk_doc *doc)
{
	static const char text[] =
		"Summarise the diff below.\n\t- fix: \"quoted\" path C:\\tmp\n"
		"Grüße, naïve café — 日本語のテキスト 😀 and more ASCII text to fill a line.\n";
	shk_val *p = shk_object(doc), *msgs = shk_array(doc);

	for (int i = 0; i < 12; i++) {
		shk_val *m = shk_object(doc);
		shk_object_set_str(m, "role", shk_cstring(doc, i % 2 ? "assistant" : "user"));
		shk_object_set_str(m, "content", shk_cstring(doc, text));
		shk_object_set_str(m, "tokens", shk_int(doc, 120 + i));
		shk_array_append(msgs, m);
	}
	shk_object_set_str(p, "messages", msgs);
	shk_object_set_str(p, "model", shk_cstring(doc, "example-model-1"));
	shk_object_set_str(p, "temperature", shk_real(doc, 0.2));
	shk_object_set_str(p, "max_tokens", shk_int(doc, 1024));
	return p;
}

static shk_val *mixed_object(shk_doc *doc, uint64_t *seed)
{
	shk_val *p = shk_object(doc);
	char k[32];

	for (int i = 0; i < 1000; i++) {
		shk_val *v;
		snprintf(k, sizeof(k), "key_%llu", (unsigned long long)(lcg(seed) % 100000));
		switch (i % 4) {
		case 0: v = shk_int(doc, (int64_t)(lcg(seed) % 1000000)); break;
		case 1: v = shk_real(doc, (double)(lcg(seed) % 10000) / 100.0); break;
		case 2: v = shk_cstring(doc, "value with some text, /paths/and/ünïcödé"); break;
		default: v = shk_bool(doc, i & 1); break;
		}
		shk_object_set_str(p, k, v); /* a rare duplicate key is simply skipped */
	}
	return p;
}

static shk_val *float_array(shk_doc *doc, uint64_t *seed)
{
	shk_val *a = shk_array(doc);

	for (int i = 0; i < 1000; i++) {
		double d = (double)(lcg(seed) % 1000000007) / 1000003.0;
		for (int e = (int)(lcg(seed) % 40) - 20; e; e += e < 0 ? 1 : -1)
			d = e < 0 ? d / 10 : d * 10;
		shk_array_append(a, shk_real(doc, d));
	}
	return a;
}

static int load_published(shk_doc *doc, const char *path, struct corpus *params,
                          struct corpus *vectors)
{
	shk_val *root = NULL;
	shk_parse_error err;
	const shk_val *fx;

	if (shk_json_load_file(doc, path, &root, &err) < 0) {
		fprintf(stderr, "bench_canon: %s:%d:%d: %s\n", err.source, err.line, err.column, err.text);
		return -1;
	}
	fx = shk_object_get(root, "fixtures");
	for (size_t i = 0; i < shk_val_len(fx); i++) {
		const shk_val *f = shk_array_at(fx, i);
		shk_val *sealed = shk_object(doc);
		add(params, shk_object_get(shk_object_get(f, "call"), "params"));
		for (size_t m = 0; m < shk_val_len(f); m++)
			if (!shk_val_str_eq(shk_object_key_at(f, m), "vector_hash"))
				shk_object_set(sealed, (shk_val *)shk_object_key_at(f, m),
					       (shk_val *)shk_object_value_at(f, m));
		add(vectors, sealed);
	}
	return params->n ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *dir = getenv("SHACKLE_SHARED_DIR");
	char path[4096];
	shk_doc *doc;
	uint64_t seed = 42;
	struct corpus pub = { .name = "published params (15)" };
	struct corpus vec = { .name = "published vectors, vector_hash (15)" };
	struct corpus exec = { .name = "synthetic exec params" };
	struct corpus llm = { .name = "synthetic LLM request params" };
	struct corpus mixed = { .name = "synthetic 1000-key mixed object" };
	struct corpus floats = { .name = "synthetic 1000 floats (worst case)" };
	struct corpus realistic = { .name = "realistic mix (all but floats)" };

	if (argc > 1)
		snprintf(path, sizeof(path), "%s", argv[1]);
	else
		snprintf(path, sizeof(path), "%s/conformance/sp1.0/conformance.json",
			 dir && *dir ? dir : SHK_SHARED_DIR);
	if (shk_doc_new(&doc) < 0)
		return 1;
	if (load_published(doc, path, &pub, &vec) < 0)
		return 1;
	add(&exec, exec_params(doc));
	add(&llm, llm_params(doc));
	add(&mixed, mixed_object(doc, &seed));
	add(&floats, float_array(doc, &seed));
	for (size_t i = 0; i < pub.n; i++)
		add(&realistic, pub.items[i]);
	add(&realistic, exec.items[0]);
	add(&realistic, llm.items[0]);
	add(&realistic, mixed.items[0]);

	printf("canonical JSON + SHA-256 (%s), one core, %s\n",
	       shk_sha256_accelerated() ? "SHA extensions" : "libsodium", path);
	print_load();
	if (COUNT_ALLOCS && !alloc_counter_works(pub.items[0])) {
		fprintf(stderr, "bench_canon: the allocation counter sees nothing; not reporting counts\n");
		return 1;
	}
	struct corpus *all[] = { &pub, &vec, &exec, &llm, &mixed, &floats, &realistic };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (run(all[i]) < 0) {
			fprintf(stderr, "bench_canon: hashing %s failed\n", all[i]->name);
			return 1;
		}
	run_raw_sha256();
	shk_doc_free(doc);
	return 0;
}
