/* SPDX-License-Identifier: MIT */
/*
 * shackle/audit.h — the signed, hash-chained audit ledger.
 *
 * A ledger is a JSON Lines file: one canonical JSON entry per line. Every
 * entry carries `seq`, `prev_hash` and `hash` (SHA-256 over the canonical
 * entry without `hash` and `sig`); the first entry of a session links to a
 * genesis value bound to the session id. Ed25519 signatures are carried by
 * `checkpoint` entries, which are themselves chained and sign their own hash,
 * i.e. the chain head. The writer appends a checkpoint at least every
 * SHK_LEDGER_MAX_UNSIGNED entries, whenever shk_ledger_tick() finds the oldest
 * unsigned entry older than the checkpoint interval, after session_end and
 * before a file is rotated or closed. docs/audit.md is the reference for the
 * format, the crash window and the verification classes.
 *
 * Thread safety: none. A shk_ledger belongs to one thread (the supervisor's
 * event loop); verify and replay functions are reentrant.
 */
#ifndef SHACKLE_AUDIT_H
#define SHACKLE_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <shackle/json.h>
#include <shackle/policy.h>
#include <shackle/session.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHK_ED25519_PUBLIC_LEN 32
#define SHK_KEY_FINGERPRINT_LEN 32 /* hex characters: first 16 bytes of SHA-256(pk) */
#define SHK_LEDGER_MAX_UNSIGNED 64
#define SHK_LEDGER_DEFAULT_INTERVAL_NS (100 * 1000 * 1000LL)

/* ---- keys -------------------------------------------------------------- */

typedef struct shk_key shk_key; /* an Ed25519 signing key (secret + public) */

/* Why loading a key failed, for the CLI to print once. */
typedef struct shk_key_error {
	char text[256];
} shk_key_error;

/* Fresh key pair from the system CSPRNG. 0 or -ENOMEM. */
int shk_key_generate(shk_key **ret_key);
void shk_key_free(shk_key *key); /* wipes the secret; NULL is a no-op */

/*
 * Write PREFIX.key (mode 0600) and PREFIX.pub (mode 0644). Both are created
 * with O_EXCL: an existing file is never overwritten (-EEXIST). If the second
 * file cannot be created the first is removed again.
 */
int shk_key_write_files(const shk_key *key, const char *prefix, shk_key_error *err);

/*
 * The same files, written but not flushed to disk: ret_fds gets PREFIX.key,
 * PREFIX.pub and their directory, open, for the caller to fsync and close
 * (shk_ledger_sync_first). On failure nothing is left open or created.
 */
int shk_key_write_files_unsynced(const shk_key *key, const char *prefix, int ret_fds[3],
                                 shk_key_error *err);

/*
 * Load a secret key. A file that group or others may read or write is
 * refused (-EPERM); a missing file is -ENOENT; a wrong header or length is
 * -EINVAL. From an fd (a pipe, or an inherited file) the mode check applies
 * only when the fd is a regular file. The fd is not closed.
 */
int shk_key_load_file(const char *path, shk_key **ret_key, shk_key_error *err);
int shk_key_load_fd(int fd, shk_key **ret_key, shk_key_error *err);

/* As shk_key_load_file, and the file must be a regular file (not a link)
 * owned by owner: a key kept beside a log (LOG.key). -EPERM otherwise. */
int shk_key_load_owned(const char *path, uid_t owner, shk_key **ret_key, shk_key_error *err);

/* Write only the public half (O_EXCL, mode 0644, synced with its directory). */
int shk_pubkey_write_file(const shk_key *key, const char *path, shk_key_error *err);

/* Public key file (PREFIX.pub) into 32 bytes. Same error convention. */
int shk_pubkey_load_file(const char *path, uint8_t ret_pk[SHK_ED25519_PUBLIC_LEN],
                         shk_key_error *err);

const uint8_t *shk_key_public(const shk_key *key);

/* Lower-case hex of the first 16 bytes of SHA-256(pk), NUL-terminated. */
void shk_key_fingerprint(const uint8_t pk[SHK_ED25519_PUBLIC_LEN],
                         char out[SHK_KEY_FINGERPRINT_LEN + 1]);

/* ---- writer ------------------------------------------------------------ */

typedef struct shk_ledger shk_ledger;

typedef enum shk_fsync_policy {
	SHK_FSYNC_CHECKPOINT = 0, /* default: fdatasync after each checkpoint */
	SHK_FSYNC_NONE,           /* leave it to the page cache */
	SHK_FSYNC_ENTRY,          /* fdatasync after every entry */
} shk_fsync_policy;

