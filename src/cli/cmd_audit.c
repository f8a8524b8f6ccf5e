/* SPDX-License-Identifier: MIT */
/* `shackle audit verify|show|export|replay`: the evidence side of the ledger. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <shackle/audit.h>
#include <shackle/canon.h>

#include "cli/commands.h"
#include "cli/display.h"

static void audit_usage(FILE *f)
{
	fprintf(f,
	        "usage: shackle audit verify --pubkey FILE [--json] [--live] LOG...\n"
	        "       shackle audit verify --bundle DIR|FILE.tar [--pubkey FILE] [--json]\n"
	        "       shackle audit show [--verdict V] [--tool T] [--since T] [--until T]\n"
	        "                          [--color|--no-color] LOG...\n"
	        "       shackle audit export --pubkey FILE --out DIR|FILE.tar LOG...\n"
	        "       shackle audit replay [--pubkey FILE [--live]] [--json] LOG...\n\n"
	        "LOG... is one chain in order: a ledger and the files it was rotated into.\n"
	        "verify exits 0 only when every entry is chained and signed and every\n"
	        "session is complete; otherwise it names the first bad entry and its class.\n"
	        "Times for --since/--until: seconds since the epoch (fractions allowed) or\n"
	        "YYYY-MM-DDTHH:MM:SS[Z] (UTC).\n");
}

/* ---- verify -------------------------------------------------------------- */

struct first_entry {
	shk_doc *doc;
	shk_val *v;
};

static int take_first(void *ctx, uint64_t lineno, const char *line, size_t len, bool torn)
{
	struct first_entry *fe = ctx;
	shk_parse_error perr;

	(void)lineno;
	if (!torn)
		shk_json_parse(fe->doc, line, len, "ledger", &fe->v, &perr);
	return 1; /* stop after the first line */
}

/* Does the bundle's policy.json hash to the first session's policy_digest? */
static bool bundle_policy_matches(const shk_bundle *b)
{
	struct first_entry fe = { 0 };
	shk_val *pol = NULL;
	shk_parse_error perr;
	uint8_t d[SHK_SHA256_LEN];
	char hex[SHK_SHA256_HEX_LEN + 1];
	bool ok = false;

	if (shk_doc_new(&fe.doc) < 0)
		return false;
	if (shk_json_load_file(fe.doc, b->policy, &pol, &perr) == 0 && shk_canon_sha256(pol, d) == 0 &&
	    shk_ledger_read_lines(b->logs[0], take_first, &fe) >= 0) {
		shk_hex(d, sizeof(d), hex);
		ok = shk_val_str_eq(shk_object_get(fe.v, "policy_digest"), hex);
	}
	shk_doc_free(fe.doc);
	return ok;
}

static shk_val *report_json(shk_doc *doc, const shk_verify_report *rep)
{
	shk_val *o = shk_object(doc), *arr = shk_array(doc);
	int r = o && arr ? 0 : -ENOMEM;

#define SET(k, v) do { if (r == 0) r = shk_object_set_str(o, k, v); } while (0)
	SET("result", shk_cstring(doc, shk_verify_class_id(rep->result)));
	SET("ok", shk_bool(doc, rep->result == SHK_VERIFY_OK));
	SET("entries", shk_int(doc, (int64_t)rep->entries));
	SET("chained", shk_int(doc, (int64_t)rep->chained));
	SET("signed", shk_int(doc, (int64_t)rep->signed_entries));
	SET("checkpoints", shk_int(doc, (int64_t)rep->checkpoints));
	SET("sessions", shk_int(doc, (int64_t)rep->sessions));
	SET("files", shk_int(doc, (int64_t)rep->files));
	SET("key_fingerprint", shk_cstring(doc, rep->key_fingerprint));
	SET("signed_head", rep->head[0] ? shk_cstring(doc, rep->head) : shk_null(doc));
	for (size_t i = 0; r == 0 && i < rep->nfindings; i++) {
		const shk_verify_finding *f = &rep->findings[i];
		shk_val *fo = shk_object(doc);

		if (!fo)
			return NULL;
		r = shk_object_set_str(fo, "class", shk_cstring(doc, shk_verify_class_id(f->cls)));
		if (r == 0)
			r = shk_object_set_str(fo, "description", shk_cstring(doc, shk_verify_class_name(f->cls)));
		if (r == 0)
			r = shk_object_set_str(fo, "file", shk_cstring(doc, f->file));
		if (r == 0)
			r = shk_object_set_str(fo, "line", shk_int(doc, (int64_t)f->line));
		if (r == 0)
			r = shk_object_set_str(fo, "seq", f->seq >= 0 ? shk_int(doc, f->seq) : shk_null(doc));
		if (r == 0)
			r = shk_object_set_str(fo, "detail", shk_cstring(doc, f->detail));
		if (r == 0)
			r = shk_array_append(arr, fo);
	}
	SET("findings", arr);
#undef SET
	return r == 0 ? o : NULL;
}

