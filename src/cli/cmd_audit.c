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

#include "cli/audit_shared.h"
#include "cli/audit_show.h"
#include "cli/commands.h"
#include "cli/display.h"

/* LOG... everywhere is one chain in order: a ledger and the files it was
 * rotated into. */
static const struct shk_usage verify_usage = { "audit verify",
	"usage: shackle audit verify --pubkey FILE [--json] [--live] LOG...\n"
	"       shackle audit verify --bundle DIR|FILE.tar [--pubkey FILE] [--json]\n"
	"       shackle audit verify --shared --pubkey FILE... [--json] [--live] LOG[,FILE...]...\n\n"
	"Checks that every entry of LOG... (a ledger and the files it was rotated\n"
	"into, in order) is hash-chained and covered by a checkpoint signed with the\n"
	"key, and that every session ends with session_end. Otherwise it names the\n"
	"first bad entry (file, line, seq) and its class: modified field, deleted,\n"
	"inserted or reordered entry, truncated tail (no session_end: the log was\n"
	"cut, e.g. shackle-run was killed), torn last line, wrong key, ...\n"
	"--live accepts a last session without session_end that may still be\n"
	"running. --bundle verifies an evidence bundle (shackle audit export).\n"
	"--shared: each LOG is one host's log of a shared scope (its rotated files\n"
	"joined by ','), verified with its --pubkey (one for all, or one per LOG in\n"
	"order); then the spend and breaker they record on each shared scope must\n"
	"add up across them (docs/audit.md), else the entry and field are named.\n"
	"--json: the report as one JSON document. Exit status: 0 intact, 1 not\n"
	"intact, 2 bad usage or unreadable input.\n" };

static const struct shk_usage export_usage = { "audit export",
	"usage: shackle audit export --pubkey FILE --out DIR|FILE.tar [--live] LOG...\n\n"
	"Writes an evidence bundle (never overwriting): the logs, the public key,\n"
	"the first session's policy and the verification report, each listed with\n"
	"its SHA-256 in manifest.json. Exit status: 0 written and intact, 1 written\n"
	"but the log does not verify, 2 bad usage or not written.\n" };

static const struct shk_usage replay_usage = { "audit replay",
	"usage: shackle audit replay [--pubkey FILE] [--live] [--json] LOG...\n\n"
	"Re-runs every decision of the log with the logged policy through the code\n"
	"the supervisor runs and reports the first entry whose verdict, reason,\n"
	"layer or budget differs. With --pubkey the log is verified first. A log\n"
	"whose session has no session_end (cut: shackle-run killed?) is refused,\n"
	"with or without --pubkey, unless --live says it may still be running.\n"
	"--json: the result as one JSON document. Exit status: 0 reproduced, 1\n"
	"diverged, cut or not verified, 2 bad usage or unreadable input.\n" };

static const struct shk_usage *const audit_subs[] = {
	&verify_usage, &shk_audit_show_usage, &export_usage, &replay_usage,
};

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

#define SHARED_KEYS_MAX 64

