/* SPDX-License-Identifier: MIT */
/*
 * shackle/json.h — the immutable JSON value model of libshackle's pure core.
 *
 * Values live in a document (shk_doc), an arena that owns every value built in
 * it and frees them together. Once a value has been handed to decide() it is
 * never modified, so reading it needs no locks and no allocation.
 *
 * The model is deliberately a little wider than JSON: it can hold NaN and
 * ±Infinity reals, object keys that are not strings, strings that are not
 * valid UTF-8 and "foreign" values (something a host language could put in a
 * params object that JSON cannot represent). Those exist so that the
 * canonicaliser (shackle/canon.h) and decide() Rule 1 can reject them
 * *structurally*, as SHACKLE SP/1.0 §3.2 requires; the JSON parser never
 * produces them.
 *
 * Object members are kept sorted by key (string keys in UTF-8 byte order,
 * which equals code-point order; non-string keys after all string keys), so
 * canonical serialisation needs no scratch memory. Duplicate string keys are
 * refused.
 */
#ifndef SHACKLE_JSON_H
#define SHACKLE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shk_doc shk_doc;
typedef struct shk_val shk_val;

typedef enum shk_type {
	SHK_NULL = 0,
	SHK_BOOL,
	SHK_INT,     /* int64_t */
	SHK_REAL,    /* double, may be non-finite (then never canonical) */
	SHK_STRING,  /* bytes with explicit length, may contain NUL */
	SHK_ARRAY,
	SHK_OBJECT,
	SHK_FOREIGN, /* a value JSON cannot represent; never canonical */
} shk_type;

/* Where and why parsing failed. line and column are 1-based (0 if unknown);
 * as jansson counts them, a column counts characters (code points), not bytes,
 * and 0 means "before the first character of the line" (e.g. a file that ends
 * right after a newline). */
typedef struct shk_parse_error {
	char source[256]; /* file name, or the name passed to shk_json_parse */
	int line;
	int column;
	char text[200];
} shk_parse_error;

/* Documents. shk_doc_new returns 0 or -ENOMEM. shk_doc_free(NULL) is a no-op. */
int shk_doc_new(shk_doc **ret_doc);
void shk_doc_free(shk_doc *doc);
/* Forget every value of doc (each pointer into it is dangling from here on)
 * and keep one chunk of its memory for the next ones: a document reused per
 * message allocates nothing while its messages stay small. NULL: no-op. */
void shk_doc_reset(shk_doc *doc);

/*
 * Constructors. Each returns a value owned by doc, or NULL when out of memory.
 * shk_string copies len bytes and does not validate them.
 */
shk_val *shk_null(shk_doc *doc);
shk_val *shk_bool(shk_doc *doc, bool b);
shk_val *shk_int(shk_doc *doc, int64_t i);
shk_val *shk_real(shk_doc *doc, double d);
shk_val *shk_string(shk_doc *doc, const char *s, size_t len);
shk_val *shk_cstring(shk_doc *doc, const char *s);
shk_val *shk_array(shk_doc *doc);
shk_val *shk_object(shk_doc *doc);
shk_val *shk_foreign(shk_doc *doc);

/*
 * Building containers. Values must belong to the same document as the
 * container. Returns 0, -ENOMEM, -EINVAL (wrong type, NULL) or -EEXIST
 * (duplicate string key). shk_object_set accepts a key of any type so that
 * tests can model non-string keys.
 */
int shk_array_append(shk_val *array, shk_val *item);
int shk_object_set(shk_val *object, shk_val *key, shk_val *value);
int shk_object_set_str(shk_val *object, const char *key, shk_val *value);
/* shk_object_set_str for a value straight from a constructor: a NULL value
 * is the constructor's -ENOMEM, not an -EINVAL, so that a chain of members
 * built inline reports what went wrong. */
int shk_object_put(shk_val *object, const char *key, shk_val *value);

/* Accessors. All are total: on a wrong type they return 0 / NULL / false.
 * shk_val_type(NULL) is SHK_FOREIGN (not SHK_NULL): a missing value must never
 * pass for JSON null. */
shk_type shk_val_type(const shk_val *v);
bool shk_val_bool(const shk_val *v);
int64_t shk_val_int(const shk_val *v);
double shk_val_real(const shk_val *v);
/* Numeric value of a BOOL, INT or REAL as a double (Python's float(x)). */
bool shk_val_number(const shk_val *v, double *ret_d);
const char *shk_val_str(const shk_val *v, size_t *ret_len);
/* Number of items of an array or members of an object; 0 otherwise. */
size_t shk_val_len(const shk_val *v);
const shk_val *shk_array_at(const shk_val *array, size_t i);
/* Members in sorted key order. */
const shk_val *shk_object_key_at(const shk_val *object, size_t i);
const shk_val *shk_object_value_at(const shk_val *object, size_t i);
/* Member with string key `key` (NUL-terminated), or NULL. Binary search. */
const shk_val *shk_object_get(const shk_val *object, const char *key);
const shk_val *shk_object_getn(const shk_val *object, const char *key, size_t keylen);

/* String value equals the NUL-terminated s. */
bool shk_val_str_eq(const shk_val *v, const char *s);

/*
 * Python `==` on the JSON values Python would have built: bool, int and float
 * compare numerically (True == 1 == 1.0), strings by bytes, arrays and objects
 * deeply; NaN is unequal to everything; FOREIGN values are unequal to
 * everything, themselves included. Total and allocation-free.
 */
bool shk_val_equal(const shk_val *a, const shk_val *b);

/*
 * Walks over values (equality, copy, canonical check/write) are bounded to a
 * nesting depth of 4096 so the stack stays bounded. Parsed documents never
 * exceed it (jansson stops at 2048); values built through the API beyond it,
 * or made cyclic (shk_array_append(a, a) is not prevented), compare unequal,
 * do not copy, and are not canonicalisable (SHK_CANON_TOO_DEEP).
 */

/* Deep copy of v into doc (which may be v's own document). NULL on ENOMEM. */
shk_val *shk_val_copy(shk_doc *doc, const shk_val *v);

/*
 * Parsing (jansson underneath): RFC 8259 text, any value at the top level,
 * "\u0000" allowed inside string values, duplicate keys refused, integers
 * outside int64 and reals beyond the double range refused (Python would accept
 * both; neither occurs in SP/1.0 inputs). jansson also refuses "\u0000" inside
 * object keys and lone surrogate escapes ("\ud800"), which Python's json.loads
 * would accept (the latter could not be canonicalised anyway). On failure returns -EINVAL (or -ENOMEM/-errno for files) and
 * fills *err with source, line, column and a message.
 */
int shk_json_parse(shk_doc *doc, const char *text, size_t len, const char *source,
                   shk_val **ret_val, shk_parse_error *err);
int shk_json_load_file(shk_doc *doc, const char *path, shk_val **ret_val, shk_parse_error *err);

#ifdef __cplusplus
}
#endif
#endif