/* Canonical JSON text of the report, malloc'd. */
static int report_text(const shk_verify_report *rep, char **ret, size_t *ret_len)
{
	shk_doc *doc = NULL;
	shk_val *v;
	int r = shk_doc_new(&doc);

	if (r < 0)
		return r;
	v = report_json(doc, rep);
	r = v ? shk_canon_dump(v, ret, ret_len) : -ENOMEM;
	shk_doc_free(doc);
	return r;
}

static void print_report(const shk_verify_report *rep)
{
	if (rep->result == SHK_VERIFY_OK) {
		printf("intact: %" PRIu64 " entries in %" PRIu64 " file(s), %" PRIu64 " session(s), "
		       "%" PRIu64 " signed checkpoints, key %s\nsigned head %s\n", rep->entries, rep->files,
		       rep->sessions, rep->checkpoints, rep->key_fingerprint, rep->head);
		return;
	}
	printf("NOT INTACT: %s\n", shk_verify_class_name(rep->result));
	for (size_t i = 0; i < rep->nfindings; i++) {
		const shk_verify_finding *f = &rep->findings[i];

		printf("  %s: %s:%" PRIu64, shk_verify_class_name(f->cls), f->file, f->line);
		if (f->seq >= 0)
			printf(" (seq %" PRId64 ")", f->seq);
		printf(": %s\n", f->detail);
	}
	printf("verified: %" PRIu64 " of %" PRIu64 " entries chained, %" PRIu64 " signed, key %s\n",
	       rep->chained, rep->entries, rep->signed_entries, rep->key_fingerprint);
}

static int load_pub(const char *path, uint8_t pk[SHK_ED25519_PUBLIC_LEN])
{
	shk_key_error err = { "" };

	if (shk_pubkey_load_file(path, pk, &err) < 0) {
		shk_cli_error("audit", "%s", err.text);
		return -1;
	}
	return 0;
}

