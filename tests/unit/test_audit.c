/* SPDX-License-Identifier: MIT */
/* The audit ledger: keys, entry format, every tamper class, crash, rotation,
 * continuation and evidence bundles. */
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <sodium.h>

#include "ledger_session.h"
#include "checkrun.h"

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
	shk_audit_session_end e = { T0 + 50000000, 0, NULL, NULL };

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
	shk_audit_session_end e = { T0 + 2000000000LL, 3, NULL, NULL };
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

/*
 * Whole sessions moved around: a log repeated after itself, a session
 * spliced in from another log, the first of two linked sessions cut off,
 * the two swapped. Each session verifies on its own, so only the links
 * between sessions can tell; the signed head would not change.
 */
START_TEST(sessions_spliced_repeated_or_cut)
{
	shk_ledger_options o = { .continue_existing = true };
	shk_audit_session_end e = { T0 + 2000000000LL, 0, NULL, NULL };
	shk_ledger_session s;
	shk_ledger *l = NULL;
	shk_verify_report rep;
	lines a, b, out;
	long second;

	/* the log twice in a row */
	lines_read(logp, &a);
	out = a;
	for (size_t i = 0; i < a.n; i++)
		out.l[out.n++] = a.l[i];
	lines_write(tpath("twice.jsonl"), &out);
	verify_one(tpath("twice.jsonl"), key, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_ROTATION_GAP);
	/* another log's session after this one */
	write_session(tpath("other.jsonl"), key, 5, 4);
	lines_read(tpath("other.jsonl"), &b);
	out = a;
	for (size_t i = 0; i < b.n; i++)
		out.l[out.n++] = b.l[i];
	lines_write(tpath("spliced.jsonl"), &out);
	verify_one(tpath("spliced.jsonl"), key, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_ROTATION_GAP);
	/* a second session continued in the log, then the first one cut off */
	session_info(&s, "sess-2");
	ck_assert_int_eq(shk_ledger_open(logp, key, &s, &o, &l), 0);
	ck_assert_int_eq(append_call(l, 0), 0);
	ck_assert_int_eq(shk_ledger_end(l, &e), 0);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	verify_one(logp, key, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_OK);
	lines_free(&b);
	lines_read(logp, &b);
	second = lines_find(&b, 1, "\"kind\":\"session_start\"");
	ck_assert_int_gt(second, 0);
	out.n = 0;
	for (size_t i = (size_t)second; i < b.n; i++)
		out.l[out.n++] = b.l[i];
	lines_write(tpath("cut.jsonl"), &out);
	verify_one(tpath("cut.jsonl"), key, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_ROTATION_GAP);
	/* ... and swapped with it */
	for (size_t i = 0; i < (size_t)second; i++)
		out.l[out.n++] = b.l[i];
	lines_write(tpath("swapped.jsonl"), &out);
	verify_one(tpath("swapped.jsonl"), key, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_ROTATION_GAP);
	lines_free(&a);
	lines_free(&b);
}
END_TEST

/* --live excuses a missing session_end in the last session only. */
START_TEST(live_excuses_only_the_last_session)
{
	shk_ledger_options o = { .continue_existing = true };
	shk_verify_options live = { .live = true };
	shk_ledger_session s;
	shk_ledger *l = NULL;
	shk_verify_report rep;
	const char *p = tpath("crashed.jsonl");

	/* a session that stopped at a checkpoint without session_end */
	session_info(&s, "crashed");
	ck_assert_int_eq(shk_ledger_open(p, key, &s, &(shk_ledger_options){ .fsync = SHK_FSYNC_NONE },
					 &l), 0);
	ck_assert_int_eq(append_call(l, 0), 0);
	ck_assert_int_eq(shk_ledger_close(l), 0); /* signs, writes no session_end */
	ck_assert_int_eq(shk_verify_files(&p, 1, shk_key_public(key), &live, &rep), 0);
	ck_assert_int_eq(rep.result, SHK_VERIFY_OK); /* it may still be running */
	/* another session after it: the first one was not running any more */
	session_info(&s, "next");
	ck_assert_int_eq(shk_ledger_open(p, key, &s, &o, &l), 0);
	ck_assert_int_eq(append_call(l, 1), 0);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	ck_assert_int_eq(shk_verify_files(&p, 1, shk_key_public(key), &live, &rep), 0);
	ck_assert_int_eq(rep.result, SHK_VERIFY_TRUNCATED);
}
END_TEST

/*
 * The hash leaves out the hash and sig members: a sig member added to a
 * decision, or the hash member moved out of its sorted place, must not
 * pass.
 */
