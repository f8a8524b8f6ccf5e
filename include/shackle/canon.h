/* SPDX-License-Identifier: MIT */
/*
 * shackle/canon.h — canonical JSON and SHA-256 digests.
 *
 * The canonical form is byte-identical to Python's
 *   json.dumps(v, sort_keys=True, separators=(",",":"), ensure_ascii=False,
 *              allow_nan=False).encode("utf-8")
 * which is what SHACKLE SP/1.0 hashes: integers as integers, reals as Python's
 * repr (shortest round-trip digits: 1.0, 0.1, 1e-05, 1e+16, -0.0, 5e-324),
 * strings with \" \\ \b \f \n \r \t escaped, other control characters as
 * \u00XX (lower-case hex), everything else raw UTF-8, '/' not escaped.
 *
 * All functions here are pure: no I/O, no clock, and no heap allocation except
 * shk_canon_dump, which returns a malloc'd buffer by design.
 */
#ifndef SHACKLE_CANON_H
#define SHACKLE_CANON_H

#include <stddef.h>
#include <stdint.h>

#include <shackle/json.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Nesting limit of SP/1.0.1 for params: a value at depth > 64 (params itself
 * is depth 0) makes params non-canonicalizable. */
#define SHK_CANON_MAX_DEPTH 64
/* Use as max_depth to check without the SP/1.0.1 limit (vector hashing). The
 * walk is still bounded at depth 4096 (see shackle/json.h), beyond which a
 * value is SHK_CANON_TOO_DEEP. */
#define SHK_CANON_NO_DEPTH_LIMIT (-1)

#define SHK_SHA256_LEN 32
#define SHK_SHA256_HEX_LEN 64

typedef enum shk_canon_status {
	SHK_CANON_OK = 0,
	SHK_CANON_NOT_OBJECT,     /* params is not an object (params check only) */
	SHK_CANON_NON_STRING_KEY, /* an object key that is not a string */
	SHK_CANON_NON_FINITE,     /* NaN or ±Infinity */
	SHK_CANON_FOREIGN,        /* a value JSON cannot represent */
	SHK_CANON_BAD_UTF8,       /* a string (or key) that is not valid UTF-8 */
	SHK_CANON_TOO_DEEP,       /* nesting beyond the limit */
	SHK_CANON_MARKER,         /* the fixture marker {"__noncanonical__": true} */
} shk_canon_status;

/* Stable lower-case name of a status ("ok", "not_an_object", ...). */
const char *shk_canon_status_name(shk_canon_status s);

/* Can v be canonicalised? max_depth as above. NULL is SHK_CANON_FOREIGN. */
shk_canon_status shk_canon_check(const shk_val *v, int max_depth);

/*
 * The SP/1.0.1 Rule 1 test for call params: an object, structurally
 * canonicalisable within SHK_CANON_MAX_DEPTH, and not carrying the fixture
 * marker "__noncanonical__": true at its top level.
 */
shk_canon_status shk_canon_check_params(const shk_val *params);

/* Receives canonical bytes in order; returns 0 or a negative errno to stop. */
typedef int (*shk_canon_sink)(void *ctx, const char *bytes, size_t len);

/*
 * Stream the canonical form of v to sink. Returns 0, -EINVAL if v is not
 * canonicalisable (no depth limit), or the sink's error.
 */
int shk_canon_write(const shk_val *v, shk_canon_sink sink, void *ctx);

/* Canonical form in a malloc'd, NUL-terminated buffer (free() it). */
int shk_canon_dump(const shk_val *v, char **ret_buf, size_t *ret_len);

/* SHA-256 of the canonical form. -EINVAL if not canonicalisable. */
int shk_canon_sha256(const shk_val *v, uint8_t ret_digest[SHK_SHA256_LEN]);

/* Lower-case hex of n bytes into out, which must hold 2n+1 bytes. */
void shk_hex(const uint8_t *bytes, size_t n, char *out);

/* Python repr() of a finite double into out (at least 32 bytes), NUL-
 * terminated. Returns the length written, or -EINVAL for NaN/Infinity, a NULL
 * out or outlen < 32. */
int shk_canon_format_real(double d, char *out, size_t outlen);

#ifdef __cplusplus
}
#endif
#endif