static int cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pubkey", required_argument, NULL, 'k' },
		{ "bundle", required_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "live", no_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	const char *pubkey = NULL, *bundle = NULL;
	bool json = false;
	shk_verify_options vo = { 0 };
	shk_verify_report rep;
	uint8_t pk[SHK_ED25519_PUBLIC_LEN];
	shk_bundle b = { .digest_mismatch = -1 };
	const char *const *logs;
	size_t nlogs;
	char err[512] = "";
	int c, r, status;

	while ((c = getopt_long(argc, argv, "k:b:jl", opts, NULL)) != -1) {
		switch (c) {
		case 'k': pubkey = optarg; break;
		case 'b': bundle = optarg; break;
		case 'j': json = true; break;
		case 'l': vo.live = true; break;
		default: audit_usage(stderr); return 2;
		}
	}
	if (bundle ? optind != argc : (!pubkey || optind == argc)) {
		shk_cli_error("audit", "verify needs --pubkey FILE and LOG..., or --bundle PATH");
		return 2;
	}
	if (bundle) {
		r = shk_bundle_open(bundle, &b, err, sizeof(err));
		if (r < 0) {
			shk_cli_error("audit", "bundle %s: %s", bundle, err[0] ? err : strerror(-r));
			return 2;
		}
		if (!pubkey)
			pubkey = b.pubkey;
		logs = (const char *const *)b.logs;
		nlogs = b.nlogs;
	} else {
		logs = (const char *const *)argv + optind;
		nlogs = (size_t)(argc - optind);
	}
	if (load_pub(pubkey, pk) < 0) {
		shk_bundle_close(&b);
		return 2;
	}
	r = shk_verify_files(logs, nlogs, pk, &vo, &rep);
	if (r < 0) {
		shk_cli_error("audit", "verify: %s", strerror(-r));
		shk_bundle_close(&b);
		return 2;
	}
	/* unreadable input (missing, empty, not a regular file): 2, as documented */
	status = rep.result == SHK_VERIFY_OK ? 0 : rep.result == SHK_VERIFY_IO ? 2 : 1;
	if (json) {
		char *text = NULL;
		size_t len = 0;

		if (report_text(&rep, &text, &len) < 0) {
			shk_bundle_close(&b);
			return 2;
		}
		printf("%s\n", text);
		free(text);
	} else {
		print_report(&rep);
	}
	if (bundle && b.policy[0] && !bundle_policy_matches(&b)) {
		shk_cli_error("audit", "bundle policy.json does not match the policy_digest of the log");
		status = 1;
	}
	if (b.digest_mismatch >= 0) {
		shk_cli_error("audit", "bundle file %s differs from the digest in its manifest",
		              b.mismatch_name);
		status = 1;
	}
	shk_bundle_close(&b);
	return status;
}

/* ---- show ---------------------------------------------------------------- */

struct show {
	const char *verdict, *tool;
	int64_t since, until;
	bool color;
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

/* A string of the log for the terminal: the agent chose program names and
 * a log may be crafted, so never raw (display.c). A few buffers in turn:
 * one printf shows several. */
static const char *str_or(const shk_val *v, const char *dflt)
{
	static char bufs[8][256];
	static unsigned next;
	const char *s = shk_val_str(v, NULL);
	char *b = bufs[next++ % 8];

	return shk_cli_text(s ? s : dflt, b, sizeof(bufs[0]));
}

static void fmt_time(int64_t ns, char *out, size_t len)
{
	time_t t = (time_t)(ns / 1000000000LL);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ns % 1000000000LL / 1000000));
}

