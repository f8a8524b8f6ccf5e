/* SPDX-License-Identifier: MIT */
/* The audit ledger: keys, entry format, every tamper class, crash, rotation,
 * continuation and evidence bundles. */
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <sodium.h>

#include "audit_fixture.h"
#include "audit/internal.h"
#include "core/json_internal.h"

#define T0 1700000000000000000LL

/* ---- a scripted session ------------------------------------------------- */

static shk_doc *gdoc;

static shk_val *params_of(int i)
{
	shk_val *p = shk_object(gdoc), *argv = shk_array(gdoc);

	shk_array_append(argv, shk_cstring(gdoc, "curl"));
	shk_array_append(argv, shk_cstring(gdoc, "https://example.org/\"q\"\n\x01\t\\ é"));
	shk_object_set_str(p, "argv", argv);
	shk_object_set_str(p, "i", shk_int(gdoc, i));
	shk_object_set_str(p, "ratio", shk_real(gdoc, 0.1 * i));
	return p;
}

static void session_info(shk_ledger_session *s, const char *id)
{
	static const char *argv[] = { "agent", "--task", "ünïcode" };
	shk_val *pol = shk_object(gdoc), *guard = shk_object(gdoc);

	shk_object_set_str(guard, "budget_usd", shk_real(gdoc, 1.0));
	shk_object_set_str(pol, "guard", guard);
	shk_object_set_str(pol, "version", shk_int(gdoc, 1));
	memset(s, 0, sizeof(*s));
	s->session_id = id;
	s->policy = pol;
	s->policy_digest = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	s->argv = argv;
	s->argc = 3;
	s->host = "testhost";
	s->version = "0.1.0";
	s->start_ns = T0;
}

static int append_call(shk_ledger *l, int i)
{
	shk_toolcall tc = { 0 };
	shk_outcome o = { 0 };
	shk_audit_decision d = { 0 };

	tc.tool_name = i % 3 ? "exec:curl" : "net:connect";
	tc.params = params_of(i);
	tc.nonce = 1000 + (uint64_t)i;
	tc.estimated_cost_usd = 0.01;
	o.verdict = i % 5 == 4 ? SHK_DENY : SHK_ALLOW;
	o.reason = i % 5 == 4 ? SHK_R_MAX_REPEAT_EXCEEDED : SHK_R_WITHIN_THRESHOLDS;
	o.decided.verdict = o.verdict;
	o.decided.reason = o.reason;
	o.budget_initial_usd = 1.0;
	o.budget_remaining_usd = 1.0 - 0.01 * i;
	o.budget_after_usd = o.budget_remaining_usd - (o.verdict == SHK_ALLOW ? 0.01 : 0);
	d.time_ns = T0 + (int64_t)i * 1000000;
	d.pid = 4242;
	d.tid = 4243;
	d.exe = "/usr/bin/curl";
	d.call_number = (uint64_t)i;
	d.call = &tc;
	d.action = SHK_ACTION_ALLOW;
	d.outcome = &o;
	return shk_ledger_append_decision(l, &d);
}

/* session_start, n calls with a post_exec, a hitl and a breaker trip in the
 * middle, session_end, final checkpoint; a checkpoint every `every`. */
static void write_session(const char *path, const shk_key *k, int n, unsigned every)
{
	shk_ledger_options o = { .checkpoint_every = every, .fsync = SHK_FSYNC_NONE };
	shk_ledger_session s;
	shk_ledger *l = NULL;
	shk_audit_tool_trace tr[2] = { { T0, "exec:curl", "ab", "ALLOW" }, { T0 + 1, "exec:curl", "ab", "DENY" } };

	session_info(&s, "sess-1");
	ck_assert_int_eq(shk_ledger_open(path, k, &s, &o, &l), 0);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(append_call(l, i), 0);
		if (i == 2) {
			shk_audit_post_exec p = { T0 + 2500000, 2, 1002, 0.02, true, 12345, 0.98, 0.97 };
			ck_assert_int_eq(shk_ledger_append_post_exec(l, &p), 0);
		}
		if (i == 5) {
			shk_audit_hitl h = { T0 + 5500000, 5, "approved", "alice", 1005, "cd", NULL };
			ck_assert_int_eq(shk_ledger_append_hitl(l, &h), 0);
		}
		if (i == 9) {
			shk_audit_breaker_trip b = { .time_ns = T0 + 9500000, .call_number = 9,
				.trigger = "max_repeat_exceeded", .trace = tr, .trace_len = 2,
				.containment = "deny_all" };
			ck_assert_int_eq(shk_ledger_append_breaker_trip(l, &b), 0);
		}
	}
	shk_audit_session_end e = { T0 + 999999999, 0, NULL };
	ck_assert_int_eq(shk_ledger_end(l, &e), 0);
	ck_assert_int_eq(shk_ledger_close(l), 0);
}

static shk_key *key;
static const char *logp;

static void setup(void)
{
	tdir_setup();
	ck_assert_int_eq(shk_doc_new(&gdoc), 0);
	key = test_key("k");
	logp = tpath("ledger.jsonl");
	write_session(logp, key, 20, 8);
}

static void teardown(void)
{
	shk_key_free(key);
	shk_doc_free(gdoc);
	tdir_teardown();
}

/* ---- format -------------------------------------------------------------- */

