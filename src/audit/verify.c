/* SPDX-License-Identifier: MIT */
/*
 * Verification, pass 2: walk the records in file order and tell tampering
 * classes apart from the evidence (docs/audit.md, "Verification"):
 *
 *   hash mismatch, or not canonical        -> modified field
 *   seq jumps ahead, missing seq never seen -> deleted entry
 *   seq jumps ahead, missing seq seen later -> reordered entries
 *   seq repeats or goes back                -> inserted entry
 *   right seq, prev_hash does not link      -> modified (an entry rewritten
 *                                              with its hash recomputed)
 *   file boundary does not continue chain   -> gap between rotated files
 *
 * The walk stops at the first integrity failure. Completeness findings
 * (torn last line, entries after the last signature, truncated tail) do not
 * stop it, so a crashed log reports what is intact and what is not.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "audit/verify_internal.h"

static const struct {
	const char *name, *id;
} classes[] = {
	[SHK_VERIFY_OK] = { "intact", "ok" },
	[SHK_VERIFY_MODIFIED] = { "modified field", "modified_field" },
	[SHK_VERIFY_DELETED] = { "deleted entry", "deleted_entry" },
	[SHK_VERIFY_INSERTED] = { "inserted entry", "inserted_entry" },
	[SHK_VERIFY_REORDERED] = { "reordered entries", "reordered_entries" },
	[SHK_VERIFY_TRUNCATED] = { "truncated tail", "truncated_tail" },
	[SHK_VERIFY_TORN] = { "torn last line", "torn_last_line" },
	[SHK_VERIFY_WRONG_KEY] = { "wrong key", "wrong_key" },
	[SHK_VERIFY_BAD_SIGNATURE] = { "bad signature", "bad_signature" },
	[SHK_VERIFY_SIG_MISSING] = { "signature missing", "signature_missing" },
	[SHK_VERIFY_UNSIGNED_TAIL] = { "entries after the last signature", "entries_after_last_signature" },
	[SHK_VERIFY_ROTATION_GAP] = { "gap between rotated files", "gap_between_rotated_files" },
	[SHK_VERIFY_MALFORMED] = { "malformed entry", "malformed_entry" },
	[SHK_VERIFY_IO] = { "unreadable file", "io_error" },
};

const char *shk_verify_class_name(shk_verify_class c)
{
	return (unsigned)c < sizeof(classes) / sizeof(classes[0]) ? classes[c].name : "?";
}

const char *shk_verify_class_id(shk_verify_class c)
{
	return (unsigned)c < sizeof(classes) / sizeof(classes[0]) ? classes[c].id : "?";
}

struct walk {
	const struct vrec *recs;
	size_t n;
	const char *const *paths;
	const uint8_t *pk;
	char fp[SHK_KEY_FINGERPRINT_LEN + 1];
	shk_verify_report *rep;
	bool live;
	/* current session */
	const char *session;
	int64_t expected;
	uint8_t head[32];
	size_t first_unsigned; /* index, or SIZE_MAX when all are signed */
	uint64_t nunsigned;
	bool ended;
	size_t last;           /* index of the last accepted record */
	/* seq -> record index for the current session */
	size_t *byseq;
	size_t byseq_cap;
};

static bool integrity(shk_verify_class c)
{
	return c != SHK_VERIFY_TORN && c != SHK_VERIFY_UNSIGNED_TAIL && c != SHK_VERIFY_TRUNCATED;
}

__attribute__((format(printf, 4, 5)))
static void finding(struct walk *w, shk_verify_class c, const struct vrec *r, const char *fmt, ...)
{
	shk_verify_report *rep = w->rep;
	shk_verify_finding *f;
	va_list ap;

	if (rep->nfindings == SHK_VERIFY_MAX_FINDINGS)
		return;
	f = &rep->findings[rep->nfindings++];
	f->cls = c;
	snprintf(f->file, sizeof(f->file), "%s", r ? w->paths[r->file] : "");
	f->line = r ? r->line : 0;
	f->seq = r ? r->seq : -1;
	va_start(ap, fmt);
	vsnprintf(f->detail, sizeof(f->detail), fmt, ap);
	va_end(ap);
}

/* Does seq s of the current session occur at or after index i? */
static bool seq_later(const struct walk *w, size_t i, int64_t s)
{
	for (; i < w->n; i++) {
		const struct vrec *r = &w->recs[i];

		if (r->state == R_OK && r->kind == K_SESSION_START)
			return false;
		if (r->seq == s && r->session && !strcmp(r->session, w->session))
			return true;
	}
	return false;
}