/* verify --shared: its own pass over the options, --pubkey repeatable. */
static int verify_shared(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pubkey", required_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "live", no_argument, NULL, 'l' },
		{ "shared", no_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	static uint8_t keys[SHARED_KEYS_MAX][SHK_ED25519_PUBLIC_LEN];
	bool json = false, live = false, shared = false;
	size_t nkeys = 0, nlogs;
	int c;

	optind = 0; /* glibc: start again, from argv[1] */
	while ((c = getopt_long(argc, argv, "k:jls", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			if (nkeys == SHARED_KEYS_MAX)
				return shk_cli_usage_error(&verify_usage, "at most 64 --pubkey");
			if (load_pub(optarg, keys[nkeys++]) < 0)
				return 2;
			break;
		case 'j': json = true; break;
		case 'l': live = true; break;
		case 's': shared = true; break;
		default: return shk_cli_synopsis(&verify_usage);
		}
	}
	nlogs = (size_t)(argc - optind);
	if (!shared)
		return shk_cli_usage_error(&verify_usage, "--pubkey is given once, unless with --shared");
	if (!nkeys || !nlogs || (nkeys != 1 && nkeys != nlogs))
		return shk_cli_usage_error(&verify_usage, "verify --shared needs LOG... and one --pubkey, or "
		                           "one per LOG (%zu keys, %zu logs)", nkeys, nlogs);
	return shk_audit_verify_shared((const uint8_t (*)[SHK_ED25519_PUBLIC_LEN])keys, nkeys,
	                               argv + optind, nlogs, live, json);
}

static int cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pubkey", required_argument, NULL, 'k' },
		{ "bundle", required_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "live", no_argument, NULL, 'l' },
		{ "shared", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
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

	while ((c = getopt_long(argc, argv, "k:b:jlsh", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			if (pubkey) /* a second --pubkey: several hosts' keys */
				return verify_shared(argc, argv);
			pubkey = optarg;
			break;
		case 's':
			return verify_shared(argc, argv);
		case 'b': bundle = optarg; break;
		case 'j': json = true; break;
		case 'l': vo.live = true; break;
		case 'h': return shk_cli_help(&verify_usage);
		default: return shk_cli_synopsis(&verify_usage);
		}
	}
	if (bundle ? optind != argc : (!pubkey || optind == argc))
		return shk_cli_usage_error(&verify_usage, "verify needs --pubkey FILE and LOG..., or --bundle PATH");
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

/* ---- export -------------------------------------------------------------- */

static int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pubkey", required_argument, NULL, 'k' },
		{ "out", required_argument, NULL, 'o' },
		{ "live", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
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

	while ((c = getopt_long(argc, argv, "k:o:lh", opts, NULL)) != -1) {
		switch (c) {
		case 'k': pubkey = optarg; break;
		case 'o': out = optarg; break;
		case 'l': vo.live = true; break;
		case 'h': return shk_cli_help(&export_usage);
		default: return shk_cli_synopsis(&export_usage);
		}
	}
	if (!pubkey || !out || optind == argc)
		return shk_cli_usage_error(&export_usage, "export needs --pubkey FILE --out DIR|FILE.tar LOG...");
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

/* A session without session_end: the last one (which --live excuses: it may
 * still be running), or one followed by another session (never excused). */
struct cut {
	char session[128], file[256];
	uint64_t line;
	bool open, earlier;
	const char *path;
};

static int scan_ends(void *ctx, uint64_t lineno, const char *line, size_t len, bool torn)
{
	struct cut *c = ctx;
	shk_doc *doc = NULL;
	shk_val *e = NULL;
	shk_parse_error perr;
	const char *kind, *sess;

	/* what is not an entry is replay's to report */
	if (torn || shk_doc_new(&doc) < 0 || shk_json_parse(doc, line, len, c->path, &e, &perr) < 0 ||
	    !(kind = shk_val_str(shk_object_get(e, "kind"), NULL))) {
		shk_doc_free(doc);
		return 0;
	}
	if (!strcmp(kind, "session_start")) {
		if (c->open) {
			c->earlier = true;
			shk_doc_free(doc);
			return 1;
		}
		sess = shk_val_str(shk_object_get(e, "session"), NULL);
		snprintf(c->session, sizeof(c->session), "%s", sess ? sess : "?");
		c->open = true;
	} else if (!strcmp(kind, "session_end")) {
		c->open = false;
	}
	snprintf(c->file, sizeof(c->file), "%s", c->path);
	c->line = lineno;
	shk_doc_free(doc);
	return 0;
}

/* Both replays (with --pubkey and without) refuse a cut log the same way,
 * in the words of verify: a replay of it must not say "reproduced". */
static int refuse_cut(const char *const *logs, size_t nlogs, bool live, bool json)
{
	struct cut c = { .open = false };
	char detail[512], sess[128];

	for (size_t i = 0; i < nlogs && !c.earlier; i++) {
		c.path = logs[i];
		if (shk_ledger_read_lines(logs[i], scan_ends, &c) < 0)
			return 0; /* unreadable: replay says so */
	}
	if (!c.earlier && (!c.open || live))
		return 0;
	sess[0] = 0;
	snprintf(detail, sizeof(detail), "%s:%" PRIu64 ": " SHK_VERIFY_CUT_FMT, c.file, c.line,
	         shk_cli_text(c.session, sess, sizeof(sess)));
	shk_cli_error("audit", "refusing to replay: %s", detail);
	if (json) {
		shk_doc *doc = NULL;
		shk_val *o;
		char *text = NULL;
		size_t len;

		if (shk_doc_new(&doc) == 0 && (o = shk_object(doc)) &&
		    shk_object_set_str(o, "result", shk_cstring(doc, shk_verify_class_id(SHK_VERIFY_TRUNCATED))) == 0 &&
		    shk_object_set_str(o, "ok", shk_bool(doc, false)) == 0 &&
		    shk_object_set_str(o, "detail", shk_cstring(doc, detail)) == 0 &&
		    shk_canon_dump(o, &text, &len) == 0)
			printf("%s\n", text);
		free(text);
		shk_doc_free(doc);
	}
	return 1;
}

static int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pubkey", required_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "live", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *pubkey = NULL;
	const char *const *logs;
	size_t nlogs;
	bool json = false, live = false;
	shk_replay_report rep;
	int c, r;

	while ((c = getopt_long(argc, argv, "k:jlh", opts, NULL)) != -1) {
		switch (c) {
		case 'k': pubkey = optarg; break;
		case 'j': json = true; break;
		case 'l': live = true; break;
		case 'h': return shk_cli_help(&replay_usage);
		default: return shk_cli_synopsis(&replay_usage);
		}
	}
	if (optind == argc)
		return shk_cli_usage_error(&replay_usage, "replay needs LOG...");
	logs = (const char *const *)argv + optind;
	nlogs = (size_t)(argc - optind);
	if (refuse_cut(logs, nlogs, live, json))
		return 1;
	if (pubkey) {
		shk_verify_report vrep;
		uint8_t pk[SHK_ED25519_PUBLIC_LEN];

		if (load_pub(pubkey, pk) < 0)
			return 2;
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
		shk_object_set_str(o, "refusals", shk_int(doc, (int64_t)rep.refusals));
		shk_object_set_str(o, "error_signals_from_results", shk_int(doc, (int64_t)rep.result_signals));
		shk_object_set_str(o, "redacted_decisions", shk_int(doc, (int64_t)rep.redacted));
		shk_object_set_str(o, "error_signals_from_log", shk_int(doc, (int64_t)rep.signals_from_log));
		if (rep.shared)
			shk_object_set_str(o, "shared_decisions", shk_int(doc, (int64_t)rep.shared));
		shk_object_set_str(o, "proposal_links", shk_int(doc, (int64_t)rep.links));
		shk_object_set_str(o, "proposal_links_from_log", shk_int(doc, (int64_t)rep.links_from_log));
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
		if (rep.refusals)
			printf("note: %" PRIu64 " refusal entries (input answered before it became a tool "
			       "call) have nothing to re-derive: counted, not replayed\n", rep.refusals);
		if (rep.redacted)
			printf("note: %" PRIu64 " of the decisions had redacted params: they were re-run from "
			       "their logged params_hash and params_status (whether that hash is the digest "
			       "of the real params cannot be checked: they are not in the log)\n",
			       rep.redacted);
		if (rep.signals_from_log)
			printf("note: for %" PRIu64 " of them the error signal was taken from the log "
			       "(the redacted params no longer show it)\n", rep.signals_from_log);
		if (rep.links)
			printf("note: %" PRIu64 " exec(s) linked to the model's proposal they carry out, "
			       "each link derived again%s\n", rep.links,
			       rep.links_from_log ? " (some taken from the log: their commands are redacted)" : "");
		if (rep.shared)
			printf("note: %" PRIu64 " of the decisions read a shared scope: they were re-run "
			       "from what their entries recorded of it (Redis was not asked)\n", rep.shared);
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
		{ "show", shk_audit_show },
		{ "export", cmd_export },
		{ "replay", cmd_replay },
	};

	if (argc < 2 || shk_cli_is_help(argv[1]))
		return shk_cli_group_help("audit", audit_subs, sizeof(audit_subs) / sizeof(audit_subs[0]),
		                          argc < 2);
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (!strcmp(argv[1], subs[i].name)) {
			optind = 1;
			return subs[i].run(argc - 1, argv + 1);
		}
	shk_cli_error("audit", "unknown subcommand '%s'", argv[1]);
	return shk_cli_group_help("audit", audit_subs, sizeof(audit_subs) / sizeof(audit_subs[0]), true);
}
