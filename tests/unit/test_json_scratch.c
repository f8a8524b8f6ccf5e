/* SPDX-License-Identifier: MIT */
/*
 * jansson's blocks during shk_json_parse() come from the document's scratch
 * (src/core/json_scratch.c), and only then. This executable defines malloc,
 * calloc, realloc and free over glibc's own, so that it also counts the
 * calls libjansson.so makes (a --wrap link would see only libshackle's).
 * The counting tests are not built under AddressSanitizer, which owns
 * malloc; the others run there too, where a block freed to the wrong
 * allocator is reported.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include <shackle/json.h>

#include "testutil.h"
#include "checkrun.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#ifndef UNDER_ASAN
static atomic_ulong heap_calls;

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t m);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

void *malloc(size_t n)
{
	atomic_fetch_add_explicit(&heap_calls, 1, memory_order_relaxed);
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	atomic_fetch_add_explicit(&heap_calls, 1, memory_order_relaxed);
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	atomic_fetch_add_explicit(&heap_calls, 1, memory_order_relaxed);
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (p)
		atomic_fetch_add_explicit(&heap_calls, 1, memory_order_relaxed);
	__libc_free(p);
}
#endif

/* The line bench/bench_sdk sends: an SDK pre_exec of 220 bytes. */
static const char pre_exec[] =
	"{\"protocol_version\":\"1.0.0\",\"message_id\":\"m17\",\"pre_exec\":{\"session_id\":"
	"\"s_0123456789abcdef0123456789abcdef\",\"call_number\":18,\"tool_name\":\"web_search\","
	"\"tool_params\":{\"q\":\"query 17\"},\"estimated_cost_usd\":0.001,\"nonce\":18}}";

static void parse_ok(shk_doc *doc, const char *text, size_t len, shk_val **ret)
{
	shk_parse_error err;

	shk_doc_reset(doc);
	ck_assert_int_eq(shk_json_parse(doc, text, len, "t", ret, &err), 0);
}

#ifndef UNDER_ASAN
START_TEST(test_line_takes_no_heap_blocks)
{
	shk_doc *doc = NULL;
	shk_val *v = NULL;
	unsigned long before, during;
	shk_parse_error err;
	int r;

	ck_assert_int_eq(shk_doc_new(&doc), 0);
	parse_ok(doc, pre_exec, strlen(pre_exec), &v); /* the document's chunk and scratch */
	shk_doc_reset(doc);
	before = atomic_load(&heap_calls);
	r = shk_json_parse(doc, pre_exec, strlen(pre_exec), "t", &v, &err);
	during = atomic_load(&heap_calls) - before;
	ck_assert_int_eq(r, 0);
	/* jansson alone takes 42 blocks (84 calls with their frees) for it */
	ck_assert_uint_eq(during, 0);
	ck_assert_str_eq(shk_val_str(shk_object_get(v, "message_id"), NULL), "m17");
	shk_doc_free(doc);
}
END_TEST

START_TEST(test_window_closes)
{
	shk_doc *doc = NULL;
	shk_val *v = NULL;
	shk_parse_error err;
	unsigned long before;
	json_t *j;

	ck_assert_int_eq(shk_doc_new(&doc), 0);
	/* a parse that fails half-way, and one that succeeds */
	ck_assert_int_eq(shk_json_parse(doc, "{\"a\":[1,2,{\"b\":", 15, "t", &v, &err), -EINVAL);
	before = atomic_load(&heap_calls);
	j = json_pack("{s:s}", "k", "v");
	ck_assert_ptr_nonnull(j);
	ck_assert_uint_gt(atomic_load(&heap_calls), before);
	json_decref(j);
	parse_ok(doc, pre_exec, strlen(pre_exec), &v);
	before = atomic_load(&heap_calls);
	j = json_pack("{s:s}", "k", "v");
	ck_assert_uint_gt(atomic_load(&heap_calls), before);
	json_decref(j);
	shk_doc_free(doc);
}
END_TEST
#endif /* UNDER_ASAN */

/* A line larger than the scratch: the rest of jansson's blocks are malloc's. */
START_TEST(test_large_line)
{
	size_t n = 4000, cap = 16 * n + 64, len = 0;
	char *text = malloc(cap);
	shk_doc *doc = NULL;
	shk_val *v = NULL;

	ck_assert_ptr_nonnull(text);
	len += (size_t)snprintf(text, cap, "{");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, cap - len, "%s\"k%zu\":\"v%zu\"", i ? "," : "", i, i);
	len += (size_t)snprintf(text + len, cap - len, "}");
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	for (int round = 0; round < 3; round++) {
		parse_ok(doc, text, len, &v);
		ck_assert_uint_eq(shk_val_len(v), n);
		ck_assert_str_eq(shk_val_str(shk_object_get(v, "k3999"), NULL), "v3999");
		parse_ok(doc, pre_exec, strlen(pre_exec), &v);
		ck_assert_uint_eq(shk_val_len(v), 3);
	}
	shk_doc_free(doc);
	free(text);
}
END_TEST

/* Other threads' jansson values stay malloc's while one thread parses. */
static atomic_bool stop;

static void *other_jansson(void *arg)
{
	unsigned long *made = arg;

	while (!atomic_load(&stop)) {
		json_t *j = json_loads("{\"x\":[1,2,3],\"y\":\"z\"}", 0, NULL);
		char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

		if (!s || strcmp(s, "{\"x\":[1,2,3],\"y\":\"z\"}") != 0)
			return NULL;
		free(s);
		json_decref(j);
		(*made)++;
	}
	return arg;
}

static void *parser(void *arg)
{
	shk_doc *doc = NULL;
	shk_val *v = NULL;
	shk_parse_error err;
	void *ret = arg;

	if (shk_doc_new(&doc) < 0)
		return NULL;
	for (int i = 0; i < 20000 && ret; i++) {
		shk_doc_reset(doc);
		if (shk_json_parse(doc, pre_exec, strlen(pre_exec), "t", &v, &err) != 0 ||
		    shk_val_len(v) != 3)
			ret = NULL;
	}
	shk_doc_free(doc);
	return ret;
}

START_TEST(test_threads)
{
	pthread_t o, p[2];
	unsigned long made = 0;
	void *r;
	int tag[2];

	atomic_store(&stop, false);
	ck_assert_int_eq(pthread_create(&o, NULL, other_jansson, &made), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&p[i], NULL, parser, &tag[i]), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_join(p[i], &r), 0);
		ck_assert_ptr_eq(r, &tag[i]);
	}
	atomic_store(&stop, true);
	ck_assert_int_eq(pthread_join(o, &r), 0);
	ck_assert_ptr_eq(r, &made);
	ck_assert_uint_gt(made, 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("json_scratch");
	TCase *tc = tcase_create("scratch");

	tcase_set_timeout(tc, 60);
#ifndef UNDER_ASAN
	tcase_add_test(tc, test_line_takes_no_heap_blocks);
	tcase_add_test(tc, test_window_closes);
#endif
	tcase_add_test(tc, test_large_line);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