START_TEST(sig_and_hash_members_in_place)
{
	shk_verify_report rep;
	lines ls;
	long d;
	char *at, *line, moved[8192];

	lines_read(logp, &ls);
	d = lines_find(&ls, 0, "\"kind\":\"decision\"");
	ck_assert_int_ge(d, 0);
	line = ls.l[d];
	at = strstr(line, ",\"session\":");
	ck_assert_ptr_nonnull(at);
	snprintf(moved, sizeof(moved), "%.*s,\"sig\":{\"verdict\":\"DENY\"}%s", (int)(at - line), line, at);
	ls.l[d] = moved;
	lines_write(tpath("sig.jsonl"), &ls);
	verify_one(tpath("sig.jsonl"), key, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_MODIFIED);
	/* "hash":"<64>" moved to the end of the object */
	at = strstr(line, "\"hash\":\"");
	ck_assert_ptr_nonnull(at);
	/* "hash":"<64 hex>" is 73 bytes, a comma follows it */
	snprintf(moved, sizeof(moved), "%.*s%.*s,%.*s}", (int)(at - line), line,
		 (int)(strlen(at + 74) - 1), at + 74, 73, at);
	ls.l[d] = moved;
	lines_write(tpath("moved.jsonl"), &ls);
	verify_one(tpath("moved.jsonl"), key, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_MODIFIED);
	ls.l[d] = line;
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
	/* no syncs: a tick at half the bound waits for none (a checkpoint's
	 * sync still running defers it, test_ledger_sync) */
	shk_ledger_options o = { .fsync = SHK_FSYNC_NONE };
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
	/* Without tick, the hard bound: 64 unsigned entries at most. The
	 * checkpoint comes before the 65th, so that an entry is never left in
	 * the log for a call its failed checkpoint denied. */
	for (int i = 1; i <= 64; i++)
		ck_assert_int_eq(append_call(l, i), 0);
	ck_assert_uint_eq(count_kind(p, "checkpoint"), 1);
	ck_assert_int_eq(append_call(l, 65), 0);
	ck_assert_uint_eq(count_kind(p, "checkpoint"), 2);
	/* tick signs at half the bound even before the interval. */
	for (int i = 66; i < 65 + 32; i++)
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

/*
 * The checkpoint fdatasync runs on the syncer thread. A sync that fails
 * there must not be lost: a FIFO takes the lines but fails fdatasync
 * (EINVAL), so after a checkpoint the ledger must refuse the next appends
 * and close must report the failure.
 */
START_TEST(failed_checkpoint_sync_poisons)
{
	const char *p = tpath("sync.fifo");
	shk_ledger_options o = { .continue_existing = true };
	shk_ledger_session s;
	shk_ledger *l = NULL;
	int rd, r = 0;

	ck_assert_int_eq(mkfifo(p, 0600), 0);
	rd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a reader: the open for writing won't block */
	ck_assert_int_ge(rd, 0);
	session_info(&s, "syncfail");
	ck_assert_int_eq(shk_ledger_open(p, key, &s, &o, &l), 0);
	ck_assert_int_eq(append_call(l, 1), 0);
	/* the checkpoint line is written; its sync fails on the other thread */
	ck_assert_int_eq(shk_ledger_checkpoint(l, T0 + 1), 0);
	for (int i = 2; i < 2000 && r == 0; i++) {
		char drain[65536];

		r = append_call(l, i);
		(void)!read(rd, drain, sizeof(drain));
		if (r == 0)
			usleep(1000);
	}
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_int_eq(append_call(l, 3000), -EINVAL); /* stays refused */
	ck_assert_int_eq(shk_ledger_close(l), -EINVAL);
	close(rd);
}
END_TEST

/*
 * The checkpoint at the hard bound fails (the file may not grow: RLIMIT_FSIZE
 * cuts its line short). The call that needed it must leave no entry behind
 * (it is denied), and the error must say why (EFBIG, not a bare EIO).
 */
START_TEST(failed_bound_checkpoint_leaves_no_entry)
{
	const char *p = tpath("bound.jsonl");
	shk_ledger_options o = { .fsync = SHK_FSYNC_NONE };
	shk_ledger_session s;
	shk_ledger *l = NULL;
	struct rlimit rl;
	struct stat st;

	signal(SIGXFSZ, SIG_IGN);
	session_info(&s, "bound");
	ck_assert_int_eq(shk_ledger_open(p, key, &s, &o, &l), 0);
	/* session_start and 63 decisions: 64 unsigned, the bound */
	for (int i = 0; i < 63; i++)
		ck_assert_int_eq(append_call(l, i), 0);
	ck_assert_uint_eq(count_kind(p, "checkpoint"), 0);
	ck_assert_int_eq(stat(p, &st), 0);
	rl.rlim_cur = rl.rlim_max = (rlim_t)st.st_size + 16;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	ck_assert_int_eq(append_call(l, 63), -EFBIG);
	ck_assert_int_eq(append_call(l, 64), -EFBIG); /* poisoned */
	/* 63 decisions, then the torn start of the checkpoint: no 64th */
	ck_assert_uint_eq(count_kind(p, "decision"), 63);
	ck_assert_int_eq(shk_ledger_close(l), -EFBIG);
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
	ck_assert_int_eq(shk_ledger_end(l, &(shk_audit_session_end){ T0 + 1, 0, NULL, NULL }), 0);
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
	tcase_add_test(tc, sessions_spliced_repeated_or_cut);
	tcase_add_test(tc, live_excuses_only_the_last_session);
	tcase_add_test(tc, sig_and_hash_members_in_place);
	tcase_add_test(tc, torn_log_is_not_continued);
	tcase_add_test(tc, crash_kill9_mid_run);
	tcase_add_test(tc, failed_checkpoint_sync_poisons);
	tcase_add_test(tc, failed_bound_checkpoint_leaves_no_entry);
	tcase_add_test(tc, key_files);
	tcase_add_test(tc, key_errors);
	tcase_add_test(tc, bundle_dir_and_tar);
	tcase_add_test(tc, checkpoint_cadence);
	tcase_add_test(tc, non_utf8_names_are_logged_as_hex);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