START_TEST(untouched_log_passes)
{
	shk_verify_report rep;
	lines ls;

	verify_one(logp, key, &rep);
	ck_assert_msg(rep.result == SHK_VERIFY_OK, "%s: %s", shk_verify_class_name(rep.result),
	              rep.findings[0].detail);
	lines_read(logp, &ls);
	ck_assert_uint_eq(rep.entries, ls.n);
	ck_assert_uint_eq(rep.chained, ls.n);
	ck_assert_uint_eq(rep.signed_entries, ls.n);
	ck_assert_uint_eq(rep.sessions, 1);
	ck_assert_uint_ge(rep.checkpoints, 3);
	lines_free(&ls);
}
END_TEST

/* Every line is canonical JSON and its hash is SHA-256 of itself without
 * hash and sig; the first links to the genesis of the session id. */
START_TEST(entries_are_canonical_and_hashed)
{
	lines ls;
	uint8_t g[32], h[32];
	char prev[65], hex[65];

	lines_read(logp, &ls);
	shk_ledger_genesis("sess-1", 6, g);
	shk_hex(g, 32, prev);
	for (size_t i = 0; i < ls.n; i++) {
		shk_val *v = NULL;
		shk_parse_error pe;
		char *canon = NULL;
		size_t len;

		ck_assert_int_eq(shk_json_parse(gdoc, ls.l[i], strlen(ls.l[i]), "t", &v, &pe), 0);
		ck_assert_int_eq(shk_canon_dump(v, &canon, &len), 0);
		ck_assert_str_eq(canon, ls.l[i]);
		free(canon);
		ck_assert_int_eq(shk_object_get(v, "seq") ? shk_val_int(shk_object_get(v, "seq")) : -1, (int64_t)i);
		ck_assert(shk_val_str_eq(shk_object_get(v, "prev_hash"), prev));
		ck_assert_int_eq(shk_ledger_entry_hash(v, h), 0);
		shk_hex(h, 32, hex);
		ck_assert(shk_val_str_eq(shk_object_get(v, "hash"), hex));
		memcpy(prev, hex, sizeof(prev));
	}
	ck_assert(strstr(ls.l[0], "\"kind\":\"session_start\""));
	ck_assert(strstr(ls.l[ls.n - 1], "\"kind\":\"checkpoint\""));
	ck_assert(strstr(ls.l[ls.n - 2], "\"kind\":\"session_end\""));
	ck_assert(lines_find(&ls, 0, "\"kind\":\"breaker_trip\"") > 0);
	ck_assert(lines_find(&ls, 0, "\"containment\":\"deny_all\"") > 0);
	ck_assert(lines_find(&ls, 0, "\"nonce\":\"1005\"") > 0);
	lines_free(&ls);
}
END_TEST

/* ---- tamper classes ------------------------------------------------------ */

/* A decision line in the middle, after at least one checkpoint. */
static size_t middle_decision(const lines *ls)
{
	long cp = lines_find(ls, 0, "\"kind\":\"checkpoint\"");
	long i = lines_find(ls, (size_t)cp + 2, "\"kind\":\"decision\"");

	ck_assert_int_gt(i, 0);
	return (size_t)i;
}

START_TEST(tamper_modified_field)
{
	shk_verify_report rep;
	lines ls;
	size_t i;

	lines_read(logp, &ls);
	i = middle_decision(&ls);
	line_replace(&ls, i, "\"pid\":4242", "\"pid\":4241");
	lines_write(logp, &ls);
	verify_one(logp, key, &rep);
	ck_assert_finding(&rep, SHK_VERIFY_MODIFIED, i + 1, (int64_t)i);
	lines_free(&ls);
}
END_TEST

START_TEST(tamper_deleted_entry)
{
	shk_verify_report rep;
	lines ls;
	size_t i;

	lines_read(logp, &ls);
	i = middle_decision(&ls);
	lines_delete(&ls, i);
	lines_write(logp, &ls);
	verify_one(logp, key, &rep);
	/* The entry now at line i+1 is seq i+1: seq i is gone. */
	ck_assert_finding(&rep, SHK_VERIFY_DELETED, i + 1, (int64_t)i + 1);
	lines_free(&ls);
}
END_TEST

START_TEST(tamper_inserted_entry)
{
	shk_verify_report rep;
	lines ls;
	size_t i;

	lines_read(logp, &ls);
	i = middle_decision(&ls);
	lines_insert(&ls, i + 1, ls.l[i]); /* a replayed copy */
	lines_write(logp, &ls);
	verify_one(logp, key, &rep);
	ck_assert_finding(&rep, SHK_VERIFY_INSERTED, i + 2, (int64_t)i);
	lines_free(&ls);
}
END_TEST

START_TEST(tamper_inserted_forged_entry)
{
	/* A forged entry with the right seq and link, hash recomputed: the
	 * original that follows repeats its seq; the forgery is named. */
	shk_verify_report rep;
	lines ls;
	shk_val *v = NULL, *o;
	shk_parse_error pe;
	uint8_t h[32];
	char hex[65], *text = NULL;
	size_t i, len;

	lines_read(logp, &ls);
	i = middle_decision(&ls);
	line_replace(&ls, i, "\"tid\":4243", "\"tid\":6666");
	ck_assert_int_eq(shk_json_parse(gdoc, ls.l[i], strlen(ls.l[i]), "t", &v, &pe), 0);
	ck_assert_int_eq(shk_ledger_entry_hash(v, h), 0);
	shk_hex(h, 32, hex);
	/* rebuild the object with the new hash */
	o = shk_object(gdoc);
	for (size_t m = 0; m < shk_val_len(v); m++) {
		const shk_val *kk = shk_object_key_at(v, m);
		shk_val *val = shk_val_copy(gdoc, shk_object_value_at(v, m));
		if (shk_val_str_eq(kk, "hash"))
			val = shk_cstring(gdoc, hex);
		ck_assert_int_eq(shk_object_set(o, shk_val_copy(gdoc, kk), val), 0);
	}
	ck_assert_int_eq(shk_canon_dump(o, &text, &len), 0);
	lines_free(&ls);
	lines_read(logp, &ls); /* fresh copy: original line i stays */
	lines_insert(&ls, i, text);
	free(text);
	lines_write(logp, &ls);
	verify_one(logp, key, &rep);
	ck_assert_finding(&rep, SHK_VERIFY_INSERTED, i + 1, (int64_t)i);
	lines_free(&ls);
}
END_TEST