static void fmt_num(const shk_val *v, char *out, size_t len)
{
	double d;

	if (shk_val_number(v, &d))
		snprintf(out, len, "%.4g", d);
	else
		snprintf(out, len, "-");
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

static void show_decision(struct show *s, const shk_val *e, const char *when, int64_t seq)
{
	const char *verdict = str_or(shk_object_get(e, "verdict"), "?");
	const shk_val *budget = shk_object_get(e, "budget");
	const char *op = shk_val_str(shk_object_get(e, "operator"), NULL) ?
	                 str_or(shk_object_get(e, "operator"), "") : NULL;
	char before[32], after[32];

	fmt_num(shk_object_get(budget, "before"), before, sizeof(before));
	fmt_num(shk_object_get(budget, "after"), after, sizeof(after));
	printf("%s %6" PRId64 "  pid %-7" PRId64 " %-24s %s%-5s%s %-40s budget %s -> %s%s%s\n",
	       when, seq, shk_val_int(shk_object_get(e, "pid")),
	       str_or(shk_object_get(e, "tool"), "?"), verdict_color(s, verdict), verdict,
	       s->color ? C_RESET : "", str_or(shk_object_get(e, "reason"), "?"), before, after,
	       op ? "  operator " : "", op ? op : "");
}

static void show_other(struct show *s, const shk_val *e, const char *kind, const char *when,
                       int64_t seq)
{
	const char *dim = s->color ? C_DIM : "", *bold = s->color ? C_BOLD : "";
	const char *reset = s->color ? C_RESET : "";

	printf("%s %6" PRId64 "  %s", when, seq, !strcmp(kind, "checkpoint") ? dim : bold);
	if (!strcmp(kind, "session_start"))
		printf("session_start %s  policy %.16s  key %s  host %s", str_or(shk_object_get(e, "session"), "?"),
		       str_or(shk_object_get(e, "policy_digest"), "-"),
		       str_or(shk_object_get(e, "key_fingerprint"), "?"), str_or(shk_object_get(e, "host"), "?"));
	else if (!strcmp(kind, "hitl"))
		/* the id the operator saw in `shackle pending` is the nonce */
		printf("hitl %s  id %s  operator %s", str_or(shk_object_get(e, "state"), "?"),
		       str_or(shk_object_get(e, "nonce"), "?"), str_or(shk_object_get(e, "operator"), "-"));
	else if (!strcmp(kind, "breaker_trip"))
		printf("BREAKER TRIP %s -> %s  call %" PRId64, str_or(shk_object_get(e, "trigger"), "?"),
		       str_or(shk_object_get(e, "containment"), "?"), shk_val_int(shk_object_get(e, "call")));
	else if (!strcmp(kind, "post_exec"))
		printf("post_exec call %" PRId64 "  %s  cost %g", shk_val_int(shk_object_get(e, "call")),
		       shk_val_bool(shk_object_get(e, "success")) ? "ok" : "failed",
		       shk_val_real(shk_object_get(e, "actual_cost")));
	else if (!strcmp(kind, "checkpoint"))
		printf("checkpoint (signs seq %" PRId64 "..%" PRId64 ")",
		       shk_val_int(shk_object_get(e, "from_seq")), seq);
	else if (!strcmp(kind, "session_end"))
		printf("session_end exit %" PRId64, shk_val_int(shk_object_get(e, "exit_status")));
	else
		printf("%s", str_or(shk_object_get(e, "kind"), "?"));
	printf("%s\n", reset);
}

static int show_line(void *ctx, uint64_t lineno, const char *line, size_t len, bool torn)
{
	struct show *s = ctx;
	shk_doc *doc = NULL;
	shk_val *e = NULL;
	shk_parse_error perr;
	const char *kind;
	char when[80];
	int64_t t;

	if (torn || shk_doc_new(&doc) < 0 || shk_json_parse(doc, line, len, s->file, &e, &perr) < 0 ||
	    !(kind = shk_val_str(shk_object_get(e, "kind"), NULL))) {
		fprintf(stderr, "shackle audit: %s:%" PRIu64 ": %s\n", s->file, lineno,
		        torn ? "torn last line (no newline)" : "not a ledger entry");
		s->bad++;
		shk_doc_free(doc);
		return 0;
	}
	t = shk_val_int(shk_object_get(e, "time_ns"));
	if ((s->since && t < s->since) || (s->until && t > s->until) ||
	    ((s->verdict || s->tool) && strcmp(kind, "decision")) ||
	    (s->verdict && !shk_val_str_eq(shk_object_get(e, "verdict"), s->verdict)) ||
	    (s->tool && !shk_val_str_eq(shk_object_get(e, "tool"), s->tool))) {
		shk_doc_free(doc);
		return 0;
	}
	fmt_time(t, when, sizeof(when));
	if (!strcmp(kind, "decision"))
		show_decision(s, e, when, shk_val_int(shk_object_get(e, "seq")));
	else
		show_other(s, e, kind, when, shk_val_int(shk_object_get(e, "seq")));
	s->shown++;
	shk_doc_free(doc);
	return 0;
}

static int cmd_show(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "verdict", required_argument, NULL, 'v' },
		{ "tool", required_argument, NULL, 't' },
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "color", no_argument, NULL, 'c' },
		{ "no-color", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	struct show s = { 0 };
	int c, r, color = -1;

	while ((c = getopt_long(argc, argv, "v:t:s:u:", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			if (strcmp(optarg, "ALLOW") && strcmp(optarg, "DENY") && strcmp(optarg, "HITL")) {
				shk_cli_error("audit", "--verdict must be ALLOW, DENY or HITL");
				return 2;
			}
			s.verdict = optarg;
			break;
		case 't': s.tool = optarg; break;
		case 's':
		case 'u':
			if (parse_time(optarg, c == 's' ? &s.since : &s.until) < 0) {
				shk_cli_error("audit", "--%s %s: not a time", c == 's' ? "since" : "until", optarg);
				return 2;
			}
			break;
		case 'c': color = 1; break;
		case 'n': color = 0; break;
		default: audit_usage(stderr); return 2;
		}
	}
	if (optind == argc) {
		shk_cli_error("audit", "show needs LOG...");
		return 2;
	}
	s.color = color >= 0 ? color : (isatty(STDOUT_FILENO) && !getenv("NO_COLOR"));
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

/* ---- export -------------------------------------------------------------- */

static int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pubkey", required_argument, NULL, 'k' },
		{ "out", required_argument, NULL, 'o' },
		{ "live", no_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	const char *pubkey = NULL, *out = NULL;
	shk_verify_options vo = { 0 };
	shk_verify_report rep;
	uint8_t pk[SHK_ED25519_PUBLIC_LEN];
	struct first_entry fe = { 0 };
	const shk_val *policy = NULL;
	char *text = NULL, err[512] = "";
	size_t len = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, "k:o:l", opts, NULL)) != -1) {
		switch (c) {
		case 'k': pubkey = optarg; break;
		case 'o': out = optarg; break;
		case 'l': vo.live = true; break;
		default: audit_usage(stderr); return 2;
		}
	}
	if (!pubkey || !out || optind == argc) {
		shk_cli_error("audit", "export needs --pubkey FILE --out DIR|FILE.tar LOG...");
		return 2;
	}
	if (load_pub(pubkey, pk) < 0)
		return 2;
	r = shk_verify_files((const char *const *)argv + optind, (size_t)(argc - optind), pk, &vo, &rep);
	if (r == 0)
		r = report_text(&rep, &text, &len);
	if (r == 0)
		r = shk_doc_new(&fe.doc);
	if (r == 0 && shk_ledger_read_lines(argv[optind], take_first, &fe) >= 0 &&
	    shk_val_str_eq(shk_object_get(fe.v, "kind"), "session_start"))
		policy = shk_object_get(fe.v, "policy");
	if (shk_val_type(policy) == SHK_NULL)
		policy = NULL;
	if (r == 0)
		r = shk_bundle_export(out, (const char *const *)argv + optind, (size_t)(argc - optind),
		                      pubkey, policy, text, len, err, sizeof(err));
	free(text);
	shk_doc_free(fe.doc);
	if (r < 0) {
		shk_cli_error("audit", "export: %s", err[0] ? err : strerror(-r));
		return 2;
	}
	printf("%s: %zu log file(s), verification %s\n", out, (size_t)(argc - optind),
	       shk_verify_class_name(rep.result));
	return rep.result == SHK_VERIFY_OK ? 0 : 1;
}

