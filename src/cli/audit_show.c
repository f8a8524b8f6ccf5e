/* SPDX-License-Identifier: MIT */
/*
 * `shackle audit show`: an audit log as a person reads it, one line per
 * entry, or (--json) the entries themselves. A decision line says what was
 * judged (the command line or the destination, as logged: the redacted form
 * when the policy redacts) and which rule matched, so that calls that
 * differ read differently. Every string of the log went through display.c:
 * the agent chose program names and arguments, and a log may be crafted.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <shackle/audit.h>
#include <shackle/canon.h>

#include "cli/audit_show.h"
#include "cli/display.h"

const struct shk_usage shk_audit_show_usage = { "audit show",
	"usage: shackle audit show [--verdict ALLOW|DENY|HITL] [--tool T] [--since T]\n"
	"                          [--until T] [--no-checkpoints] [--color|--no-color]\n"
	"                          [--json] LOG...\n\n"
	"One line per entry: UTC time, seq, then for a decision the pid, tool,\n"
	"verdict, reason, the call (argv or destination, redacted as the log is),\n"
	"the matching rule, the tool call it is part of (\"part of #SEQ\") or \"no\n"
	"repeat guard\", the budget when it changed, the operator of a human\n"
	"decision and the model's proposal an exec carries out; session, human\n"
	"(hitl), breaker, post_exec, checkpoint and end entries are summarised.\n"
	"--verdict/--tool keep only matching decisions; --since/--until take\n"
	"seconds since the epoch (fractions allowed) or YYYY-MM-DDTHH:MM:SS[Z]\n"
	"(UTC); --no-checkpoints hides checkpoint entries.\n"
	"--json prints each entry that passes the filters as logged, one canonical\n"
	"JSON object per line. Colour only on a terminal without NO_COLOR.\n"
	"show does not verify (`shackle audit verify` does); lines it cannot read\n"
	"are named on stderr and make it exit 1.\n" };

/* How much of a call a line shows; the log has every byte. */
#define CALL_MAX 300

struct show {
	const char *verdict, *tool;
	int64_t since, until;
	bool color, json, no_checkpoints;
	const char *file;
	uint64_t shown, bad;
};

#define C_RESET "\033[0m"
#define C_GREEN "\033[32m"
#define C_RED "\033[31m"
#define C_YELLOW "\033[33m"
#define C_DIM "\033[2m"
#define C_BOLD "\033[1m"

static int parse_time(const char *s, int64_t *ret)
{
	struct tm tm = { 0 };
	char *end;
	double d;

	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end && (*end == 0 || (end[0] == 'Z' && end[1] == 0))) {
		*ret = (int64_t)timegm(&tm) * 1000000000LL;
		return 0;
	}
	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || *end || d < 0 || d > 9.2e9)
		return -EINVAL;
	*ret = (int64_t)(d * 1e9);
	return 0;
}

/* A string member for the terminal (display.c), dflt when absent. A few
 * buffers in turn: one printf shows several. The buffer is emptied first:
 * an empty string must not bring back what an earlier field left there. */
static const char *str_or(const shk_val *v, const char *dflt)
{
	static char bufs[8][256];
	static unsigned next;
	const char *s = shk_val_str(v, NULL);
	char *b = bufs[next++ % 8];

	s = s ? s : dflt;
	b[0] = 0;
	if (!*s)
		return b;
	return shk_cli_text(s, b, sizeof(bufs[0]));
}

static void fmt_time(int64_t ns, char *out, size_t len)
{
	time_t t = (time_t)(ns / 1000000000LL);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ns % 1000000000LL / 1000000));
}

/* An amount for people: 6 significant digits, and what arithmetic left of
 * a spent budget (1.041e-17) as the 0 it is. The log keeps the exact value. */
static void fmt_usd(double d, char *out, size_t len)
{
	snprintf(out, len, "%.6g", fabs(d) < 1e-9 ? 0.0 : d);
}

/* "  budget 5 -> 4.5" when a budget changed, else nothing. */
static void fmt_budget(const shk_val *budget, char *out, size_t len)
{
	double before, after;
	char b[32], a[32];

	out[0] = 0;
	if (!shk_val_number(shk_object_get(budget, "before"), &before) ||
	    !shk_val_number(shk_object_get(budget, "after"), &after) || before == after)
		return;
	fmt_usd(before, b, sizeof(b));
	fmt_usd(after, a, sizeof(a));
	snprintf(out, len, "  budget %s -> %s", b, a);
}

