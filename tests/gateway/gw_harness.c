/* SPDX-License-Identifier: MIT */
/*
 * The gateway under test with a judge built on the real shk_session (test
 * code: src/judge provides the product's). Usage:
 *   gw_harness POLICY UPSTREAM_BASE_URL LOG
 * prints "PORT TOKEN" on stdout, serves until stdin closes, and writes every
 * judgement, settlement and refusal to LOG, then the session's final state
 * and the requests that came without the token.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shackle/policy.h>

#include "gateway/gateway.h"
#include "session_judge.h"

static int run(const shk_policy *pol, const char *upstream, struct tjudge *t)
{
	struct shk_source_judge judge = tj_source(t);
	struct shk_gateway_config cfg = { .policy = pol, .anthropic_upstream = upstream,
					  .openai_upstream = upstream,
					  .anthropic_key = getenv("ANTHROPIC_API_KEY"),
					  .openai_key = getenv("OPENAI_API_KEY") };
	struct shk_gateway *gw;
	shk_session_info info;
	uint64_t unauth;
	char buf[256];
	int r = shk_gateway_start(&cfg, &judge, &gw);

	if (r < 0) {
		fprintf(stderr, "gw_harness: gateway start: %s\n", strerror(-r));
		return 1;
	}
	printf("%u %s\n", (unsigned)shk_gateway_port(gw), shk_gateway_token(gw));
	fflush(stdout);
	while (fgets(buf, sizeof(buf), stdin))
		;
	unauth = shk_gateway_stop(gw);
	tj_info(t, &info);
	fprintf(t->log, "final spent=%.9f calls=%" PRIu64 " tripped=%d reason=%s unauthenticated=%" PRIu64 "\n",
		info.budget_spent_usd, info.total_calls, info.circuit_tripped,
		info.circuit_tripped ? shk_reason_str(info.trip_reason) : "-", unauth);
	return 0;
}

int main(int argc, char **argv)
{
	struct tjudge t = { .mu = PTHREAD_MUTEX_INITIALIZER };
	shk_session_config sc = { 0 };
	shk_parse_error pe;
	shk_policy *pol;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: gw_harness POLICY UPSTREAM LOG\n");
		return 2;
	}
	if (shk_policy_load_file(argv[1], &pol, &pe) < 0) {
		fprintf(stderr, "%s:%d:%d: %s\n", pe.source, pe.line, pe.column, pe.text);
		return 2;
	}
	sc.guard = *shk_policy_guard(pol);
	t.log = fopen(argv[3], "w");
	if (!t.log || shk_session_new(&sc, &t.session) < 0) {
		fprintf(stderr, "gw_harness: %s: %m\n", argv[3]);
		return 2;
	}
	rc = run(pol, argv[2], &t);
	shk_session_free(t.session);
	shk_policy_free(pol);
	fclose(t.log);
	return rc;
}