static int remember(struct walk *w, size_t i)
{
	uint64_t s = (uint64_t)w->recs[i].seq;

	if (s >= w->byseq_cap) {
		size_t cap = w->byseq_cap ? w->byseq_cap * 2 : 1024;
		size_t *p;

		while (cap <= s)
			cap *= 2;
		p = realloc(w->byseq, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		w->byseq = p;
		w->byseq_cap = cap;
	}
	w->byseq[s] = i;
	return 0;
}

/* End of a session segment (next session_start or end of input). --live
 * excuses a missing session_end only in the last session: an earlier one
 * was not running when the next began. */
static void session_close(struct walk *w, bool last_session)
{
	const struct vrec *last;

	if (!w->session)
		return;
	last = &w->recs[w->last];
	if (w->first_unsigned != SIZE_MAX)
		finding(w, SHK_VERIFY_UNSIGNED_TAIL, &w->recs[w->first_unsigned],
		        "%llu entries from here on are hash-chained but no checkpoint signs them",
		        (unsigned long long)w->nunsigned);
	/* a kill -9 leaves both: say the session_end is missing too */
	if (!w->ended && !(w->live && last_session))
		finding(w, SHK_VERIFY_TRUNCATED, last, SHK_VERIFY_CUT_FMT, w->session);
	w->session = NULL;
}

static shk_verify_class check_checkpoint(struct walk *w, const struct vrec *r)
{
	uint8_t msg[64];
	size_t len;

	if (r->sig_state == SIG_NONE) {
		finding(w, SHK_VERIFY_SIG_MISSING, r, "checkpoint carries no signature");
		return SHK_VERIFY_SIG_MISSING;
	}
	if (r->sig_state != SIG_PRESENT) {
		finding(w, SHK_VERIFY_MODIFIED, r, "checkpoint signature is not 128 hex digits");
		return SHK_VERIFY_MODIFIED;
	}
	len = shk_checkpoint_message(r->hash, msg);
	if (crypto_sign_verify_detached(r->sig, msg, len, w->pk) != 0) {
		if (strcmp(r->fingerprint, w->fp) != 0) {
			finding(w, SHK_VERIFY_WRONG_KEY, r, "signed by key %s, verifying with %s",
			        r->fingerprint, w->fp);
			return SHK_VERIFY_WRONG_KEY;
		}
		finding(w, SHK_VERIFY_BAD_SIGNATURE, r,
		        "signature does not verify: the entries it covers were rewritten");
		return SHK_VERIFY_BAD_SIGNATURE;
	}
	w->rep->checkpoints++;
	w->rep->signed_entries += w->nunsigned + 1;
	w->first_unsigned = SIZE_MAX;
	w->nunsigned = 0;
	shk_audit_hex(r->hash, 32, w->rep->head);
	return SHK_VERIFY_OK;
}

static shk_verify_class start_session(struct walk *w, size_t i)
{
	const struct vrec *r = &w->recs[i];
	uint8_t g[32];

	session_close(w, false);
	w->rep->sessions++;
	if (strcmp(r->fingerprint, w->fp) != 0) {
		finding(w, SHK_VERIFY_WRONG_KEY, r, "session key %s, verifying with %s",
		        r->fingerprint, w->fp);
		return SHK_VERIFY_WRONG_KEY;
	}
	shk_ledger_genesis(r->session, strlen(r->session), g);
	if (r->seq != 0 || memcmp(r->prev, g, 32) != 0) {
		finding(w, SHK_VERIFY_INSERTED, r, "session_start with seq %lld or a prev_hash "
		        "that is not the session's genesis", (long long)r->seq);
		return SHK_VERIFY_INSERTED;
	}
	/* Sessions of one log are linked: each later session_start names the
	 * entry before it, the first one of a log names none. Anything else
	 * is a session cut off the front, spliced in, repeated or moved. */
	if (i > 0 && !r->has_link) {
		finding(w, SHK_VERIFY_ROTATION_GAP, r, "session_start without a link after other "
		        "entries: another log's session, or one repeated or moved here");
		return SHK_VERIFY_ROTATION_GAP;
	}
	if (i == 0 && r->has_link) {
		finding(w, SHK_VERIFY_ROTATION_GAP, r, "the first session links to an entry before it "
		        "that was not given: earlier sessions of this log are missing");
		return SHK_VERIFY_ROTATION_GAP;
	}
	if (i > 0 && memcmp(r->link, w->head, 32) != 0) {
		finding(w, SHK_VERIFY_ROTATION_GAP, r,
		        "link.hash does not match the last entry before this session");
		return SHK_VERIFY_ROTATION_GAP;
	}
	w->session = r->session;
	w->ended = false;
	w->first_unsigned = SIZE_MAX;
	w->nunsigned = 0;
	w->expected = 0;
	memcpy(w->head, g, 32);
	return SHK_VERIFY_OK;
}

/* r's seq is expected but it does not link, or its seq was seen before. */
static shk_verify_class misplaced(struct walk *w, size_t i)
{
	const struct vrec *r = &w->recs[i];

	if (r->seq == w->expected) {
		if (seq_later(w, i + 1, r->seq)) {
			finding(w, SHK_VERIFY_INSERTED, r, "seq %lld occurs again later; this one "
			        "does not link to the chain", (long long)r->seq);
			return SHK_VERIFY_INSERTED;
		}
		finding(w, SHK_VERIFY_MODIFIED, &w->recs[w->last], "the next entry does not link "
		        "to this one: it (or that link) was rewritten with its hash recomputed");
		return SHK_VERIFY_MODIFIED;
	}
	if (r->seq > w->expected) {
		bool later = seq_later(w, i + 1, w->expected);

		finding(w, later ? SHK_VERIFY_REORDERED : SHK_VERIFY_DELETED, r,
		        later ? "seq %lld comes before seq %lld" : "seq %lld follows seq %lld: entries missing",
		        (long long)r->seq, (long long)(later ? w->expected : w->expected - 1));
		return later ? SHK_VERIFY_REORDERED : SHK_VERIFY_DELETED;
	}
	/* A seq seen before. If both copies hang off the same parent and the
	 * next entry links to this one, the earlier copy is the forgery. */
	{
		const struct vrec *twin = &w->recs[w->byseq[r->seq]];
		const struct vrec *next = i + 1 < w->n ? &w->recs[i + 1] : NULL;
		bool twin_forged = !memcmp(twin->prev, r->prev, 32) && memcmp(twin->hash, r->hash, 32) &&
		                   next && next->state == R_OK && !memcmp(next->prev, r->hash, 32);

		finding(w, SHK_VERIFY_INSERTED, twin_forged ? twin : r,
		        "seq %lld appears twice (lines %llu and %llu); this entry is not part of the chain",
		        (long long)r->seq, (unsigned long long)twin->line, (unsigned long long)r->line);
	}
	return SHK_VERIFY_INSERTED;
}

static shk_verify_class file_boundary(struct walk *w, size_t i)
{
	const struct vrec *r = &w->recs[i];

	if (r->kind == K_SESSION_START)
		return SHK_VERIFY_OK; /* its link is checked by start_session */
	if (r->kind != K_CONTINUE) {
		finding(w, SHK_VERIFY_ROTATION_GAP, r, "file starts with a %s entry, not with "
		        "continue or session_start", r->kind == K_OTHER ? "?" : "mid-chain");
		return SHK_VERIFY_ROTATION_GAP;
	}
	if (!w->session || strcmp(r->session, w->session) || r->seq != w->expected ||
	    memcmp(r->prev, w->head, 32) != 0) {
		finding(w, SHK_VERIFY_ROTATION_GAP, r, w->session
		        ? "does not continue the previous file (expected seq %lld)"
		        : "continues a file that was not given (expected seq %lld)",
		        (long long)w->expected);
		return SHK_VERIFY_ROTATION_GAP;
	}
	return SHK_VERIFY_OK;
}

static shk_verify_class step(struct walk *w, size_t i)
{
	const struct vrec *r = &w->recs[i];
	shk_verify_class c;
	bool new_file = i == 0 || r->file != w->recs[i - 1].file;

	if (r->state == R_TORN) {
		finding(w, SHK_VERIFY_TORN, r, "last line has no newline: a write was cut short");
		return SHK_VERIFY_OK;
	}
	w->rep->entries++;
	if (r->state == R_MALFORMED) {
		finding(w, SHK_VERIFY_MODIFIED, r, "not a ledger entry (unparsable or fields missing)");
		return SHK_VERIFY_MODIFIED;
	}
	if (r->state == R_NONCANONICAL || !r->hash_ok) {
		finding(w, SHK_VERIFY_MODIFIED, r, r->hash_ok ? "line is not in canonical form"
		        : "hash does not match the entry's content");
		return SHK_VERIFY_MODIFIED;
	}
	if (r->kind != K_CHECKPOINT && r->sig_state != SIG_NONE) {
		/* the hash leaves sig out: on any other entry it is added text */
		finding(w, SHK_VERIFY_MODIFIED, r, "a sig member on an entry that is not a checkpoint");
		return SHK_VERIFY_MODIFIED;
	}
	if (new_file && (c = file_boundary(w, i)) != SHK_VERIFY_OK)
		return c;
	if (r->kind == K_SESSION_START) {
		c = start_session(w, i);
		if (c != SHK_VERIFY_OK)
			return c;
	} else if (!w->session) {
		finding(w, SHK_VERIFY_DELETED, r, "no session_start before this entry");
		return SHK_VERIFY_DELETED;
	} else if (strcmp(r->session, w->session) != 0) {
		finding(w, SHK_VERIFY_INSERTED, r, "entry of session %s inside session %s",
		        r->session, w->session);
		return SHK_VERIFY_INSERTED;
	} else if (r->seq != w->expected || memcmp(r->prev, w->head, 32) != 0) {
		return misplaced(w, i);
	} else if (w->ended && r->kind != K_CHECKPOINT) {
		finding(w, SHK_VERIFY_INSERTED, r, "entry after session_end");
		return SHK_VERIFY_INSERTED;
	}
	if (remember(w, i) < 0)
		return SHK_VERIFY_IO;
	w->rep->chained++;
	w->expected = r->seq + 1;
	memcpy(w->head, r->hash, 32);
	w->last = i;
	if (r->kind == K_CHECKPOINT)
		return check_checkpoint(w, r);
	if (w->first_unsigned == SIZE_MAX)
		w->first_unsigned = i;
	w->nunsigned++;
	if (r->kind == K_SESSION_END)
		w->ended = true;
	return SHK_VERIFY_OK;
}

static void set_result(shk_verify_report *rep)
{
	static const shk_verify_class order[] = { SHK_VERIFY_TORN, SHK_VERIFY_UNSIGNED_TAIL,
	                                          SHK_VERIFY_TRUNCATED };

	rep->result = SHK_VERIFY_OK;
	for (size_t i = 0; i < rep->nfindings; i++)
		if (integrity(rep->findings[i].cls)) {
			rep->result = rep->findings[i].cls;
			return;
		}
	for (size_t o = 0; o < 3; o++)
		for (size_t i = 0; i < rep->nfindings; i++)
			if (rep->findings[i].cls == order[o]) {
				rep->result = order[o];
				return;
			}
}

int shk_verify_files(const char *const *paths, size_t npaths, const uint8_t pk[SHK_ED25519_PUBLIC_LEN],
                     const shk_verify_options *opts, shk_verify_report *ret)
{
	struct vread rd = { 0 };
	struct walk w = { 0 };
	int r = shk_audit_sodium_init();

	if (r < 0)
		return r;
	if (!paths || !npaths || !pk || !ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	w.rep = ret;
	w.paths = paths;
	shk_key_fingerprint(pk, w.fp);
	memcpy(ret->key_fingerprint, w.fp, sizeof(w.fp));
	for (size_t f = 0; f < npaths; f++) {
		r = shk_audit_vread_file(&rd, paths[f], (uint32_t)f);
		if (r == -ENOMEM)
			goto out;
		if (r < 0) {
			shk_verify_finding *fi = &ret->findings[ret->nfindings++];

			fi->cls = SHK_VERIFY_IO;
			fi->seq = -1;
			snprintf(fi->file, sizeof(fi->file), "%s", paths[f]);
			snprintf(fi->detail, sizeof(fi->detail), "%s",
			         r == -ENODATA ? "empty file" : strerror(-r));
			r = 0;
			set_result(ret);
			goto out;
		}
	}
	ret->files = npaths;
	w.recs = rd.recs;
	w.n = rd.n;
	w.pk = pk;
	w.live = opts && opts->live;
	w.first_unsigned = SIZE_MAX;
	for (size_t i = 0; i < w.n; i++) {
		shk_verify_class c = step(&w, i);

		if (c == SHK_VERIFY_IO) {
			r = -ENOMEM;
			goto out;
		}
		if (c != SHK_VERIFY_OK)
			break;
	}
	if (ret->nfindings == 0 || !integrity(ret->findings[ret->nfindings - 1].cls))
		session_close(&w, true);
	set_result(ret);
out:
	free(w.byseq);
	shk_audit_vread_free(&rd);
	return r;
}