static const char *verdict_color(const struct show *s, const char *v)
{
	if (!s->color)
		return "";
	if (!strcmp(v, "ALLOW"))
		return C_GREEN;
	if (!strcmp(v, "DENY"))
		return C_RED;
	return C_YELLOW;
}

/* Params that are neither an exec nor a network call (a model request, a
 * proposal, an SDK call): their canonical JSON, cut, escaped for a terminal. */
static char *params_text(const shk_val *params)
{
	char *json = NULL, *out = NULL;
	size_t len = 0, olen = 0;
	FILE *m;

	if (shk_canon_dump(params, &json, &len) < 0)
		return NULL;
	if (len > CALL_MAX)
		json[CALL_MAX] = '\0';
	m = open_memstream(&out, &olen);
	if (m) {
		shk_cli_put_text(m, json);
		if (len > CALL_MAX)
			fputs(" ...", m);
		if (fclose(m) != 0) {
			free(out);
			out = NULL;
		}
	}
	free(json);
	return out;
}

/* What was judged: argv, "unix PATH" or "PROTO ADDR port N" (display.c). */
static char *call_text(const shk_val *e)
{
	const shk_val *params = shk_object_get(e, "params");
	char *what;

	if (shk_val_type(params) != SHK_OBJECT) {
		/* params the log could not represent: say why */
		char buf[128];

		snprintf(buf, sizeof(buf), "(params not logged: %s)",
		         str_or(shk_object_get(e, "params_status"), "?"));
		return strdup(buf);
	}
	what = shk_cli_summary(params, CALL_MAX);
	if (what && !what[0]) {
		free(what);
		what = shk_val_len(params) ? params_text(params) : strdup("-");
	}
	return what;
}

/* What took the call out of the repeat guard: the tool call it is part of
 * (the seq of that exec's decision), or its rule; and the input members
 * its rule left out of a proposal's identity (ignore_input). */
static void show_ident(const shk_val *in)
{
	const shk_val *t = shk_object_get(in, "tool_call"), *g = shk_object_get(in, "repeat_guard");
	const shk_val *ign = shk_object_get(in, "ignored_input");

	if (shk_val_type(t) == SHK_INT)
		printf("  part of #%" PRId64, shk_val_int(t));
	if (shk_val_type(g) == SHK_BOOL && !shk_val_bool(g))
		printf("  no repeat guard");
	if (shk_val_type(ign) == SHK_OBJECT) {
		char *text = params_text(ign);

		printf("  ignored %s", text ? text : "(out of memory)");
		free(text);
	}
}

static void show_decision(struct show *s, const shk_val *e, const char *when, int64_t seq)
{
	const char *verdict = str_or(shk_object_get(e, "verdict"), "?");
	const shk_val *rule = shk_object_get(e, "rule"), *op = shk_object_get(e, "operator");
	char budget[96], *what = call_text(e);

	const char *origin = shk_val_str(shk_object_get(shk_object_get(e, "inputs"), "origin"), NULL);
	const shk_val *link = shk_object_get(shk_object_get(e, "inputs"), "proposal");

	fmt_budget(shk_object_get(e, "budget"), budget, sizeof(budget));
	/* a call of the gateway or the SDK has no pid: its origin instead */
	if (origin) {
		printf("%s %6" PRId64 "  ", when, seq);
		shk_cli_put_text(stdout, origin);
		printf("%*s", (int)(strlen(origin) < 12 ? 12 - strlen(origin) : 1), "");
	} else {
		printf("%s %6" PRId64 "  pid %-7" PRId64 " ", when, seq, shk_val_int(shk_object_get(e, "pid")));
	}
	printf("%-16s %s%-5s%s %-21s %s", str_or(shk_object_get(e, "tool"), "?"),
	       verdict_color(s, verdict), verdict, s->color ? C_RESET : "",
	       str_or(shk_object_get(e, "reason"), "?"), what ? what : "(out of memory)");
	if (shk_val_str(rule, NULL))
		printf("  rule %s", str_or(rule, ""));
	show_ident(shk_object_get(e, "inputs"));
	printf("%s", budget);
	if (shk_val_str(op, NULL))
		printf("  operator %s", str_or(op, ""));
	/* the model's proposal this exec carries out (docs/gateway.md) */
	if (shk_val_type(shk_object_get(link, "seq")) == SHK_INT)
		printf("  proposal seq %" PRId64 " %s", shk_val_int(shk_object_get(link, "seq")),
		       str_or(shk_object_get(link, "tool"), "?"));
	printf("\n");
	free(what);
}