START_TEST(tamper_reordered_entries)
{
	shk_verify_report rep;
	lines ls;
	char *t;
	size_t i;

	lines_read(logp, &ls);
	i = middle_decision(&ls);
	t = ls.l[i];
	ls.l[i] = ls.l[i + 1];
	ls.l[i + 1] = t;
	lines_write(logp, &ls);
	verify_one(logp, key, &rep);
	ck_assert_finding(&rep, SHK_VERIFY_REORDERED, i + 1, (int64_t)i + 1);
	lines_free(&ls);
}
END_TEST

START_TEST(tamper_truncated_tail)
{
	shk_verify_report rep;
	lines ls;
	long cp, next;

	/* Cut right after a checkpoint: everything left is signed, but the
	 * session never ends. */
	lines_read(logp, &ls);
	cp = lines_find(&ls, 0, "\"kind\":\"checkpoint\"");
	while ((next = lines_find(&ls, (size_t)cp + 1, "\"kind\":\"checkpoint\"")) > 0 &&
	       (size_t)next < ls.n - 3)
		cp = next;
	while (ls.n > (size_t)cp + 1)
		lines_delete(&ls, ls.n - 1);
	lines_write(logp, &ls);
	verify_one(logp, key, &rep);
	ck_assert_finding(&rep, SHK_VERIFY_TRUNCATED, (uint64_t)cp + 1, cp);
	ck_assert_uint_eq(rep.signed_entries, ls.n);
	/* ... which a verifier of a running session may accept explicitly. */
	verify_paths(&logp, 1, key, true, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_OK);
	lines_free(&ls);
}
END_TEST

START_TEST(tamper_truncated_unsigned)
{
	shk_verify_report rep;
	lines ls;
	size_t first;

	/* Cut after session_end: its final checkpoint is gone. */
	lines_read(logp, &ls);
	lines_delete(&ls, ls.n - 1);
	lines_write(logp, &ls);
	verify_one(logp, key, &rep);
	for (first = ls.n; !strstr(ls.l[first - 1], "\"kind\":\"checkpoint\""); first--)
		;
	ck_assert_finding(&rep, SHK_VERIFY_UNSIGNED_TAIL, first + 1, (int64_t)first);
	ck_assert_uint_eq(rep.chained, ls.n);
	ck_assert_uint_eq(rep.signed_entries, first);
	verify_paths(&logp, 1, key, true, &rep); /* --live does not excuse it */
	ck_assert_int_eq(rep.result, SHK_VERIFY_UNSIGNED_TAIL);
	lines_free(&ls);
}
END_TEST

START_TEST(tamper_torn_last_line)
{
	shk_verify_report rep;
	lines ls;
	size_t n;

	lines_read(logp, &ls);
	n = strlen(ls.l[ls.n - 1]);
	ls.l[ls.n - 1][n / 2] = 0;
	ls.last_newline = false;
	lines_write(logp, &ls);
	verify_one(logp, key, &rep);
	ck_assert_finding(&rep, SHK_VERIFY_TORN, ls.n, -1);
	ck_assert_uint_eq(rep.chained, ls.n - 1); /* everything before verifies */
	lines_free(&ls);
}
END_TEST

START_TEST(tamper_wrong_key)
{
	shk_verify_report rep;
	shk_key *other = test_key(NULL);

	verify_one(logp, other, &rep);
	ck_assert_finding(&rep, SHK_VERIFY_WRONG_KEY, 1, 0);
	shk_key_free(other);
}
END_TEST

START_TEST(tamper_signature_missing)
{
	shk_verify_report rep;
	lines ls;
	long cp;
	char *p, *q;

	lines_read(logp, &ls);
	cp = lines_find(&ls, 0, "\"kind\":\"checkpoint\"");
	p = strstr(ls.l[cp], ",\"sig\":\"");
	ck_assert_ptr_nonnull(p);
	q = strchr(p + 8, '"');
	memmove(p, q + 1, strlen(q + 1) + 1);
	lines_write(logp, &ls);
	verify_one(logp, key, &rep);
	ck_assert_finding(&rep, SHK_VERIFY_SIG_MISSING, (uint64_t)cp + 1, cp);
	lines_free(&ls);
}
END_TEST

START_TEST(tamper_bad_signature)
{
	shk_verify_report rep;
	lines ls;
	long cp;
	char *p;

	lines_read(logp, &ls);
	cp = lines_find(&ls, 0, "\"kind\":\"checkpoint\"");
	p = strstr(ls.l[cp], ",\"sig\":\"") + 8;
	*p = *p == '0' ? '1' : '0';
	lines_write(logp, &ls);
	verify_one(logp, key, &rep);
	ck_assert_finding(&rep, SHK_VERIFY_BAD_SIGNATURE, (uint64_t)cp + 1, cp);
	lines_free(&ls);
}
END_TEST

