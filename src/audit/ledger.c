/* SPDX-License-Identifier: MIT */
/*
 * The ledger writer. Each entry is rendered into a reused buffer (decisions
 * by decision.c in one pass, the other kinds by the canonical object
 * builder), hashed, and written as one line by ONE write()
 * on an O_APPEND descriptor, before the call returns: the supervisor releases
 * a verdict only after that. Signing (Ed25519, ~18 us) is kept off the
 * decision path where possible: shk_ledger_tick() signs when half the bound
 * is reached (three quarters while a sync still runs) or the interval has
 * passed; an append signs only when the hard
 * bound of SHK_LEDGER_MAX_UNSIGNED unsigned entries is reached. A
 * checkpoint's fdatasync runs on the syncer thread (syncer.c), started at
 * the first one, or at the open to flush a new log's key files before any
 * sync of the log (shk_ledger_sync_first); the end of a session, a
 * rotation and close wait for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include <shackle/canon.h>

#include "audit/internal.h"
#include "util/linux.h"

struct shk_ledger {
	int fd;
	shk_key *key;
	char *session;
	char fingerprint[SHK_KEY_FINGERPRINT_LEN + 1];
	uint64_t seq;              /* seq of the next entry */
	char head_hex[65];         /* hash of the last entry written */
	unsigned nunsigned;        /* entries after the last checkpoint */
	uint64_t first_unsigned_seq;
	int64_t first_unsigned_ns;
	int64_t last_ns;
	unsigned every;
	int64_t interval_ns;
	shk_fsync_policy fsync;
	struct shk_syncer *syncer; /* checkpoint policy: syncs off this thread */
	/* Started at the first checkpoint that is not synced at once anyway
	 * (end, rotation, close): a short session never needs the thread. */
	bool syncer_wanted;
	bool sync_follows;         /* the checkpoint being written is synced now */
	/* Lines written, and how many of them the last completed sync (ours)
	 * or the last one asked of the syncer covers: a sync with nothing
	 * written since is skipped (the end of a session asked for three,
	 * each a disk flush on the way out of shackle-run). */
	uint64_t nwritten, synced, requested;
	bool ended;
	shk_ledger_prior prior;    /* what this open found */
	bool locked;               /* flock held: the file is ours to undo */
	off_t start_size;          /* the file's size before this open wrote */
	int poisoned;              /* first write error; refuses appends after */
	shk_cob cob;
	shk_cob sub;
	shk_cob budget;            /* own builder: its sorted order stays cached */
	shk_buf line;
	shk_buf tmp;
	shk_buf session_json;      /* the session id as a JSON string */
};

static const char *const fsync_names[] = {
	[SHK_FSYNC_CHECKPOINT] = "checkpoint",
	[SHK_FSYNC_NONE] = "none",
	[SHK_FSYNC_ENTRY] = "entry",
};

int shk_fsync_policy_parse(const char *s, shk_fsync_policy *ret)
{
	for (size_t i = 0; i < sizeof(fsync_names) / sizeof(fsync_names[0]); i++)
		if (s && !strcmp(s, fsync_names[i])) {
			*ret = (shk_fsync_policy)i;
			return 0;
		}
	return -EINVAL;
}

const char *shk_fsync_policy_name(shk_fsync_policy p)
{
	return (unsigned)p < sizeof(fsync_names) / sizeof(fsync_names[0]) ? fsync_names[p] : "?";
}

uint64_t shk_ledger_next_seq(const shk_ledger *l)
{
	return l->seq;
}

const char *shk_ledger_head_hex(const shk_ledger *l)
{
	return l->head_hex;
}

/* Common members of every entry. */
static void entry_begin(shk_ledger *l, const char *kind, int64_t time_ns)
{
	shk_cob_reset(&l->cob);
	shk_cob_str(&l->cob, "kind", kind);
	shk_cob_uint(&l->cob, "seq", l->seq);
	shk_cob_str(&l->cob, "prev_hash", l->head_hex);
	shk_cob_raw(&l->cob, "session", l->session_json.p, l->session_json.len);
	shk_cob_int(&l->cob, "time_ns", time_ns);
}

/*
 * One write(). A short one (a full disk, a fatal signal) leaves a torn line:
 * the rest is tried once, which either completes the line or says why it
 * cannot (ENOSPC, not a bare EIO); either way a torn line poisons.
 */