/* A hold refused at once for want of an operator (shackle-run
 * --non-interactive, or CI): pipeline.c logs it as "expired" with no
 * operator and no §3.6 transition, where a call that was held and timed
 * out has both a "pending" entry before it and a transition. */
static bool refused_noninteractive(const shk_val *e)
{
	const shk_val *tr = shk_object_get(e, "transition");

	return shk_val_str_eq(shk_object_get(e, "state"), "expired") &&
	       !shk_val_str(shk_object_get(e, "operator"), NULL) && (!tr || shk_val_type(tr) == SHK_NULL);
}

static void show_hitl(const shk_val *e)
{
	const shk_val *op = shk_object_get(e, "operator");

	/* the id the operator saw in `shackle pending` is the nonce */
	if (refused_noninteractive(e))
		printf("hitl refused (non-interactive: no operator channel)  id %s",
		       str_or(shk_object_get(e, "nonce"), "?"));
	else
		printf("hitl %s  id %s", str_or(shk_object_get(e, "state"), "?"),
		       str_or(shk_object_get(e, "nonce"), "?"));
	if (shk_val_str(op, NULL))
		printf("  operator %s", str_or(op, ""));
}

/* Input a source answered before it was a tool call: who, what, and the
 * message the agent got. */
static void show_refusal(const shk_val *e)
{
	const shk_val *d = shk_object_get(e, "detail");
	const shk_val *st = shk_object_get(d, "status");

	printf("REFUSED %s %s", str_or(shk_object_get(e, "origin"), "?"), str_or(shk_object_get(e, "what"), "?"));
	if (shk_val_type(st) == SHK_INT)
		printf("  status %" PRId64, shk_val_int(st));
	if (shk_val_str(shk_object_get(d, "message"), NULL))
		printf("  %.200s", str_or(shk_object_get(d, "message"), ""));
}

static void show_other(struct show *s, const shk_val *e, const char *kind, const char *when,
                       int64_t seq)
{
	const char *dim = s->color ? C_DIM : "", *bold = s->color ? C_BOLD : "";
	const char *reset = s->color ? C_RESET : "";
	char budget[96], cost[32];

	printf("%s %6" PRId64 "  %s", when, seq, !strcmp(kind, "checkpoint") ? dim : bold);
	if (!strcmp(kind, "session_start")) {
		printf("session_start %s  policy %.16s  key %s  host %s", str_or(shk_object_get(e, "session"), "?"),
		       str_or(shk_object_get(e, "policy_digest"), "-"),
		       str_or(shk_object_get(e, "key_fingerprint"), "?"), str_or(shk_object_get(e, "host"), "?"));
	} else if (!strcmp(kind, "hitl")) {
		show_hitl(e);
	} else if (!strcmp(kind, "breaker_trip")) {
		printf("BREAKER TRIP %s -> %s  call %" PRId64, str_or(shk_object_get(e, "trigger"), "?"),
		       str_or(shk_object_get(e, "containment"), "?"), shk_val_int(shk_object_get(e, "call")));
	} else if (!strcmp(kind, "refusal")) {
		show_refusal(e);
	} else if (!strcmp(kind, "post_exec")) {
		fmt_usd(shk_val_real(shk_object_get(e, "actual_cost")), cost, sizeof(cost));
		fmt_budget(shk_object_get(e, "budget"), budget, sizeof(budget));
		printf("post_exec call %" PRId64 "  %s  cost %s%s", shk_val_int(shk_object_get(e, "call")),
		       shk_val_bool(shk_object_get(e, "success")) ? "ok" : "failed", cost, budget);
	} else if (!strcmp(kind, "checkpoint")) {
		printf("checkpoint (signs seq %" PRId64 "..%" PRId64 ")",
		       shk_val_int(shk_object_get(e, "from_seq")), seq);
	} else if (!strcmp(kind, "session_end")) {
		printf("session_end exit %" PRId64, shk_val_int(shk_object_get(e, "exit_status")));
	} else {
		printf("%s", str_or(shk_object_get(e, "kind"), "?"));
	}
	printf("%s\n", reset);
}