int shk_fsync_policy_parse(const char *s, shk_fsync_policy *ret);
const char *shk_fsync_policy_name(shk_fsync_policy p);

typedef struct shk_ledger_options {
	shk_fsync_policy fsync;
	/* Signed checkpoint once this many entries are unsigned (1..64; 0 = 64). */
	unsigned checkpoint_every;
	/* Checkpoint interval checked by shk_ledger_tick (0 = 100 ms). */
	int64_t checkpoint_interval_ns;
	/*
	 * If the file exists and is not empty, continue it: the new session's
	 * session_start records the last entry's hash in `link`. Without this
	 * flag an existing file is refused (-EEXIST). A file whose last line is
	 * torn is never continued (-EBADMSG), nor one whose last session was
	 * signed by another key (-EKEYREJECTED: verify takes one key per log).
	 */
	bool continue_existing;
	/*
	 * A file this open creates is not made durable in its directory here:
	 * the caller syncs that directory itself, once for the files it writes
	 * beside the log at once (shk_key_write_files does). Until then a crash
	 * may lose the new file.
	 */
	bool caller_syncs_dir;
} shk_ledger_options;

/* What shk_ledger_open found at the path. */
typedef enum shk_ledger_prior {
	SHK_LEDGER_CREATED = 0,      /* no file: this open created it */
	SHK_LEDGER_WAS_EMPTY,        /* an empty file */
	SHK_LEDGER_AFTER_END,        /* continued after a session that ended (session_end, checkpoint) */
	SHK_LEDGER_AFTER_UNFINISHED, /* continued after a session that did not end: verify reports it */
} shk_ledger_prior;

/* What session_start records. Strings must be valid UTF-8. */
typedef struct shk_ledger_session {
	const char *session_id;     /* required, non-empty */
	const shk_val *policy;      /* the policy document itself (replay needs it) */
	const char *policy_digest;  /* hex, as shk_policy reports it */
	const char *const *argv;    /* the agent command line */
	size_t argc;
	const char *host;           /* NULL: gethostname() */
	const char *version;        /* shackle version */
	int64_t start_ns;           /* CLOCK_REALTIME */
	const shk_session_config *config; /* capacities of the session (guard comes from policy) */
	const shk_val *extra;       /* optional object of further context, or NULL */
} shk_ledger_session;

/*
 * One judged tool call: exactly what was given to shk_session_evaluate() and
 * what it answered, so that `shackle audit replay` can run the same session
 * code over the log and compare.
 */
typedef struct shk_audit_decision {
	int64_t time_ns;            /* the now_ns given to evaluate and commit */
	int32_t pid, tid;
	const char *exe;            /* may be NULL */
	uint64_t call_number;
	const shk_toolcall *call;   /* prepared (shk_toolcall_prepare) */
	shk_action action;          /* static policy action given to evaluate */
	const char *rule;           /* name of the matching policy rule, or NULL */
	const shk_outcome *outcome; /* what evaluate answered */
	/* Non-NULL when the policy redacts: logged instead of params (the
	 * params_hash of the real params is logged too — the keyed digest
	 * shk_audit_prepare_call gave the call; replay re-runs the call from
	 * that digest, docs/audit.md). */
	const shk_val *params_redacted;
	const char *operator_id;    /* human decisions only, else NULL */
	const shk_val *inputs;      /* anything else the supervisor used (object), or NULL */
	/* What the call read from a shared scope (shk_scope_read_to_val), or
	 * NULL: no "shared" member (docs/shared-state.md). */
	const shk_val *shared;
} shk_audit_decision;

/*
 * shk_toolcall_prepare, and when the policy redacts something in tc->params
 * a keyed digest instead of their SHA-256 (shk_toolcall_set_digest):
 * HMAC-SHA256 under a random key of the process, drawn on first use and
 * never written, so that the logged params_hash of redacted params cannot
 * be checked against guesses of the secret (docs/audit.md, "Redacted
 * params"). Every call whose entry may be redacted is prepared here.
 * 0, -EINVAL (params not canonicalisable: Rule 1's to report, as for
 * shk_toolcall_prepare) or -EIO (no randomness: the call must be denied).
 */
int shk_audit_prepare_call(const shk_policy *policy, shk_toolcall *tc);