/* ---- rotation and continuation ------------------------------------------ */

static void write_rotated(const shk_key *k, const char *a, const char *b, const char *c)
{
	shk_ledger_options o = { .checkpoint_every = 4 };
	shk_ledger_session s;
	shk_ledger *l = NULL;
	shk_audit_session_end e = { T0 + 50000000, 0, NULL };

	session_info(&s, "rot-1");
	ck_assert_int_eq(shk_ledger_open(a, k, &s, &o, &l), 0);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(append_call(l, i), 0);
	ck_assert_int_eq(shk_ledger_rotate(l, b, T0 + 7000000), 0);
	ck_assert_int_eq(shk_ledger_rotate(l, b, T0 + 7000000), -EEXIST);
	for (int i = 6; i < 10; i++)
		ck_assert_int_eq(append_call(l, i), 0);
	ck_assert_int_eq(shk_ledger_rotate(l, c, T0 + 11000000), 0);
	ck_assert_int_eq(append_call(l, 10), 0);
	ck_assert_int_eq(shk_ledger_end(l, &e), 0);
	ck_assert_int_eq(shk_ledger_close(l), 0);
}

START_TEST(rotation_links_and_gaps)
{
	const char *a = tpath("r.0"), *b = tpath("r.1"), *c = tpath("r.2");
	const char *all[] = { a, b, c }, *gap[] = { a, c }, *mid[] = { b, c };
	shk_verify_report rep;

	write_rotated(key, a, b, c);
	verify_paths(all, 3, key, false, &rep);
	ck_assert_msg(rep.result == SHK_VERIFY_OK, "%s", rep.findings[0].detail);
	ck_assert_uint_eq(rep.files, 3);
	verify_paths(gap, 2, key, false, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_ROTATION_GAP);
	ck_assert_str_eq(rep.findings[0].file, c);
	ck_assert_uint_eq(rep.findings[0].line, 1);
	verify_paths(mid, 2, key, false, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_ROTATION_GAP);
	ck_assert_str_eq(rep.findings[0].file, b);
}
END_TEST

START_TEST(continued_log_links_sessions)
{
	shk_ledger_options o = { .continue_existing = true };
	shk_ledger_session s;
	shk_ledger *l = NULL;
	shk_audit_session_end e = { T0 + 2000000000LL, 3, NULL };
	shk_verify_report rep;
	lines ls;

	ck_assert_int_eq(shk_ledger_open(logp, key, &(shk_ledger_session){ 0 }, NULL, &l), -EINVAL);
	session_info(&s, "sess-2");
	ck_assert_int_eq(shk_ledger_open(logp, key, &s, NULL, &l), -EEXIST);
	ck_assert_int_eq(shk_ledger_open(logp, key, &s, &o, &l), 0);
	ck_assert_int_eq(append_call(l, 0), 0);
	ck_assert_int_eq(shk_ledger_end(l, &e), 0);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	verify_one(logp, key, &rep);
	ck_assert_msg(rep.result == SHK_VERIFY_OK, "%s", rep.findings[0].detail);
	ck_assert_uint_eq(rep.sessions, 2);
	/* Breaking the link between the sessions is reported. */
	lines_read(logp, &ls);
	lines_delete(&ls, (size_t)lines_find(&ls, 1, "\"kind\":\"session_start\"") - 1);
	lines_write(logp, &ls);
	verify_one(logp, key, &rep);
	ck_assert_int_ne(rep.result, SHK_VERIFY_OK);
	lines_free(&ls);
}
END_TEST

START_TEST(torn_log_is_not_continued)
{
	shk_ledger_options o = { .continue_existing = true };
	shk_ledger_session s;
	shk_ledger *l = NULL;
	int fd = open(logp, O_WRONLY | O_APPEND);

	ck_assert_int_eq(write(fd, "{\"kind\":\"dec", 12), 12);
	close(fd);
	session_info(&s, "sess-3");
	ck_assert_int_eq(shk_ledger_open(logp, key, &s, &o, &l), -EBADMSG);
}
END_TEST

/* ---- crash ---------------------------------------------------------------- */