static bool wanted(const struct show *s, const shk_val *e, const char *kind)
{
	int64_t t = shk_val_int(shk_object_get(e, "time_ns"));

	if ((s->since && t < s->since) || (s->until && t > s->until))
		return false;
	if (s->no_checkpoints && !strcmp(kind, "checkpoint"))
		return false;
	if ((s->verdict || s->tool) && strcmp(kind, "decision"))
		return false;
	return (!s->verdict || shk_val_str_eq(shk_object_get(e, "verdict"), s->verdict)) &&
	       (!s->tool || shk_val_str_eq(shk_object_get(e, "tool"), s->tool));
}

static void print_entry_json(const shk_val *e)
{
	char *text = NULL;
	size_t len;

	if (shk_canon_dump(e, &text, &len) == 0)
		printf("%s\n", text);
	free(text);
}

static int show_line(void *ctx, uint64_t lineno, const char *line, size_t len, bool torn)
{
	struct show *s = ctx;
	shk_doc *doc = NULL;
	shk_val *e = NULL;
	shk_parse_error perr;
	const char *kind;
	char when[80];
	int64_t seq;

	if (torn || shk_doc_new(&doc) < 0 || shk_json_parse(doc, line, len, s->file, &e, &perr) < 0 ||
	    !(kind = shk_val_str(shk_object_get(e, "kind"), NULL))) {
		fprintf(stderr, "shackle audit: %s:%" PRIu64 ": %s\n", s->file, lineno,
		        torn ? "torn last line (no newline)" : "not a ledger entry");
		s->bad++;
		shk_doc_free(doc);
		return 0;
	}
	if (wanted(s, e, kind)) {
		fmt_time(shk_val_int(shk_object_get(e, "time_ns")), when, sizeof(when));
		seq = shk_val_int(shk_object_get(e, "seq"));
		if (s->json)
			print_entry_json(e);
		else if (!strcmp(kind, "decision"))
			show_decision(s, e, when, seq);
		else
			show_other(s, e, kind, when, seq);
		s->shown++;
	}
	shk_doc_free(doc);
	return 0;
}

static int parse(int argc, char **argv, struct show *s)
{
	enum { O_COLOR = 256, O_NO_COLOR, O_NO_CHECKPOINTS, O_JSON };
	static const struct option opts[] = {
		{ "verdict", required_argument, NULL, 'v' },
		{ "tool", required_argument, NULL, 't' },
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "color", no_argument, NULL, O_COLOR },
		{ "no-color", no_argument, NULL, O_NO_COLOR },
		{ "no-checkpoints", no_argument, NULL, O_NO_CHECKPOINTS },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct shk_usage *u = &shk_audit_show_usage;
	int c, color = -1;

	while ((c = getopt_long(argc, argv, "v:t:s:u:h", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			if (strcmp(optarg, "ALLOW") && strcmp(optarg, "DENY") && strcmp(optarg, "HITL"))
				return shk_cli_usage_error(u, "--verdict must be ALLOW, DENY or HITL");
			s->verdict = optarg;
			break;
		case 't': s->tool = optarg; break;
		case 's':
		case 'u':
			if (parse_time(optarg, c == 's' ? &s->since : &s->until) < 0)
				return shk_cli_usage_error(u, "--%s %s: not a time", c == 's' ? "since" : "until",
				                           optarg);
			break;
		case O_COLOR: color = 1; break;
		case O_NO_COLOR: color = 0; break;
		case O_NO_CHECKPOINTS: s->no_checkpoints = true; break;
		case O_JSON: s->json = true; break;
		case 'h': shk_cli_help(u); return 1;
		default: return shk_cli_synopsis(u);
		}
	}
	if (optind == argc)
		return shk_cli_usage_error(u, "no LOG given");
	s->color = !s->json && (color >= 0 ? color : (isatty(STDOUT_FILENO) && !getenv("NO_COLOR")));
	return 0;
}

int shk_audit_show(int argc, char **argv)
{
	struct show s = { 0 };
	int r = parse(argc, argv, &s);

	if (r)
		return r == 1 ? 0 : r;
	for (int i = optind; i < argc; i++) {
		s.file = argv[i];
		r = shk_ledger_read_lines(argv[i], show_line, &s);
		if (r < 0) {
			shk_cli_error("audit", "%s: %s", argv[i], strerror(-r));
			return 2;
		}
	}
	if (s.bad)
		fprintf(stderr, "shackle audit: %" PRIu64 " line(s) could not be shown; "
		        "`shackle audit verify` tells whether the log is intact\n", s.bad);
	return s.bad ? 1 : 0;
}