typedef struct shk_audit_post_exec {
	int64_t time_ns;
	uint64_t call_number;
	uint64_t nonce;             /* of the allowed call (shk_session_post_exec) */
	double actual_cost;
	bool success;
	int64_t duration_ns;
	double budget_before, budget_after;
	const shk_val *report;      /* what the source reported (e.g. a model's usage), or NULL */
	const shk_val *shared;      /* the shared scope's settlement (shk_scope_read_to_val), or NULL */
} shk_audit_post_exec;

typedef struct shk_audit_hitl {
	int64_t time_ns;
	uint64_t call_number;
	const char *state;          /* pending approved rejected modified deferred expired cancelled breaker_reset */
	const char *operator_id;    /* NULL while pending */
	uint64_t nonce;             /* the held call's nonce */
	const char *args_digest;    /* hex canonical_hash of its params */
	const shk_val *transition;  /* the pending_transition given to decide(), or NULL */
	const char *scope;          /* breaker_reset of a shared breaker: its scope's id; else NULL */
} shk_audit_hitl;

typedef struct shk_audit_tool_trace {
	int64_t time_ns;
	const char *tool;
	const char *params_hash;    /* hex */
	const char *verdict;
} shk_audit_tool_trace;

typedef struct shk_audit_breaker_trip {
	int64_t time_ns;
	uint64_t call_number;
	const char *trigger;        /* e.g. max_repeat_exceeded, budget_exhausted */
	const shk_val *counters;    /* object: loop counters at the trip */
	const shk_val *config;      /* object: the breaker limits in force, or NULL */
	const shk_audit_tool_trace *trace; /* recent calls, oldest first */
	size_t trace_len;           /* at most 32 are logged (the newest) */
	const char *containment;    /* terminate | safe_mode | hitl_review | deny_all */
	const shk_val *context;     /* object: agent/tenant/trace ids, or NULL */
} shk_audit_breaker_trip;

/* Input a source answered with an error before it became a tool call (a
 * body that is not JSON, an unknown endpoint, a wrong key, an upstream that
 * failed): nothing was judged, so nothing for replay to re-derive. */
typedef struct shk_audit_refusal {
	int64_t time_ns;
	uint64_t call_number;       /* the session's last call number at the time */
	const char *origin;         /* who refused: "gateway", "sdk:<agent id>" */
	const char *what;           /* a short code: "malformed_request", "unknown_endpoint", ... */
	const shk_val *detail;      /* object (status, message, ...) or NULL */
} shk_audit_refusal;

typedef struct shk_audit_session_end {
	int64_t time_ns;
	int exit_status;            /* wait status decoded: exit code, or -signal */
	const shk_val *counters;    /* object or NULL */
	/* object or NULL (no member): a shared scope's settles the end
	 * retried or left to the lease (docs/shared-state.md) */
	const shk_val *shared;
} shk_audit_session_end;

/*
 * Open (create, or continue) a ledger and write its session_start. The key is
 * copied; the caller may free it. The file is locked (flock) until close: a
 * log another writer holds is refused (-EBUSY). On failure nothing of this
 * open is left: a file it created is removed, a continued one is cut back to
 * its size. Returns 0 or a negative errno.
 */
int shk_ledger_open(const char *path, const shk_key *key, const shk_ledger_session *session,
                    const shk_ledger_options *opts, shk_ledger **ret_ledger);

shk_ledger_prior shk_ledger_prior_state(const shk_ledger *l);

/*
 * Undo an open whose run cannot go on (its key files could not be written):
 * the file it created is removed, a continued one cut back to its size
 * before the open; then the ledger is freed. path as given to the open.
 */
int shk_ledger_discard(shk_ledger *l, const char *path);

/*
 * Files that must be on disk before anything of this log is: fds (at most
 * 4; a new log's key files and their directory, shk_key_write_files_unsynced)
 * are fsynced and closed by the ledger's sync thread, started now, as its
 * first job, while the caller goes on. Every sync of the log waits for
 * that job (a checkpoint's, the end's, an entry's under SHK_FSYNC_ENTRY):
 * no entry is reported durable before the key that signs it is on disk.
 * (Entries may reach the disk earlier, by writeback or, under
 * SHK_FSYNC_ENTRY, the session_start synced when the ledger opens, before
 * the key files exist: lost keys then leave a log that cannot be verified,
 * never one whose durability was claimed.) A
 * failed fsync poisons the ledger like a failed checkpoint sync: the next
 * append fails and so do the end and close. Without a thread they are
 * synced here (that failure is returned). The fds are the ledger's in every
 * case.
 */