START_TEST(crash_kill9_mid_run)
{
	const char *p = tpath("crash.jsonl");
	shk_verify_report rep;
	lines ls;
	pid_t pid;
	int st, fd;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		shk_ledger_options o = { .fsync = SHK_FSYNC_NONE };
		shk_ledger_session s;
		shk_ledger *l = NULL;

		session_info(&s, "crash");
		if (shk_ledger_open(p, key, &s, &o, &l) < 0)
			_exit(3);
		/* Bounded so that the log stays within what lines_read holds
		 * even when this parent is not scheduled for a while. */
		for (int i = 0; i < 3000; i++) {
			shk_doc_free(gdoc);
			shk_doc_new(&gdoc);
			if (append_call(l, i) < 0)
				_exit(4);
		}
		for (;;)
			pause();
	}
	/* Let it write a thousand entries or so, then kill it mid-stream. */
	for (int tries = 0; tries < 1000; tries++) {
		struct stat sb;
		struct timespec ts = { 0, 1000000 };

		if (stat(p, &sb) == 0 && sb.st_size > 1000000)
			break;
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st));

	verify_one(p, key, &rep);
	lines_read(p, &ls);
	ck_assert_uint_gt(ls.n, 100);
	if (!ls.last_newline) {
		ck_assert_finding(&rep, SHK_VERIFY_TORN, ls.n, -1);
		ck_assert_uint_eq(rep.chained, ls.n - 1);
	} else {
		/* Killed between writes: the tail is whole lines, chained, and
		 * the unsigned ones are named. (SIGKILL can also stop a write()
		 * between two pages: the torn case above.) */
		ck_assert_uint_eq(rep.chained, ls.n);
		ck_assert(rep.result == SHK_VERIFY_UNSIGNED_TAIL || rep.result == SHK_VERIFY_TRUNCATED);
		ck_assert_uint_ge(rep.signed_entries, ls.n - SHK_LEDGER_MAX_UNSIGNED);
	}
	/* A write cut short by power loss: half a line at the end (it extends
	 * the torn line when the kill already left one). */
	fd = open(p, O_WRONLY | O_APPEND);
	ck_assert_int_eq(write(fd, ls.l[1], strlen(ls.l[1]) / 2), (ssize_t)(strlen(ls.l[1]) / 2));
	close(fd);
	verify_one(p, key, &rep);
	ck_assert_finding(&rep, SHK_VERIFY_TORN, ls.last_newline ? ls.n + 1 : ls.n, -1);
	ck_assert_uint_eq(rep.chained, ls.last_newline ? ls.n : ls.n - 1);
	ck_assert_uint_ge(rep.signed_entries, ls.n - SHK_LEDGER_MAX_UNSIGNED);
	lines_free(&ls);
}
END_TEST

/* ---- keys ------------------------------------------------------------------ */

