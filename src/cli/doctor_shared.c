/* SPDX-License-Identifier: MIT */
/* `shackle doctor --policy FILE`: the Redis server and the scopes that the
 * policy's "shared" section names (src/scope). */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include <shackle/scope.h>

#include "cli/doctor_shared.h"

static json_t *part_json(const shk_scope_status_part *p)
{
	const shk_scope_breaker *b = &p->breaker;

	return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:{s:b, s:I, s:s, s:s}}", "level",
			 shk_scope_level_name(p->level), "scope", p->id, "key", p->key, "spent_uusd",
			 (json_int_t)p->spent_uusd, "reserved_uusd", (json_int_t)p->reserved_uusd,
			 "in_flight", (json_int_t)p->in_flight, "breaker", "open", b->open, "epoch",
			 (json_int_t)b->epoch, "by", b->by, "reason", b->reason);
}

json_t *shk_doctor_shared_json(const shk_scope_status *st)
{
	return json_pack("{s:s, s:b, s:s, s:s, s:I, s:b, s:o, s:o}", "server", st->server,
			 "reachable", st->err == 0, "error", st->err ? st->why : "", "version",
			 st->version, "rtt_us", (json_int_t)st->rtt_us, "aof", st->aof, "budget",
			 part_json(&st->budget), "breaker", part_json(&st->breaker));
}

static void print_part(const char *what, const shk_scope_status_part *p, bool budget)
{
	if (p->level == SHK_SCOPE_NONE) {
		printf("  %-8s not shared (kept in each session)\n", what);
		return;
	}
	if (!p->id[0]) {
		printf("  %-8s per session (each session's own key)\n", what);
		return;
	}
	printf("  %-8s %s (%s)  ", what, p->id, p->key);
	if (budget)
		printf("spent %.6f USD, reserved %.6f USD in %" PRIu64 " call(s) in flight\n",
		       shk_scope_uusd_to_usd(p->spent_uusd), shk_scope_uusd_to_usd(p->reserved_uusd),
		       p->in_flight);
	else if (p->breaker.open)
		printf("OPEN since %s tripped it: %s\n", p->breaker.by, p->breaker.reason);
	else
		printf("closed%s%s\n", p->breaker.by[0] ? ", last reset by " : "", p->breaker.by);
}

void shk_doctor_shared_print(const shk_scope_status *st)
{
	printf("\nshared state (Redis)\n");
	if (st->err) {
		printf("  %s: NOT REACHABLE: %s\n", st->server, st->why);
		printf("  every call of a shared scope is refused until it is\n");
		return;
	}
	printf("  %s: Redis %s, PING %" PRId64 " us, %s\n", st->server, st->version, st->rtt_us,
	       st->aof ? "appendonly on" : "appendonly OFF: a restart loses the spend, and the "
	       "scope then refuses every call");
	print_part("budget", &st->budget, true);
	print_part("breaker", &st->breaker, false);
}
