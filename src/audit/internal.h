/* SPDX-License-Identifier: MIT */
/* Private helpers shared by the audit sources. Not installed. */
#ifndef SHACKLE_AUDIT_INTERNAL_H
#define SHACKLE_AUDIT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include <shackle/audit.h>
#include <shackle/json.h>

#define SHK_LEDGER_DOMAIN "shackle-ledger-v1"
#define SHK_CHECKPOINT_DOMAIN "shackle-ledger-v1/checkpoint"

#include "core/sha256.h"

int shk_audit_sodium_init(void);
/* fsync the directory holding path: a new file's name is durable too. */
int shk_audit_fsync_dir(const char *path);
void shk_audit_hex(const uint8_t *bytes, size_t n, char *out);
/* 64 lower-case hex digits into 32 bytes. */
bool shk_audit_unhex32(const char *s, size_t len, uint8_t ret[32]);
int shk_key_dup(const shk_key *key, shk_key **ret_key);
int shk_key_sign(const shk_key *key, const uint8_t *msg, size_t len, uint8_t ret_sig[64]);
/* The message a checkpoint signs: domain NUL hash. */
size_t shk_checkpoint_message(const uint8_t hash[32], uint8_t out[64]);

/* A growable byte buffer; memory is kept between uses. */
typedef struct shk_buf {
	char *p;
	size_t len, cap;
} shk_buf;

int shk_buf_grow(shk_buf *b, const char *s, size_t n);
/* Room for n more bytes and a NUL. */
int shk_buf_reserve(shk_buf *b, size_t n);
/* Insert n bytes at off, moving the tail. */
int shk_buf_insert(shk_buf *b, size_t off, const char *s, size_t n);

static inline int shk_buf_put(shk_buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap)
		return shk_buf_grow(b, s, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
	return 0;
}
void shk_buf_free(shk_buf *b);

/*
 * Canonical object builder: members are rendered as they are added and
 * emitted sorted by key, so the result equals shk_canon_write's output for
 * the same object. Keys must be ASCII literals needing no escapes. Errors are
 * sticky and reported by shk_cob_emit.
 */
#define SHK_COB_MAX 40
typedef struct shk_cob {
	shk_buf vals;
	struct {
		const char *key;
		size_t off, len;
	} m[SHK_COB_MAX];
	size_t n;
	int err;
	/* Sorted order of the last emit, reused while the same key literals
	 * are added in the same sequence (entries of one kind). */
	const char *cached_keys[SHK_COB_MAX];
	size_t cached_order[SHK_COB_MAX];
	size_t cached_n;
} shk_cob;

void shk_cob_reset(shk_cob *c);
void shk_cob_free(shk_cob *c);
void shk_cob_str(shk_cob *c, const char *key, const char *s); /* NULL: null */
void shk_cob_strn(shk_cob *c, const char *key, const char *s, size_t len);
void shk_cob_int(shk_cob *c, const char *key, int64_t v);
void shk_cob_uint(shk_cob *c, const char *key, uint64_t v);
void shk_cob_real(shk_cob *c, const char *key, double v);
void shk_cob_bool(shk_cob *c, const char *key, bool v);
void shk_cob_null(shk_cob *c, const char *key);
void shk_cob_raw(shk_cob *c, const char *key, const char *json, size_t len);
void shk_cob_val(shk_cob *c, const char *key, const shk_val *v); /* NULL: null */
/*
 * Emit the object to out (appended). If ret_hole is not NULL, it receives
 * the offset at which a member with key `hole` (absent from c) would start,
 * or SIZE_MAX when it would be the last member.
 */
int shk_cob_emit(shk_cob *c, shk_buf *out, const char *hole, size_t *ret_hole);

/* Python repr() of a finite double, the bytes shk_canon_format_real writes,
 * without printf for the 16/17-digit values budgets are made of. Returns the
 * length, or -EINVAL for NaN/Infinity. */
#define SHK_AUDIT_REAL_MAX 40
/* The same, remembering a few recent values (budgets repeat: this entry's
 * "before" is the last one's "after"). */
int shk_audit_real_cached(double d, char out[SHK_AUDIT_REAL_MAX]);

/* Decimal digits of v, NUL-terminated, at the end of t; returns their start. */
char *shk_u64_digits(uint64_t v, char t[24]);

/* Canonical JSON string literal of s into b; -EILSEQ if not valid UTF-8. */
int shk_json_quote(shk_buf *b, const char *s, size_t len);
/* The same, or {"invalid_utf8_hex":"..."} for bytes that are not UTF-8. */
int shk_json_quote_or_hex(shk_buf *b, const char *s, size_t len);

/* Where the entry being written sits in the chain. */
typedef struct shk_entry_pos {
	uint64_t seq;
	const char *prev_hex;     /* 64 hex digits */
	const char *session_json; /* the session id as a JSON string literal */
	size_t session_json_len;
} shk_entry_pos;

/* `,"hash":"<64 hex>"`: the member and the comma that the hash input omits. */
#define SHK_HASH_MEMBER_LEN 74
#define SHK_HASH_MEMBER_HEX 9 /* offset of the hex digits in it */

/*
 * Render a decision entry into line (replacing its content, no newline),
 * with a placeholder hash member of SHK_HASH_MEMBER_LEN bytes at
 * *ret_hash_off. -EINVAL for params that cannot be written, -ERANGE/-EDOM
 * for numbers JSON cannot hold, -ENOMEM.
 */
int shk_render_decision(shk_buf *line, const shk_entry_pos *pos, const shk_audit_decision *d,
                        size_t *ret_hash_off);

/*
 * syncer.c: the checkpoint fdatasync on a thread of its own. request asks
 * for a sync of fd and returns at once; drain waits for every sync asked
 * for. Both, and error, return the first failed sync (-errno) or 0.
 * set_fd drains, then syncs another descriptor from then on. start with
 * nfirst descriptors: fsynced and closed by the thread before any sync of
 * fd (its first job, pending from the start); on failure they stay the
 * caller's.
 */
#define SHK_SYNC_FIRST_MAX 4
struct shk_syncer;
int shk_syncer_start(int fd, const int *first, size_t nfirst, struct shk_syncer **ret);
/* fsync then close each (a directory that cannot be synced, EINVAL, is
 * not an error); the first failure, -errno, or 0; all are closed */
int shk_sync_close_all(const int *fds, size_t n);
int shk_syncer_request(struct shk_syncer *s);
int shk_syncer_drain(struct shk_syncer *s);
int shk_syncer_error(struct shk_syncer *s);
/* A sync asked for is still running (the writer's thread only). */
bool shk_syncer_busy(struct shk_syncer *s);
int shk_syncer_set_fd(struct shk_syncer *s, int fd);
void shk_syncer_stop(struct shk_syncer *s);

#endif