START_TEST(key_files)
{
	shk_key *k = NULL;
	shk_key_error err;
	uint8_t pk[32];
	struct stat st;
	char fp[SHK_KEY_FINGERPRINT_LEN + 1];
	int fd, pfd[2];

	ck_assert_int_eq(stat(tpath("k.key"), &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(shk_key_write_files(key, tpath("k"), &err), -EEXIST);
	ck_assert(strstr(err.text, "refusing to overwrite"));
	ck_assert_int_eq(shk_key_load_file(tpath("k.key"), &k, &err), 0);
	ck_assert_mem_eq(shk_key_public(k), shk_key_public(key), 32);
	shk_key_free(k);
	ck_assert_int_eq(shk_pubkey_load_file(tpath("k.pub"), pk, &err), 0);
	ck_assert_mem_eq(pk, shk_key_public(key), 32);
	shk_key_fingerprint(pk, fp);
	ck_assert_uint_eq(strlen(fp), 32);

	/* From a pipe: no mode to check. */
	ck_assert_int_eq(pipe(pfd), 0);
	fd = open(tpath("k.key"), O_RDONLY);
	{
		char buf[200];
		ssize_t n = read(fd, buf, sizeof(buf));
		ck_assert_int_eq(write(pfd[1], buf, (size_t)n), n);
	}
	close(fd);
	close(pfd[1]);
	ck_assert_int_eq(shk_key_load_fd(pfd[0], &k, &err), 0);
	ck_assert_mem_eq(shk_key_public(k), shk_key_public(key), 32);
	shk_key_free(k);
	close(pfd[0]);
}
END_TEST

START_TEST(key_errors)
{
	shk_key *k = NULL;
	shk_key_error err;
	uint8_t pk[32];
	FILE *f;

	ck_assert_int_eq(shk_key_load_file(tpath("missing.key"), &k, &err), -ENOENT);
	ck_assert_int_eq(chmod(tpath("k.key"), 0640), 0);
	ck_assert_int_eq(shk_key_load_file(tpath("k.key"), &k, &err), -EPERM);
	ck_assert(strstr(err.text, "group or others"));
	ck_assert_int_eq(chmod(tpath("k.key"), 0600), 0);

	f = fopen(tpath("short.key"), "w");
	fprintf(f, "shackle-ed25519-secret-v1\n0123456789abcdef\n");
	fclose(f);
	chmod(tpath("short.key"), 0600);
	ck_assert_int_eq(shk_key_load_file(tpath("short.key"), &k, &err), -EINVAL);
	ck_assert(strstr(err.text, "wrong key length"));

	f = fopen(tpath("hdr.key"), "w");
	fprintf(f, "ssh-ed25519 AAAA\n");
	fclose(f);
	chmod(tpath("hdr.key"), 0600);
	ck_assert_int_eq(shk_key_load_file(tpath("hdr.key"), &k, &err), -EINVAL);
	ck_assert_int_eq(shk_pubkey_load_file(tpath("k.key"), pk, &err), -EINVAL); /* secret as public */
	ck_assert_int_eq(shk_pubkey_load_file(tpath("nope.pub"), pk, &err), -ENOENT);
}
END_TEST

/* ---- bundles ------------------------------------------------------------- */

static void export_and_check(const char *out)
{
	const char *logs[] = { logp };
	shk_bundle b;
	shk_verify_report rep;
	char err[256];
	const char *report = "{\"result\":\"ok\"}";
	uint8_t pk[32];
	shk_key_error kerr;

	ck_assert_int_eq(shk_bundle_export(out, logs, 1, tpath("k.pub"), NULL, report, strlen(report),
	                                   err, sizeof(err)), 0);
	ck_assert_int_eq(shk_bundle_export(out, logs, 1, tpath("k.pub"), NULL, report, strlen(report),
	                                   err, sizeof(err)), -EEXIST);
	ck_assert_int_eq(shk_bundle_open(out, &b, err, sizeof(err)), 0);
	ck_assert_uint_eq(b.nlogs, 1);
	ck_assert_int_eq(b.digest_mismatch, -1);
	ck_assert_int_eq(shk_pubkey_load_file(b.pubkey, pk, &kerr), 0);
	ck_assert_int_eq(shk_verify_files((const char *const *)b.logs, 1, pk, NULL, &rep), 0);
	ck_assert_int_eq(rep.result, SHK_VERIFY_OK);
	shk_bundle_close(&b);
}

START_TEST(bundle_dir_and_tar)
{
	shk_bundle b;
	char err[256];
	lines ls;

	export_and_check(tpath("bundle"));
	export_and_check(tpath("bundle.tar"));
	/* A log altered inside the bundle: manifest digest and verify both see it. */
	lines_read(tpath("bundle/logs/000-ledger.jsonl"), &ls);
	line_replace(&ls, 3, "\"pid\":4242", "\"pid\":1");
	lines_write(tpath("bundle/logs/000-ledger.jsonl"), &ls);
	ck_assert_int_eq(shk_bundle_open(tpath("bundle"), &b, err, sizeof(err)), 0);
	ck_assert_int_eq(b.digest_mismatch, 0);
	shk_bundle_close(&b);
	lines_free(&ls);
}
END_TEST

/* ---- checkpoint cadence ----------------------------------------------------- */

static size_t count_kind(const char *path, const char *kind)
{
	char needle[64];
	lines ls;
	size_t n = 0;

	snprintf(needle, sizeof(needle), "\"kind\":\"%s\"", kind);
	lines_read(path, &ls);
	for (size_t i = 0; i < ls.n; i++)
		n += strstr(ls.l[i], needle) != NULL;
	lines_free(&ls);
	return n;
}

START_TEST(checkpoint_cadence)
{
	const char *p = tpath("cadence.jsonl");
	shk_ledger_options o = { 0 };
	shk_ledger_session s;
	shk_ledger *l = NULL;
	shk_verify_report rep;

	session_info(&s, "cadence");
	ck_assert_int_eq(shk_ledger_open(p, key, &s, &o, &l), 0);
	ck_assert_int_eq(append_call(l, 0), 0); /* time T0 */
	ck_assert_int_eq(shk_ledger_tick(l, T0 + 99000000), 0);
	ck_assert_uint_eq(count_kind(p, "checkpoint"), 0); /* younger than 100 ms */
	ck_assert_int_eq(shk_ledger_tick(l, T0 + 100000000), 0);
	ck_assert_uint_eq(count_kind(p, "checkpoint"), 1); /* the interval bound */
	ck_assert_int_eq(shk_ledger_tick(l, T0 + 900000000), 0);
	ck_assert_uint_eq(count_kind(p, "checkpoint"), 1); /* nothing unsigned */
	/* Without tick, the hard bound: a checkpoint after 64 unsigned entries. */
	for (int i = 1; i <= 64; i++)
		ck_assert_int_eq(append_call(l, i), 0);
	ck_assert_uint_eq(count_kind(p, "checkpoint"), 2);
	/* tick signs at half the bound even before the interval. */
	for (int i = 65; i < 65 + 32; i++)
		ck_assert_int_eq(append_call(l, i), 0);
	ck_assert_int_eq(shk_ledger_tick(l, T0), 0);
	ck_assert_uint_eq(count_kind(p, "checkpoint"), 3);
	ck_assert_uint_eq(shk_ledger_next_seq(l), 1 + 1 + 1 + 64 + 1 + 32 + 1);
	/* close signs what is left; no session_end: truncated, live passes. */
	ck_assert_int_eq(append_call(l, 200), 0);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	verify_one(p, key, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_TRUNCATED);
	verify_paths(&p, 1, key, true, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_OK);
}
END_TEST

START_TEST(non_utf8_names_are_logged_as_hex)
{
	const char *p = tpath("bytes.jsonl");
	shk_ledger_session s;
	shk_ledger *l = NULL;
	shk_toolcall tc = { 0 };
	shk_outcome o = { 0 };
	shk_audit_decision d = { 0 };
	shk_verify_report rep;
	lines ls;

	session_info(&s, "bytes");
	ck_assert_int_eq(shk_ledger_open(p, key, &s, NULL, &l), 0);
	tc.tool_name = "exec:r\xe9sum\xe9";
	tc.params = params_of(1);
	d.exe = "/tmp/r\xe9sum\xe9";
	d.call = &tc;
	d.outcome = &o;
	ck_assert_int_eq(shk_ledger_append_decision(l, &d), 0);
	ck_assert_int_eq(shk_ledger_end(l, &(shk_audit_session_end){ T0 + 1, 0, NULL }), 0);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	verify_one(p, key, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_OK);
	lines_read(p, &ls);
	ck_assert(strstr(ls.l[1], "\"tool\":{\"invalid_utf8_hex\":\"657865633a72e973756de9\"}"));
	ck_assert(strstr(ls.l[1], "\"exe\":{\"invalid_utf8_hex\":"));
	lines_free(&ls);
	/* A session id that is not UTF-8 is refused up front. */
	session_info(&s, "\xff");
	ck_assert_int_eq(shk_ledger_open(tpath("bad.jsonl"), key, &s, NULL, &l), -EINVAL);
}
END_TEST

/* ---- SHA-256 ------------------------------------------------------------- */

/* The accelerated SHA-256 agrees with libsodium on every length around the
 * block boundaries and on split updates. */
START_TEST(sha256_matches_libsodium)
{
	uint8_t data[1100], a[32], b[32];
	shk_sha256 st;

	randombytes_buf(data, sizeof(data));
	for (size_t len = 0; len <= sizeof(data); len += len < 300 ? 1 : 97) {
		crypto_hash_sha256(a, data, len);
		shk_sha256_once(data, len, b);
		ck_assert_msg(!memcmp(a, b, 32), "length %zu (accelerated: %d)", len, shk_sha256_accelerated());
		for (size_t cut = 0; cut <= len; cut += 13) {
			shk_sha256_init(&st);
			shk_sha256_update(&st, data, cut);
			shk_sha256_update(&st, data + cut, len - cut);
			shk_sha256_final(&st, b);
			ck_assert_msg(!memcmp(a, b, 32), "length %zu split %zu", len, cut);
		}
	}
	shk_sha256_force_portable(true);
	shk_sha256_once(data, 1000, b);
	crypto_hash_sha256(a, data, 1000);
	ck_assert(!memcmp(a, b, 32));
	shk_sha256_force_portable(false);
}
END_TEST

/* Decision entries of every shape the one-pass writer handles (redacted,
 * unprepared and non-canonical params, invalid costs, inputs, operator,
 * quotes in names, negative ids) are canonical and hashed like any entry;
 * numbers JSON cannot hold fail the append and leave nothing behind. */
START_TEST(decision_shapes_are_canonical)
{
	const char *p = tpath("shapes.jsonl");
	shk_ledger_session s;
	shk_ledger *l = NULL;
	shk_verify_report rep;
	lines ls;
	const double costs[] = { 0.25, __builtin_nan(""), __builtin_inf(), -__builtin_inf(), 1e-9, 123456.789 };

	session_info(&s, "sh\"ape\x01");
	ck_assert_int_eq(shk_ledger_open(p, key, &s, &(shk_ledger_options){ .fsync = SHK_FSYNC_NONE }, &l), 0);
	for (int i = 0; i < 24; i++) {
		shk_toolcall tc = { 0 };
		shk_outcome o = { 0 };
		shk_audit_decision d = { 0 };
		shk_val *red = shk_object(gdoc), *in = shk_object(gdoc);

		tc.tool_name = i % 4 ? "exec:curl" : "exec:\"q\"";
		tc.params = params_of(i);
		if (i % 6 == 5)
			shk_object_set_str((shk_val *)tc.params, "bad", shk_real(gdoc, __builtin_nan("")));
		tc.nonce = UINT64_MAX - (uint64_t)i;
		tc.estimated_cost_usd = costs[i % 6];
		if (i % 3)
			shk_toolcall_prepare(&tc);
		o.verdict = o.decided.verdict = (shk_verdict)(i % 3);
		o.reason = o.decided.reason = SHK_R_WITHIN_THRESHOLDS;
		o.layer = (shk_layer)(i % 5);
		o.budget_initial_usd = 1.0 / 3;
		o.budget_remaining_usd = 5.0 - 0.001 * i;
		o.budget_after_usd = -0.1 * i;
		o.repeat_count = (uint64_t)INT64_MAX;
		o.max_repeat_calls = UINT32_MAX;
		o.total_calls = (uint64_t)i;
		o.circuit_tripped = o.trips = i & 1;
		shk_object_set_str(red, "redacted", shk_bool(gdoc, true));
		shk_object_set_str(in, "z", shk_real(gdoc, 0.1));
		shk_object_set_str(in, "a", shk_null(gdoc));
		d.time_ns = -(int64_t)i;
		d.pid = INT32_MIN;
		d.tid = -i;
		d.exe = i % 5 ? "/usr/bin/cu\"rl" : NULL;
		d.call_number = (uint64_t)i;
		d.call = &tc;
		d.action = (shk_action)(i % 3);
		d.rule = i % 2 ? "rule \\ 1" : NULL;
		d.outcome = &o;
		d.params_redacted = i % 4 == 1 ? red : NULL;
		d.operator_id = i % 7 == 3 ? "ålice" : NULL;
		d.inputs = i % 2 ? in : NULL;
		ck_assert_int_eq(shk_ledger_append_decision(l, &d), 0);
		/* Refused whole: nothing of the entry reaches the file. */
		o.budget_after_usd = __builtin_nan("");
		ck_assert_int_eq(shk_ledger_append_decision(l, &d), -EDOM);
		o.budget_after_usd = 0;
		d.call_number = UINT64_MAX;
		ck_assert_int_eq(shk_ledger_append_decision(l, &d), -ERANGE);
	}
	ck_assert_int_eq(shk_ledger_end(l, &(shk_audit_session_end){ T0, 0, NULL }), 0);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	verify_one(p, key, &rep);
	ck_assert_msg(rep.result == SHK_VERIFY_OK, "%s", shk_verify_class_name(rep.result));
	lines_read(p, &ls);
	for (size_t i = 0; i < ls.n; i++) {
		shk_val *v = NULL;
		shk_parse_error pe;
		char *canon = NULL, hex[65];
		uint8_t h[32];
		size_t len;

		ck_assert_int_eq(shk_json_parse(gdoc, ls.l[i], strlen(ls.l[i]), "t", &v, &pe), 0);
		ck_assert_int_eq(shk_canon_dump(v, &canon, &len), 0);
		ck_assert_str_eq(canon, ls.l[i]);
		free(canon);
		ck_assert_int_eq(shk_ledger_entry_hash(v, h), 0);
		shk_hex(h, 32, hex);
		ck_assert(shk_val_str_eq(shk_object_get(v, "hash"), hex));
	}
	ck_assert(lines_find(&ls, 0, "\"cost\":\"nan\"") > 0);
	ck_assert(lines_find(&ls, 0, "\"cost\":\"-inf\"") > 0);
	ck_assert(lines_find(&ls, 0, "\"params\":{\"redacted\":true}") > 0);
	ck_assert(lines_find(&ls, 0, "\"params\":null,\"params_hash\":null,\"params_status\":\"non_finite\"") > 0);
	ck_assert(lines_find(&ls, 0, "\"nonce\":\"18446744073709551615\"") > 0);
	ck_assert(lines_find(&ls, 1, "\"session\":\"sh\\\"ape\\u0001\"") == 1);
	ck_assert_uint_eq(ls.n, 1 + 24 + 2); /* start, decisions, end, checkpoint */
	lines_free(&ls);
}
END_TEST

/* ---- reals ----------------------------------------------------------------- */

/* The neighbouring double of a positive d (delta = +-1). */
static double ulp_step(double d, int delta)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof(d));
	bits += (uint64_t)(int64_t)delta;
	memcpy(&d, &bits, sizeof(d));
	return d;
}

