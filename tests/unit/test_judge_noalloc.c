/* SPDX-License-Identifier: MIT */
/*
 * The judgement of a connect (shk_pipeline_judge_obs, as shackle-run judges
 * it, with a signed ledger) takes no new document memory after the first
 * call: the pipeline's document is reset and its chunk kept. Linked with
 * -Wl,--wrap=malloc (and calloc, realloc, free): every heap call of
 * libshackle's objects in this executable is seen, and one of a chunk's
 * size (8 KB and up) during a judgement is a document made anew.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <check.h>

#include <shackle/audit.h>

#include "judge/pipeline.h"
#include "session_fixture.h"
#include "testutil.h"
#include "checkrun.h"
#include "wrap_alloc.h"

#define CHUNK_MIN 8192 /* json.c's CHUNK_SIZE: a document's chunk */

static unsigned long big_allocs, heap_calls;

static void count(size_t n)
{
	heap_calls++;
	if (n >= CHUNK_MIN)
		big_allocs++;
}

void *__wrap_malloc(size_t n)
{
	count(n);
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
	count(n * m);
	return __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
	count(n);
	return __real_realloc(p, n);
}

void __wrap_free(void *p)
{
	heap_calls++;
	__real_free(p);
}

static const char policy_text[] =
	"{\"version\":1,\"guard\":{\"max_repeat_calls\":0,\"budget_usd\":0},"
	"\"exec\":{\"default\":\"allow\"},"
	"\"net\":{\"default\":\"deny\",\"rules\":["
	"{\"name\":\"loopback\",\"cidr\":\"127.0.0.0/8\",\"action\":\"allow\"}]}}";

static struct shk_obs obs; /* large */

static struct shk_pipeline_verdict judge_connect(struct shk_pipeline *p)
{
	struct shk_pipeline_verdict v;

	memset(&obs, 0, sizeof(obs));
	obs.kind = SHK_OBS_NET;
	obs.pid = obs.tid = 50;
	obs.net = (struct shk_obs_net){ .op = SHK_OBS_CONNECT, .family = AF_INET, .socktype = SOCK_STREAM,
	                                .addr = { 127, 0, 0, 1 }, .port = 8080, .unix_pathfd = -1 };
	snprintf(obs.net.addr_str, sizeof(obs.net.addr_str), "127.0.0.1");
	ck_assert_int_eq(shk_pipeline_judge_obs(p, &obs, &v), 0);
	return v;
}

START_TEST(connect_judgement_keeps_its_document)
{
	char dir[] = "/tmp/shk-jna-XXXXXX", logp[64], cmd[96];
	struct session_fixture fx;
	struct shk_pipeline p;
	shk_key *key;
	unsigned long before, calls;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(logp, sizeof(logp), "%s/audit.jsonl", dir);
	ck_assert_int_eq(shk_key_generate(&key), 0);
	session_fixture_open(&fx, policy_text, "na", logp, key, 1);
	memset(&p, 0, sizeof(p));
	p.policy = fx.policy;
	p.session = fx.session;
	p.ledger = fx.ledger;
	ck_assert_int_eq(judge_connect(&p).verdict, SHK_ALLOW);
	/* 20 calls: not one checkpoint's interval (32), no signing in them */
	before = big_allocs;
	calls = heap_calls;
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(judge_connect(&p).verdict, SHK_ALLOW);
	ck_assert_msg(big_allocs == before, "%lu allocations of a document's chunk in 20 judgements",
	              big_allocs - before);
	fprintf(stderr, "heap calls per connect judgement: %.1f\n", (double)(heap_calls - calls) / 20);
	shk_pipeline_free_scratch(&p);
	ck_assert_int_eq(shk_ledger_close(fx.ledger), 0);
	shk_session_free(fx.session);
	shk_policy_free(fx.policy);
	shk_key_free(key);
	shk_doc_free(fx.doc);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("judge_noalloc");
	TCase *tc = tcase_create("connect");

	tcase_add_test(tc, connect_judgement_keeps_its_document);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