static int write_line(shk_ledger *l)
{
	ssize_t n, m;

	do
		n = write(l->fd, l->line.p, l->line.len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return l->poisoned = -errno;
	l->nwritten++; /* a torn line counts too: it must not be left unsynced */
	if ((size_t)n == l->line.len)
		return 0;
	m = write(l->fd, l->line.p + n, l->line.len - (size_t)n);
	if (m < 0)
		return l->poisoned = -errno;
	if ((size_t)m != l->line.len - (size_t)n)
		return l->poisoned = -EIO;
	return 0;
}

static int sync_fd(shk_ledger *l)
{
	/* the files of shk_ledger_sync_first before the log (entry policy:
	 * this sync is the append's, reported durable when it returns) */
	int r = l->syncer ? shk_syncer_drain(l->syncer) : 0;

	if (r < 0)
		return l->poisoned = r;
	if (fdatasync(l->fd) < 0)
		return l->poisoned = -errno;
	l->synced = l->nwritten;
	return 0;
}

/* Everything written so far on disk before this returns. */
static int sync_now(shk_ledger *l)
{
	int r = l->syncer ? shk_syncer_drain(l->syncer) : 0;

	if (r < 0)
		return l->poisoned = r;
	/* drained: the syncer's last sync began after its request */
	if (l->syncer && l->requested > l->synced)
		l->synced = l->requested;
	return l->synced == l->nwritten ? 0 : sync_fd(l);
}

/* A checkpoint's sync: asked of the syncer, or done here without one. */
static int sync_checkpoint(shk_ledger *l)
{
	int r;

	if (!l->syncer && l->syncer_wanted && !l->sync_follows) {
		/* without a thread the checkpoint syncs are done inline */
		l->syncer_wanted = false;
		if (shk_syncer_start(l->fd, NULL, 0, &l->syncer) < 0)
			l->syncer = NULL;
	}
	if (!l->syncer)
		return sync_fd(l);
	r = shk_syncer_request(l->syncer);
	if (r < 0)
		return l->poisoned = r;
	l->requested = l->nwritten;
	return 0;
}

/* Write the rendered line (hash h) and advance the chain. */
static int line_commit(shk_ledger *l, const uint8_t h[32], int64_t time_ns, bool checkpoint)
{
	int r = shk_buf_put(&l->line, "\n", 1);

	if (r == 0)
		r = write_line(l);
	if (r < 0)
		return r;
	shk_audit_hex(h, 32, l->head_hex);
	if (checkpoint) {
		l->nunsigned = 0;
	} else if (l->nunsigned++ == 0) {
		l->first_unsigned_seq = l->seq;
		l->first_unsigned_ns = time_ns;
	}
	l->seq++;
	l->last_ns = time_ns;
	if (l->fsync == SHK_FSYNC_ENTRY)
		return sync_fd(l);
	if (checkpoint && l->fsync == SHK_FSYNC_CHECKPOINT)
		return sync_checkpoint(l);
	return 0;
}

/*
 * Hash the entry rendered by the builder, add `hash` (and for a checkpoint
 * `sig` over that hash), write it and advance the chain.
 */
static int entry_commit(shk_ledger *l, int64_t time_ns, bool checkpoint)
{
	uint8_t h[32], msg[64], sig[64];
	char member[8 + 64 + 3], sig_hex[129];
	size_t hole = SIZE_MAX;
	int r;

	if (l->poisoned)
		return l->poisoned;
	l->line.len = 0;
	r = shk_cob_emit(&l->cob, &l->line, "hash", &hole);
	if (r < 0)
		return r;
	shk_sha256_once(l->line.p, l->line.len, h);
	if (checkpoint) {
		/* Rare: render again with hash and sig as ordinary members. */
		shk_audit_hex(h, 32, sig_hex);
		shk_cob_strn(&l->cob, "hash", sig_hex, 64);
		r = shk_key_sign(l->key, msg, shk_checkpoint_message(h, msg), sig);
		if (r < 0)
			return r;
		shk_audit_hex(sig, 64, sig_hex);
		shk_cob_strn(&l->cob, "sig", sig_hex, 128);
		l->line.len = 0;
		r = shk_cob_emit(&l->cob, &l->line, NULL, NULL);
	} else {
		/* Splice "hash":"..." into its sorted place. */
		bool last = hole == SIZE_MAX;

		memcpy(member, last ? ",\"hash\":\"" : "\"hash\":\"", last ? 9 : 8);
		shk_audit_hex(h, 32, member + (last ? 9 : 8));
		memcpy(member + (last ? 73 : 72), last ? "\"" : "\",", last ? 1 : 2);
		r = shk_buf_insert(&l->line, last ? l->line.len - 1 : hole, member, 74);
	}
	if (r < 0)
		return r;
	return line_commit(l, h, time_ns, checkpoint);
}

int shk_ledger_checkpoint(shk_ledger *l, int64_t now_ns)
{
	if (l->nunsigned == 0)
		return 0;
	entry_begin(l, "checkpoint", now_ns);
	shk_cob_uint(&l->cob, "from_seq", l->first_unsigned_seq);
	shk_cob_str(&l->cob, "key_fingerprint", l->fingerprint);
	return entry_commit(l, now_ns, true);
}

/* A checkpoint, and with sync everything on disk before this returns:
 * its own sync is that one, not a request to a thread started for it. */
static int checkpoint_then_sync(shk_ledger *l, int64_t now_ns, bool sync)
{
	int r;

	l->sync_follows = sync;
	r = shk_ledger_checkpoint(l, now_ns);
	l->sync_follows = false;
	if (r == 0 && sync)
		r = sync_now(l);
	return r;
}

static int entry_finish(shk_ledger *l, int64_t time_ns)
{
	return entry_commit(l, time_ns, false);
}

/*
 * Half the bound signs unless the previous checkpoint's sync still runs:
 * its checkpoint would wait for that sync here (one at a time), holding up
 * the agent's next call, and then sign and sync again entries that the
 * next tick covers as well. Three quarters of the bound, or the interval,
 * sign and wait regardless, so the hard bound of the decision path stays
 * rare and the time bound is kept.
 */
int shk_ledger_tick(shk_ledger *l, int64_t now_ns)
{
	if (l->nunsigned == 0 || l->poisoned)
		return l->poisoned;
	if (now_ns - l->first_unsigned_ns >= l->interval_ns || l->nunsigned >= l->every - l->every / 4)
		return shk_ledger_checkpoint(l, now_ns);
	if (l->nunsigned >= (l->every + 1) / 2 && !(l->syncer && shk_syncer_busy(l->syncer)))
		return shk_ledger_checkpoint(l, now_ns);
	return 0;
}

static int appendable(shk_ledger *l)
{
	/* a checkpoint sync that failed on the syncer refuses the next entry */
	if (!l->poisoned && l->syncer)
		l->poisoned = shk_syncer_error(l->syncer);
	if (l->poisoned)
		return l->poisoned;
	return l->ended ? -ESHUTDOWN : 0;
}

/*
 * The hard bound on the decision path, before the entry: a checkpoint that
 * fails then leaves no entry behind for a call that is denied because of
 * it (after the entry, the log would show an ALLOW for a call that never
 * ran). At most `every` entries stay unsigned.
 */
static int appendable_at(shk_ledger *l, int64_t time_ns)
{
	int r = appendable(l);

	if (r == 0 && l->nunsigned >= l->every)
		r = shk_ledger_checkpoint(l, time_ns);
	return r;
}

/* An object member rendered by a sub-builder (budget, view, link...). */
static void put_obj(shk_ledger *l, const char *key, shk_cob *sub)
{
	l->tmp.len = 0;
	if (!l->cob.err) {
		int r = shk_cob_emit(sub, &l->tmp, NULL, NULL);
		if (r < 0)
			l->cob.err = r;
	}
	shk_cob_raw(&l->cob, key, l->tmp.p, l->tmp.len);
}

static void put_sub(shk_ledger *l, const char *key)
{
	put_obj(l, key, &l->sub);
}

static void put_budget(shk_ledger *l, double before, double after)
{
	shk_cob_reset(&l->budget);
	shk_cob_real(&l->budget, "after", after);
	shk_cob_real(&l->budget, "before", before);
	put_obj(l, "budget", &l->budget);
}

static void put_nonce(shk_cob *c, uint64_t nonce)
{
	char t[24], *p = shk_u64_digits(nonce, t);

	/* A string: u64 nonces do not all fit the int64 integers of the log. */
	shk_cob_strn(c, "nonce", p, (size_t)(t + 23 - p));
}

/*
 * The decision path: rendered in one pass with a placeholder for `hash`
 * (decision.c), hashed around it, written.
 */
int shk_ledger_append_decision(shk_ledger *l, const shk_audit_decision *d)
{
	shk_entry_pos pos;
	shk_sha256 st;
	uint8_t h[32];
	size_t off;
	int r;

	if (!d->call || !d->call->tool_name || !d->outcome)
		return -EINVAL;
	if ((r = appendable_at(l, d->time_ns)) < 0)
		return r;
	/* after the checkpoint, if one was due: it moved seq and head */
	pos = (shk_entry_pos){ l->seq, l->head_hex, l->session_json.p, l->session_json.len };
	r = shk_render_decision(&l->line, &pos, d, &off);
	if (r < 0)
		return r;
	shk_sha256_init(&st);
	shk_sha256_update(&st, l->line.p, off);
	shk_sha256_update(&st, l->line.p + off + SHK_HASH_MEMBER_LEN, l->line.len - off - SHK_HASH_MEMBER_LEN);
	shk_sha256_final(&st, h);
	shk_audit_hex(h, 32, l->line.p + off + SHK_HASH_MEMBER_HEX);
	l->line.p[off + SHK_HASH_MEMBER_LEN - 1] = '"'; /* shk_audit_hex wrote a NUL there */
	return line_commit(l, h, d->time_ns, false);
}

int shk_ledger_append_post_exec(shk_ledger *l, const shk_audit_post_exec *p)
{
	int r = appendable_at(l, p->time_ns);
	char *report = NULL;
	size_t report_len = 0;

	if (r < 0)
		return r;
	if (p->report && (shk_canon_check(p->report, SHK_CANON_NO_DEPTH_LIMIT) != SHK_CANON_OK ||
	                  shk_canon_dump(p->report, &report, &report_len) < 0))
		return -EINVAL;
	entry_begin(l, "post_exec", p->time_ns);
	shk_cob_uint(&l->cob, "call", p->call_number);
	put_nonce(&l->cob, p->nonce);
	shk_cob_real(&l->cob, "actual_cost", p->actual_cost);
	shk_cob_bool(&l->cob, "success", p->success);
	shk_cob_int(&l->cob, "duration_ns", p->duration_ns);
	put_budget(l, p->budget_before, p->budget_after);
	if (report)
		shk_cob_raw(&l->cob, "report", report, report_len);
	if (p->shared)
		shk_cob_val(&l->cob, "shared", p->shared);
	free(report);
	return entry_finish(l, p->time_ns);
}

int shk_ledger_append_hitl(shk_ledger *l, const shk_audit_hitl *h)
{
	int r = appendable_at(l, h->time_ns);

	if (r < 0)
		return r;
	if (!h->state)
		return -EINVAL;
	entry_begin(l, "hitl", h->time_ns);
	shk_cob_uint(&l->cob, "call", h->call_number);
	shk_cob_str(&l->cob, "state", h->state);
	shk_cob_str(&l->cob, "operator", h->operator_id);
	put_nonce(&l->cob, h->nonce);
	shk_cob_str(&l->cob, "args_digest", h->args_digest);
	shk_cob_val(&l->cob, "transition", h->transition);
	if (h->scope)
		shk_cob_str(&l->cob, "scope", h->scope);
	return entry_finish(l, h->time_ns);
}

#define TRACE_MAX 32

/* The trace array is rendered in l->line, which is free until commit. */
static void put_trace(shk_ledger *l, const shk_audit_tool_trace *t, size_t n)
{
	size_t from = n > TRACE_MAX ? n - TRACE_MAX : 0;
	int r = 0;

	l->line.len = 0;
	r = shk_buf_put(&l->line, "[", 1);
	for (size_t i = from; r == 0 && i < n; i++) {
		shk_cob_reset(&l->sub);
		shk_cob_int(&l->sub, "time_ns", t[i].time_ns);
		shk_cob_str(&l->sub, "tool", t[i].tool);
		shk_cob_str(&l->sub, "params_hash", t[i].params_hash);
		shk_cob_str(&l->sub, "verdict", t[i].verdict);
		if (i > from)
			r = shk_buf_put(&l->line, ",", 1);
		if (r == 0)
			r = shk_cob_emit(&l->sub, &l->line, NULL, NULL);
	}
	if (r == 0)
		r = shk_buf_put(&l->line, "]", 1);
	if (r < 0)
		l->cob.err = r;
	else
		shk_cob_raw(&l->cob, "trace", l->line.p, l->line.len);
}

int shk_ledger_append_breaker_trip(shk_ledger *l, const shk_audit_breaker_trip *b)
{
	int r = appendable_at(l, b->time_ns);

	if (r < 0)
		return r;
	if (!b->trigger || !b->containment || (b->trace_len && !b->trace))
		return -EINVAL;
	entry_begin(l, "breaker_trip", b->time_ns);
	shk_cob_uint(&l->cob, "call", b->call_number);
	shk_cob_str(&l->cob, "trigger", b->trigger);
	shk_cob_val(&l->cob, "counters", b->counters);
	shk_cob_val(&l->cob, "config", b->config);
	put_trace(l, b->trace, b->trace_len);
	shk_cob_uint(&l->cob, "trace_total", b->trace_len);
	shk_cob_str(&l->cob, "containment", b->containment);
	shk_cob_val(&l->cob, "context", b->context);
	return entry_finish(l, b->time_ns);
}

int shk_ledger_append_refusal(shk_ledger *l, const shk_audit_refusal *f)
{
	int r = appendable_at(l, f->time_ns);

	if (r < 0)
		return r;
	if (!f->origin || !f->what || (f->detail && shk_val_type(f->detail) != SHK_OBJECT))
		return -EINVAL;
	entry_begin(l, "refusal", f->time_ns);
	shk_cob_uint(&l->cob, "call", f->call_number);
	shk_cob_str(&l->cob, "origin", f->origin);
	shk_cob_str(&l->cob, "what", f->what);
	shk_cob_val(&l->cob, "detail", f->detail);
	return entry_finish(l, f->time_ns);
}

int shk_ledger_end(shk_ledger *l, const shk_audit_session_end *e)
{
	int r = appendable(l);

	if (r < 0)
		return r;
	entry_begin(l, "session_end", e->time_ns);
	shk_cob_int(&l->cob, "exit_status", e->exit_status);
	shk_cob_val(&l->cob, "counters", e->counters);
	if (e->shared)
		shk_cob_val(&l->cob, "shared", e->shared);
	r = entry_commit(l, e->time_ns, false);
	if (r == 0)
		r = checkpoint_then_sync(l, e->time_ns, l->fsync != SHK_FSYNC_ENTRY);
	if (r == 0)
		l->ended = true;
	return r;
}

/* ---- files -------------------------------------------------------------- */

/* What continuing a file needs from its end: the last two lines (the last
 * one is linked to; the one before says whether its session ended) and the
 * key of its last session. */
struct tail {
	char *last, *prev;
	size_t len, prev_len;
	bool torn;
	uint64_t lines;
	char fingerprint[SHK_KEY_FINGERPRINT_LEN + 1];
};

static int parse_line(shk_doc *doc, const char *text, size_t len, shk_val **ret)
{
	shk_parse_error perr;

	return shk_json_parse(doc, text, len, "ledger", ret, &perr);
}

static const char *member_str(const shk_val *v, const char *key)
{
	const shk_val *m = shk_object_get(v, key);

	return shk_val_type(m) == SHK_STRING ? shk_val_str(m, NULL) : NULL;
}

/* A session_start: its key_fingerprint is the key that goes on signing. */
static int note_session_key(struct tail *t, const char *line, size_t len)
{
	static const char needle[] = "\"kind\":\"session_start\"";
	shk_doc *doc = NULL;
	shk_val *v = NULL;
	const char *fp, *kind;

	if (!memmem(line, len, needle, sizeof(needle) - 1))
		return 0;
	if (shk_doc_new(&doc) < 0)
		return -ENOMEM;
	/* the text may sit deeper (a policy document): only the entry's own counts */
	if (parse_line(doc, line, len, &v) == 0 && (kind = member_str(v, "kind")) &&
	    !strcmp(kind, "session_start") && (fp = member_str(v, "key_fingerprint")))
		snprintf(t->fingerprint, sizeof(t->fingerprint), "%s", fp);
	shk_doc_free(doc);
	return 0;
}

static int keep_tail(void *ctx, uint64_t lineno, const char *line, size_t len, bool torn)
{
	struct tail *t = ctx;
	int r;

	t->lines = lineno;
	t->torn = torn;
	if (torn)
		return 0;
	if ((r = note_session_key(t, line, len)) < 0)
		return r;
	free(t->prev);
	t->prev = t->last;
	t->prev_len = t->len;
	t->last = strndup(line, len);
	t->len = len;
	return t->last ? 0 : -ENOMEM;
}

static void tail_free(struct tail *t)
{
	free(t->last);
	free(t->prev);
}

int shk_ledger_signer(const char *path, char ret_fp[SHK_KEY_FINGERPRINT_LEN + 1])
{
	struct tail t = { 0 };
	int r = shk_ledger_read_lines(path, keep_tail, &t);

	if (r == 0 && !t.fingerprint[0])
		r = -ENODATA;
	if (r == 0)
		memcpy(ret_fp, t.fingerprint, sizeof(t.fingerprint));
	tail_free(&t);
	return r;
}

/* Did the session before end: session_end, then its checkpoint? */
static bool prior_ended(shk_doc *doc, const shk_val *last, const struct tail *t)
{
	const char *kind = member_str(last, "kind");
	shk_val *prev = NULL;

	if (!kind || strcmp(kind, "checkpoint") || !t->prev)
		return false;
	return parse_line(doc, t->prev, t->prev_len, &prev) == 0 &&
	       (kind = member_str(prev, "kind")) && !strcmp(kind, "session_end");
}

/* The hash and seq of the last entry of an existing ledger, into link; and
 * the key its last session was signed with must be ours. */
static int read_link(shk_ledger *l, const char *path, shk_cob *link)
{
	struct tail t = { 0 };
	shk_doc *doc = NULL;
	shk_val *v = NULL;
	const shk_val *hash, *seq, *session;
	int r;

	r = shk_ledger_read_lines(path, keep_tail, &t);
	if (r == 0 && t.torn)
		r = -EBADMSG; /* never build on a torn line: it would hide it */
	if (r == 0 && !t.last)
		r = -ENODATA;
	if (r == 0 && !t.fingerprint[0])
		r = -EBADMSG; /* no session_start: not a ledger */
	if (r == 0 && strcmp(t.fingerprint, l->fingerprint) != 0)
		r = -EKEYREJECTED; /* verify takes one key for a whole log */
	if (r == 0)
		r = shk_doc_new(&doc);
	if (r == 0)
		r = parse_line(doc, t.last, t.len, &v);
	if (r == 0) {
		hash = shk_object_get(v, "hash");
		seq = shk_object_get(v, "seq");
		session = shk_object_get(v, "session");
		if (shk_val_type(hash) != SHK_STRING || shk_val_type(seq) != SHK_INT ||
		    shk_val_type(session) != SHK_STRING)
			r = -EBADMSG;
	}
	if (r == 0) {
		size_t hl, sl;
		const char *hs = shk_val_str(hash, &hl), *ss = shk_val_str(session, &sl);

		shk_cob_reset(link);
		shk_cob_strn(link, "hash", hs, hl);
		shk_cob_int(link, "seq", shk_val_int(seq));
		shk_cob_strn(link, "session", ss, sl);
		shk_cob_uint(link, "line", t.lines);
		l->prior = prior_ended(doc, v, &t) ? SHK_LEDGER_AFTER_END : SHK_LEDGER_AFTER_UNFINISHED;
	}
	shk_doc_free(doc);
	tail_free(&t);
	return r;
}

static int put_argv(shk_ledger *l, const shk_ledger_session *s)
{
	int r;

	l->tmp.len = 0;
	r = shk_buf_put(&l->tmp, "[", 1);
	for (size_t i = 0; r == 0 && i < s->argc; i++) {
		if (i > 0)
			r = shk_buf_put(&l->tmp, ",", 1);
		if (r == 0)
			r = shk_json_quote_or_hex(&l->tmp, s->argv[i], strlen(s->argv[i]));
	}
	if (r == 0)
		r = shk_buf_put(&l->tmp, "]", 1);
	if (r == 0)
		shk_cob_raw(&l->cob, "argv", l->tmp.p, l->tmp.len);
	return r;
}

static void put_session_config(shk_ledger *l, const shk_session_config *c)
{
	shk_session_config zero = { 0 };

	if (!c)
		c = &zero;
	shk_cob_reset(&l->sub);
	shk_cob_uint(&l->sub, "max_nonce_ranges", c->max_nonce_ranges);
	shk_cob_uint(&l->sub, "max_repeat_keys", c->max_repeat_keys);
	shk_cob_uint(&l->sub, "max_pending", c->max_pending);
	shk_cob_uint(&l->sub, "max_inflight", c->max_inflight);
	put_sub(l, "session_config");
}

static int write_session_start(shk_ledger *l, const shk_ledger_session *s, bool linked)
{
	char host[256] = "";
	int r;

	if (!s->host && gethostname(host, sizeof(host) - 1) < 0)
		return -errno;
	entry_begin(l, "session_start", s->start_ns);
	shk_cob_str(&l->cob, "format", SHK_LEDGER_DOMAIN);
	shk_cob_str(&l->cob, "version", s->version);
	shk_cob_str(&l->cob, "host", s->host ? s->host : host);
	shk_cob_str(&l->cob, "key_fingerprint", l->fingerprint);
	shk_cob_str(&l->cob, "policy_digest", s->policy_digest);
	shk_cob_val(&l->cob, "policy", s->policy);
	shk_cob_val(&l->cob, "extra", s->extra);
	if (linked) /* l->sub holds the link read by shk_ledger_open */
		put_sub(l, "link");
	else
		shk_cob_null(&l->cob, "link");
	put_session_config(l, s->config);
	r = put_argv(l, s);
	if (r < 0)
		return r;
	return entry_commit(l, s->start_ns, false);
}

static int ledger_alloc(const shk_key *key, const shk_ledger_session *s,
                        const shk_ledger_options *opts, shk_ledger **ret)
{
	shk_ledger *l;
	uint8_t g[32];
	int r;

	if (!s || !s->session_id || !*s->session_id || !key || (s->argc && !s->argv))
		return -EINVAL;
	r = shk_audit_sodium_init();
	if (r < 0)
		return r;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->fd = -EBADF;
	/* The session id keys the genesis hash: it must be representable. */
	if (shk_json_quote(&l->session_json, s->session_id, strlen(s->session_id)) < 0) {
		shk_buf_free(&l->session_json);
		free(l);
		return -EINVAL;
	}
	l->session = strdup(s->session_id);
	r = l->session ? shk_key_dup(key, &l->key) : -ENOMEM;
	if (r < 0) {
		free(l->session);
		shk_buf_free(&l->session_json);
		free(l);
		return r;
	}
	shk_key_fingerprint(shk_key_public(key), l->fingerprint);
	shk_ledger_genesis(s->session_id, strlen(s->session_id), g);
	shk_audit_hex(g, 32, l->head_hex);
	l->every = opts && opts->checkpoint_every ? opts->checkpoint_every : SHK_LEDGER_MAX_UNSIGNED;
	if (l->every > SHK_LEDGER_MAX_UNSIGNED)
		l->every = SHK_LEDGER_MAX_UNSIGNED;
	l->interval_ns = opts && opts->checkpoint_interval_ns > 0 ? opts->checkpoint_interval_ns
	                                                           : SHK_LEDGER_DEFAULT_INTERVAL_NS;
	l->fsync = opts ? opts->fsync : SHK_FSYNC_CHECKPOINT;
	*ret = l;
	return 0;
}

static void ledger_free(shk_ledger *l)
{
	shk_syncer_stop(l->syncer); /* before its descriptor goes */
	if (l->fd >= 0)
		close(l->fd);
	shk_key_free(l->key);
	free(l->session);
	shk_cob_free(&l->cob);
	shk_cob_free(&l->sub);
	shk_cob_free(&l->budget);
	shk_buf_free(&l->session_json);
	shk_buf_free(&l->line);
	shk_buf_free(&l->tmp);
	free(l);
}

/*
 * The file, opened for appending and locked: one writer per log (a second
 * session writing at the same time would interleave its entries with
 * ours). A new file is created here; an existing one is continued only
 * when asked. O_NONBLOCK: a FIFO put in its place without a reader would
 * block the open (the CLI refuses anything but a regular file before).
 */
static int open_file(shk_ledger *l, const char *path, bool cont, bool sync_dir)
{
	int flags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
	struct stat st;

	l->prior = SHK_LEDGER_WAS_EMPTY; /* until read_link finds entries */
	l->fd = open(path, flags | O_CREAT | O_EXCL, 0640);
	if (l->fd >= 0)
		l->prior = SHK_LEDGER_CREATED;
	else if (errno == EEXIST && cont)
		l->fd = open(path, flags);
	if (l->fd < 0)
		return -errno;
	if (flock(l->fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
	l->locked = true;
	if (fcntl(l->fd, F_SETFL, O_APPEND) < 0 || fstat(l->fd, &st) < 0)
		return -errno;
	l->start_size = st.st_size;
	return l->prior == SHK_LEDGER_CREATED && sync_dir ? shk_audit_fsync_dir(path) : 0;
}

/* Take back what this open wrote: the file it created, or the tail it
 * added to a continued one (a torn session_start would refuse the next
 * continuation). Only while we hold the lock: the file is ours then. */
static int undo_open(shk_ledger *l, const char *path)
{
	if (!l->locked)
		return 0;
	if (l->prior == SHK_LEDGER_CREATED)
		return unlink(path) < 0 ? -errno : 0;
	return ftruncate(l->fd, l->start_size) < 0 ? -errno : 0;
}

int shk_ledger_open(const char *path, const shk_key *key, const shk_ledger_session *session,
                    const shk_ledger_options *opts, shk_ledger **ret_ledger)
{
	bool cont = opts && opts->continue_existing;
	bool linked = false;
	shk_ledger *l = NULL;
	int r;

	if ((unsigned)(opts ? opts->fsync : 0) > SHK_FSYNC_ENTRY)
		return -EINVAL;
	r = ledger_alloc(key, session, opts, &l);
	if (r < 0)
		return r;
	r = open_file(l, path, cont, !(opts && opts->caller_syncs_dir));
	if (r == 0 && l->start_size > 0) {
		r = read_link(l, path, &l->sub);
		linked = r == 0;
	}
	l->syncer_wanted = l->fsync == SHK_FSYNC_CHECKPOINT;
	if (r == 0)
		r = write_session_start(l, session, linked);
	if (r < 0) {
		undo_open(l, path);
		ledger_free(l);
		return r;
	}
	*ret_ledger = l;
	return 0;
}

int shk_ledger_sync_first(shk_ledger *l, const int *fds, size_t n)
{
	if (n == 0)
		return 0;
	/* without a thread of their own: here and now, as before */
	if (n > SHK_SYNC_FIRST_MAX || l->syncer || shk_syncer_start(l->fd, fds, n, &l->syncer) < 0)
		return shk_sync_close_all(fds, n);
	l->syncer_wanted = false; /* it is there from now on */
	return 0;
}

shk_ledger_prior shk_ledger_prior_state(const shk_ledger *l)
{
	return l->prior;
}

int shk_ledger_discard(shk_ledger *l, const char *path)
{
	int r;

	if (!l)
		return 0;
	if (l->syncer)
		shk_syncer_drain(l->syncer);
	r = undo_open(l, path);
	ledger_free(l);
	return r;
}

int shk_ledger_rotate(shk_ledger *l, const char *new_path, int64_t now_ns)
{
	const char *base = strrchr(new_path, '/');
	int fd, r = appendable(l);

	if (r < 0)
		return r;
	r = checkpoint_then_sync(l, now_ns, l->fsync != SHK_FSYNC_NONE);
	if (r < 0)
		return r;
	fd = open(new_path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0)
		return -errno;
	/* sync_now drained the syncer: nothing of it uses the old fd now */
	if (l->syncer)
		(void)shk_syncer_set_fd(l->syncer, fd);
	close(l->fd);
	l->fd = fd;
	entry_begin(l, "continue", now_ns);
	shk_cob_str(&l->cob, "file", base ? base + 1 : new_path);
	return entry_finish(l, now_ns);
}

int shk_ledger_close(shk_ledger *l)
{
	int r = 0;

	if (!l)
		return 0;
	if (!l->poisoned)
		r = checkpoint_then_sync(l, shk_realtime_ns(), l->fsync != SHK_FSYNC_NONE);
	if (l->syncer) {
		/* stopped before its descriptor is closed; its failure counts */
		int e = shk_syncer_drain(l->syncer);

		if (e < 0 && !l->poisoned)
			l->poisoned = e;
		shk_syncer_stop(l->syncer);
		l->syncer = NULL;
	}
	if (r == 0 && l->poisoned)
		r = l->poisoned;
	if (l->fd >= 0 && close(l->fd) < 0 && r == 0)
		r = -errno;
	l->fd = -EBADF;
	ledger_free(l);
	return r;
}