static void same_real(double d)
{
	char a[SHK_AUDIT_REAL_MAX], b[SHK_AUDIT_REAL_MAX];
	int na = shk_canon_format_real(d, a, sizeof(a)), nb = shk_canon_format_real_slow(d, b, sizeof(b));

	ck_assert_msg(na == nb, "%.17g: fast %d, exact search %d", d, na, nb);
	if (na > 0)
		ck_assert_msg(!strcmp(a, b), "%.17g: fast %s, exact search %s", d, a, b);
}

/* The printf-free repr() (fast paths, 128-bit exact digits) gives the bytes
 * of the snprintf/strtod exact search:
 * random doubles of every magnitude it handles itself (and beyond, where it
 * defers), running budget sums, short decimals and their neighbours, powers
 * of two (asymmetric rounding interval) and powers of ten. */
START_TEST(real_format_matches_canon)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	double b = 5.0;

	for (int i = 0; i < 60000; i++) {
		uint64_t bits;
		double d;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		bits = (uint64_t)(1023 - 30 + (int)(x >> 56) % 90) << 52 | (x & ((1ULL << 52) - 1));
		memcpy(&d, &bits, sizeof(d));
		same_real(d);
		same_real(-d);
		b -= (double)(x % 1000) / 7919.0;
		same_real(b);
		same_real(0.001 * i);
		{
			char s[40];

			snprintf(s, sizeof(s), "%llue-%d", (unsigned long long)(x % 100000000000000000ULL) >> (x % 50),
			         (int)(x >> 40) % 24);
			d = strtod(s, NULL);
		}
		same_real(d);
		same_real(ulp_step(d, -1));
		same_real(ulp_step(d, 1));
	}
	for (int e = -30; e < 60; e++) {
		uint64_t pb = (uint64_t)(1023 + e) << 52;
		double p;

		memcpy(&p, &pb, sizeof(p));
		same_real(p);
		same_real(ulp_step(p, -1));
		same_real(ulp_step(p, 1));
	}
	for (int e = -8; e < 17; e++) {
		double p = 1.0;

		for (int i = 0; i < e; i++)
			p *= 10;
		for (int i = 0; i > e; i--)
			p /= 10;
		for (int i = 0; i < 20; i++, p = ulp_step(p, -1))
			same_real(p);
	}
	same_real(0.0);
	same_real(-0.0);
	same_real(5e-324);
	same_real(1.7976931348623157e308);
	ck_assert_int_lt(shk_canon_format_real(__builtin_nan(""), (char[SHK_AUDIT_REAL_MAX]){ 0 }, SHK_AUDIT_REAL_MAX), 0);
	ck_assert_int_lt(shk_canon_format_real(-__builtin_inf(), (char[SHK_AUDIT_REAL_MAX]){ 0 }, SHK_AUDIT_REAL_MAX), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("audit");
	TCase *tc = tcase_create("ledger");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, untouched_log_passes);
	tcase_add_test(tc, entries_are_canonical_and_hashed);
	tcase_add_test(tc, tamper_modified_field);
	tcase_add_test(tc, tamper_deleted_entry);
	tcase_add_test(tc, tamper_inserted_entry);
	tcase_add_test(tc, tamper_inserted_forged_entry);
	tcase_add_test(tc, tamper_reordered_entries);
	tcase_add_test(tc, tamper_truncated_tail);
	tcase_add_test(tc, tamper_truncated_unsigned);
	tcase_add_test(tc, tamper_torn_last_line);
	tcase_add_test(tc, tamper_wrong_key);
	tcase_add_test(tc, tamper_signature_missing);
	tcase_add_test(tc, tamper_bad_signature);
	tcase_add_test(tc, rotation_links_and_gaps);
	tcase_add_test(tc, continued_log_links_sessions);
	tcase_add_test(tc, torn_log_is_not_continued);
	tcase_add_test(tc, crash_kill9_mid_run);
	tcase_add_test(tc, key_files);
	tcase_add_test(tc, key_errors);
	tcase_add_test(tc, bundle_dir_and_tar);
	tcase_add_test(tc, sha256_matches_libsodium);
	tcase_add_test(tc, checkpoint_cadence);
	tcase_add_test(tc, non_utf8_names_are_logged_as_hex);
	tcase_add_test(tc, real_format_matches_canon);
	tcase_add_test(tc, decision_shapes_are_canonical);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