int shk_ledger_sync_first(shk_ledger *l, const int *fds, size_t n);

/* The key_fingerprint of the last session_start in an existing ledger (the
 * key a continuation must sign with). -ENODATA when it has none. */
int shk_ledger_signer(const char *path, char ret_fp[SHK_KEY_FINGERPRINT_LEN + 1]);

/*
 * Each append writes one whole line with a single write() to an O_APPEND fd
 * and returns only after it was written (and synced under SHK_FSYNC_ENTRY).
 * An error means the entry is NOT in the log: the caller must answer DENY.
 * After a write error the ledger is poisoned and refuses further appends.
 */
int shk_ledger_append_decision(shk_ledger *l, const shk_audit_decision *d);
int shk_ledger_append_post_exec(shk_ledger *l, const shk_audit_post_exec *p);
int shk_ledger_append_hitl(shk_ledger *l, const shk_audit_hitl *h);
int shk_ledger_append_breaker_trip(shk_ledger *l, const shk_audit_breaker_trip *b);
int shk_ledger_append_refusal(shk_ledger *l, const shk_audit_refusal *f);

/*
 * Let the ledger sign: writes a checkpoint if entries are unsigned and the
 * oldest is at least the checkpoint interval old, if three quarters of the
 * entry bound are reached, or half of it with the last checkpoint's sync
 * finished (so that signing mostly happens here, off the decision path,
 * and does not wait here for a sync still running).
 * Call it from the event loop after verdicts are released and on a timer.
 */
int shk_ledger_tick(shk_ledger *l, int64_t now_ns);
int shk_ledger_checkpoint(shk_ledger *l, int64_t now_ns);

/* Sign and sync the current file, then continue the chain in new_path
 * (created O_EXCL) with a `continue` entry. */
int shk_ledger_rotate(shk_ledger *l, const char *new_path, int64_t now_ns);

/* session_end + final checkpoint. No appends afterwards. */
int shk_ledger_end(shk_ledger *l, const shk_audit_session_end *e);

/* Checkpoint if needed, sync, close and free. NULL is a no-op. Returns the
 * first error met (the ledger is freed regardless). */
int shk_ledger_close(shk_ledger *l);

uint64_t shk_ledger_next_seq(const shk_ledger *l);
const char *shk_ledger_head_hex(const shk_ledger *l);

/* ---- verification ------------------------------------------------------ */

typedef enum shk_verify_class {
	SHK_VERIFY_OK = 0,
	SHK_VERIFY_MODIFIED,          /* modified field */
	SHK_VERIFY_DELETED,           /* deleted entry */
	SHK_VERIFY_INSERTED,          /* inserted entry */
	SHK_VERIFY_REORDERED,         /* reordered entries */
	SHK_VERIFY_TRUNCATED,         /* truncated tail */
	SHK_VERIFY_TORN,              /* torn last line */
	SHK_VERIFY_WRONG_KEY,         /* wrong key */
	SHK_VERIFY_BAD_SIGNATURE,     /* signature does not verify (chain rewritten) */
	SHK_VERIFY_SIG_MISSING,       /* signature missing */
	SHK_VERIFY_UNSIGNED_TAIL,     /* entries after the last signature */
	SHK_VERIFY_ROTATION_GAP,      /* gap between rotated files */
	SHK_VERIFY_MALFORMED,         /* not a ledger entry at all */
	SHK_VERIFY_IO,                /* could not read a file */
} shk_verify_class;

/* The detail of a truncated tail (one %s: the session id), also said by
 * `shackle audit replay` of such a log. */
#define SHK_VERIFY_CUT_FMT \
	"session %s has no session_end: the log was cut (shackle-run killed?); " \
	"use --live to accept a running session"

/* Stable phrase, e.g. "modified field", "torn last line". */
const char *shk_verify_class_name(shk_verify_class c);
/* Stable identifier, e.g. "modified_field", for --json. */
const char *shk_verify_class_id(shk_verify_class c);

#define SHK_VERIFY_MAX_FINDINGS 8

typedef struct shk_verify_finding {
	shk_verify_class cls;
	char file[256];
	uint64_t line;       /* 1-based; 0 when the finding is about a whole file */
	int64_t seq;         /* -1 when unknown */
	char detail[256];
} shk_verify_finding;