/* ---- replay -------------------------------------------------------------- */

static int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pubkey", required_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "live", no_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	const char *pubkey = NULL;
	const char *const *logs;
	size_t nlogs;
	bool json = false, live = false;
	shk_replay_report rep;
	int c, r;

	while ((c = getopt_long(argc, argv, "k:jl", opts, NULL)) != -1) {
		switch (c) {
		case 'k': pubkey = optarg; break;
		case 'j': json = true; break;
		case 'l': live = true; break;
		default: audit_usage(stderr); return 2;
		}
	}
	if (optind == argc) {
		shk_cli_error("audit", "replay needs LOG...");
		return 2;
	}
	logs = (const char *const *)argv + optind;
	nlogs = (size_t)(argc - optind);
	if (pubkey) {
		shk_verify_report vrep;
		uint8_t pk[SHK_ED25519_PUBLIC_LEN];

		if (load_pub(pubkey, pk) < 0)
			return 2;
		/* as verify: a log whose last session has no end was cut (or is
		 * still written: --live), and a replay of it must not say "ok" */
		r = shk_verify_files(logs, nlogs, pk, &(shk_verify_options){ .live = live }, &vrep);
		if (r < 0 || vrep.result != SHK_VERIFY_OK) {
			shk_cli_error("audit", "refusing to replay a log that does not verify (%s); "
			              "run `shackle audit verify`", r < 0 ? strerror(-r) : shk_verify_class_name(vrep.result));
			return 1;
		}
	}
	r = shk_replay_files(logs, nlogs, &rep);
	if (r < 0) {
		shk_cli_error("audit", "replay: %s", strerror(-r));
		return 2;
	}
	if (json) {
		shk_doc *doc = NULL;
		shk_val *o;
		char *text = NULL;
		size_t len;

		if (shk_doc_new(&doc) < 0)
			return 2;
		o = shk_object(doc);
		shk_object_set_str(o, "result", shk_cstring(doc, shk_replay_result_name(rep.result)));
		shk_object_set_str(o, "ok", shk_bool(doc, rep.result == SHK_REPLAY_OK));
		shk_object_set_str(o, "sessions", shk_int(doc, (int64_t)rep.sessions));
		shk_object_set_str(o, "decisions", shk_int(doc, (int64_t)rep.decisions));
		shk_object_set_str(o, "post_execs", shk_int(doc, (int64_t)rep.post_execs));
		shk_object_set_str(o, "hitl_events", shk_int(doc, (int64_t)rep.hitl_events));
		shk_object_set_str(o, "breaker_trips", shk_int(doc, (int64_t)rep.breaker_trips));
		shk_object_set_str(o, "redacted_decisions", shk_int(doc, (int64_t)rep.redacted));
		shk_object_set_str(o, "error_signals_from_log", shk_int(doc, (int64_t)rep.signals_from_log));
		if (rep.result != SHK_REPLAY_OK) {
			shk_object_set_str(o, "file", shk_cstring(doc, rep.file));
			shk_object_set_str(o, "line", shk_int(doc, (int64_t)rep.line));
			shk_object_set_str(o, "seq", rep.seq >= 0 ? shk_int(doc, rep.seq) : shk_null(doc));
			shk_object_set_str(o, "field", shk_cstring(doc, rep.field));
			shk_object_set_str(o, "logged", shk_cstring(doc, rep.logged));
			shk_object_set_str(o, "recomputed", shk_cstring(doc, rep.recomputed));
			shk_object_set_str(o, "detail", shk_cstring(doc, rep.detail));
		}
		if (shk_canon_dump(o, &text, &len) == 0)
			printf("%s\n", text);
		free(text);
		shk_doc_free(doc);
	} else if (rep.result == SHK_REPLAY_OK) {
		printf("reproduced: %" PRIu64 " decisions, %" PRIu64 " post-exec reports, %" PRIu64
		       " human events, %" PRIu64 " breaker trips in %" PRIu64 " session(s)%s\n",
		       rep.decisions, rep.post_execs, rep.hitl_events, rep.breaker_trips, rep.sessions,
		       pubkey ? "" : " (signatures not checked: pass --pubkey)");
		if (rep.redacted)
			printf("note: %" PRIu64 " of the decisions had redacted params: they were re-run from "
			       "their logged params_hash and params_status (whether that hash is the digest "
			       "of the real params cannot be checked: they are not in the log)\n",
			       rep.redacted);
		if (rep.signals_from_log)
			printf("note: for %" PRIu64 " of them the error signal was taken from the log "
			       "(the redacted params no longer show it)\n", rep.signals_from_log);
	} else {
		printf("%s at %s:%" PRIu64, rep.result == SHK_REPLAY_DIVERGED ? "DIVERGED" : "CANNOT REPLAY",
		       rep.file, rep.line);
		if (rep.seq >= 0)
			printf(" (seq %" PRId64 ")", rep.seq);
		printf(": %s\n", rep.detail);
	}
	return rep.result == SHK_REPLAY_OK ? 0 : 1;
}

/* ---- dispatch ------------------------------------------------------------ */

int shk_cmd_audit(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int, char **);
	} subs[] = {
		{ "verify", cmd_verify },
		{ "show", cmd_show },
		{ "export", cmd_export },
		{ "replay", cmd_replay },
	};

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		audit_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (!strcmp(argv[1], subs[i].name)) {
			optind = 1;
			return subs[i].run(argc - 1, argv + 1);
		}
	shk_cli_error("audit", "unknown subcommand '%s'", argv[1]);
	audit_usage(stderr);
	return 2;
}