typedef struct shk_verify_options {
	/* Accept a session without session_end whose last entry is a valid
	 * checkpoint (a live ledger). Unsigned entries still fail. */
	bool live;
} shk_verify_options;

typedef struct shk_verify_report {
	shk_verify_class result;    /* class of findings[0], or OK */
	size_t nfindings;
	shk_verify_finding findings[SHK_VERIFY_MAX_FINDINGS];
	uint64_t entries;           /* complete lines read */
	uint64_t chained;           /* entries whose hash and link checked out */
	uint64_t signed_entries;    /* of those, covered by a valid checkpoint */
	uint64_t checkpoints;       /* valid signatures */
	uint64_t sessions;
	uint64_t files;
	char key_fingerprint[SHK_KEY_FINGERPRINT_LEN + 1];
	char head[65];              /* hash of the last signed entry */
} shk_verify_report;

/*
 * Verify files in order (a rotated chain, or continued sessions). Returns 0
 * when it could run (the verdict is in ret->result) or -ENOMEM/-EINVAL.
 */
int shk_verify_files(const char *const *paths, size_t npaths,
                     const uint8_t pk[SHK_ED25519_PUBLIC_LEN],
                     const shk_verify_options *opts, shk_verify_report *ret);

/* ---- several hosts' logs of shared scopes ------------------------------ */

/*
 * The logs of every session of one or more shared scopes (docs/shared-state.md),
 * each already verified: checks that the spend they record on each scope adds
 * up (docs/audit.md, "Shared scopes" says exactly what is proven and what is
 * not). Findings name the file, line and field.
 */
#define SHK_VERIFY_SHARED_MAX_SCOPES 16

typedef struct shk_verify_shared_scope {
	char id[160];                /* "org/acme" */
	char key[48];                /* "shackle:{...}" */
	bool budget, breaker;        /* seen as a shared budget, breaker */
	uint64_t sessions;           /* sessions that recorded it */
	uint64_t reads;              /* answers of Redis to its budget recorded */
	uint64_t ops;                /* operations that moved its totals, all chained */
	uint64_t granted;            /* reservations granted */
	uint64_t settled;            /* settled by a source's report (post_exec, or retried) */
	uint64_t left;               /* reports a session's end left to the lease (not settled) */
	uint64_t released;           /* given back at once (a call not allowed) */
	uint64_t expired;            /* charged at their estimate by a sweep */
	uint64_t open;               /* still reserved after the last operation */
	uint64_t epochs;             /* distinct breaker epochs recorded */
	int64_t limit_uusd;          /* the largest limit a reservation was judged against */
	int64_t spent_uusd, reserved_uusd; /* after the last operation */
} shk_verify_shared_scope;

typedef struct shk_verify_shared_report {
	bool ok;
	char file[256];              /* !ok: where, and what */
	uint64_t line;
	char field[64];
	char detail[400];
	uint64_t entries, sessions;
	size_t nscopes;
	shk_verify_shared_scope scopes[SHK_VERIFY_SHARED_MAX_SCOPES];
} shk_verify_shared_report;

/* 0 when it could run (the verdict in ret->ok), -ENOMEM, or a file's -errno
 * (ret->file names it). */
int shk_verify_shared(const char *const *paths, size_t npaths, shk_verify_shared_report *ret);

/* ---- entries (shared by verify, show, replay) -------------------------- */

/* genesis = SHA-256("shackle-ledger-v1" NUL session_id) */
void shk_ledger_genesis(const char *session_id, size_t len, uint8_t ret[32]);

/*
 * SHA-256 of the canonical form of an entry object without its `hash` and
 * `sig` members. -EINVAL if it is not a canonicalisable object.
 */
int shk_ledger_entry_hash(const shk_val *entry, uint8_t ret[32]);

/* Read a ledger file line by line. Calls fn for every complete line (with
 * the trailing newline stripped); a last line without newline is passed
 * with torn = true. Returns 0, fn's negative result, or -errno. */
typedef int (*shk_ledger_line_fn)(void *ctx, uint64_t lineno, const char *line,
                                  size_t len, bool torn);
int shk_ledger_read_lines(const char *path, shk_ledger_line_fn fn, void *ctx);

/* ---- replay ------------------------------------------------------------ */

/*
 * Re-run the session over a log: from each session_start's policy document
 * (loaded with shk_policy_load_buffer, its digest checked against
 * policy_digest) and session_config, every decision entry is re-evaluated
 * with shk_session_evaluate() and committed with shk_session_commit() - the
 * code the supervisor runs - and post_exec and hitl entries are applied with
 * shk_session_post_exec(), shk_session_pending_set() and shk_session_reset().
 * The first entry whose logged verdict, reason, layer or budget differs from
 * the recomputed one is reported. Replay does not check hashes or
 * signatures: verify first (the CLI does when given --pubkey). The static
 * policy action is taken from the log (`policy_action`), never re-matched.
 * A decision with redacted params is re-run from the logged params_hash,
 * params_status and view.error_signal (shk_toolcall_prepare_logged) and
 * counted in `redacted`; one whose logged decide() answer depends on values
 * the log hid (Rule 9) stops replay as SHK_REPLAY_UNREPLAYABLE.
 */
typedef enum shk_replay_result {
	SHK_REPLAY_OK = 0,
	SHK_REPLAY_DIVERGED,       /* a recomputed value differs from the log */
	SHK_REPLAY_UNREPLAYABLE,   /* the log lacks an input (no policy; Rule 9 on redacted params) */
	SHK_REPLAY_MALFORMED,      /* an entry replay cannot read */
} shk_replay_result;

typedef struct shk_replay_report {
	shk_replay_result result;
	char file[256];
	uint64_t line;
	int64_t seq;
	char field[32];            /* verdict, reason, layer, budget.before, ... */
	char logged[160];
	char recomputed[160];
	char detail[256];
	uint64_t sessions, decisions, post_execs, hitl_events, breaker_trips;
	uint64_t refusals;          /* refusal entries: counted, nothing to re-derive */
	/* Decisions whose error signal came from the source's reading of the
	 * call's last result (inputs.result_error_signal), not from params. */
	uint64_t result_signals;
	/* Decisions with redacted params, re-run from their logged params_hash
	 * and params_status (not recomputable: the real params are not in the
	 * log); of those, how many took their error signal from the log. */
	uint64_t redacted, signals_from_log;
	/* Decisions re-run from what they recorded of a shared scope ("shared"),
	 * without Redis. */
	uint64_t shared;
	/* Execs linked to the proposal they carry out (inputs.proposal), each
	 * derived again from the exec's argv; of those, how many were taken
	 * from the log (redacted params: the commands are not in it). */
	uint64_t links, links_from_log;
} shk_replay_report;

const char *shk_replay_result_name(shk_replay_result r);

/* 0 with the result in ret, or a negative errno (unreadable file, ENOMEM). */
int shk_replay_files(const char *const *paths, size_t npaths, shk_replay_report *ret);

/* ---- evidence bundle ---------------------------------------------------- */

/*
 * A bundle is a directory (or a ustar archive of one) holding
 *   manifest.json   format, file list with SHA-256 of each, key fingerprint
 *   logs/NNN-NAME   the ledger files, in chain order
 *   key.pub         the public key the logs were verified with
 *   policy.json     the policy document of the first session (if logged)
 *   report.json     the verification report at export time
 * The bundle's own key is a convenience, not a trust anchor: compare its
 * fingerprint with one obtained out of band, or verify with --pubkey.
 */
#define SHK_BUNDLE_FORMAT "shackle-evidence-v1"
#define SHK_BUNDLE_MAX_LOGS 1000

typedef struct shk_bundle {
	char dir[3800];          /* the bundle directory (a temporary one for a tar) */
	bool temp;               /* dir is a temporary extraction, removed by close */
	size_t nlogs;
	char *logs[SHK_BUNDLE_MAX_LOGS];
	char pubkey[4200];       /* path of key.pub */
	char policy[4200];       /* path of policy.json, "" if none */
	long digest_mismatch;    /* index of the first file whose SHA-256 differs from
	                          * the manifest (logs first, then key, policy, report), or -1 */
	char mismatch_name[256];
} shk_bundle;

/*
 * Create a bundle at out: a new directory, or a ustar file if out ends in
 * ".tar". Refuses to overwrite (-EEXIST). report is the JSON verification
 * report text; policy may be NULL. err receives a message on failure.
 */
int shk_bundle_export(const char *out, const char *const *logs, size_t nlogs,
                      const char *pubkey_path, const shk_val *policy,
                      const char *report, size_t report_len, char *err, size_t errlen);
/* Open a bundle directory or tar file for verification. */
int shk_bundle_open(const char *path, shk_bundle *ret, char *err, size_t errlen);
void shk_bundle_close(shk_bundle *b);

#ifdef __cplusplus
}
#endif
#endif
