/* SPDX-License-Identifier: MIT */
/*
 * Positions of values inside a JSON text, for error messages about the
 * meaning of a value (jansson keeps no positions per node). Only used on the
 * error path: it re-scans the text, which jansson has already accepted.
 */
#ifndef SHACKLE_CORE_POLICY_POS_H
#define SHACKLE_CORE_POLICY_POS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SHK_JPATH_MAX 8

/* One step of a path: an object member (key != NULL) or an array index. */
struct shk_jseg {
	const char *key;
	size_t index;
};

struct shk_jpath {
	struct shk_jseg seg[SHK_JPATH_MAX];
	size_t n;
};

/*
 * Find the value at path (or, with at_key, the member name of its last
 * segment, which must be a key). Lines and columns are 1-based; columns count
 * Unicode code points as jansson does. Returns 0 or -ENOENT (then the
 * position of the deepest value found along the path is returned).
 */
int shk_json_locate(const char *text, size_t len, const struct shk_jpath *path, bool at_key,
                    int *ret_line, int *ret_column);

/*
 * A jansson load error of text, said in terms of the text: a NUL byte where
 * jansson stopped ("the file contains a NUL byte" at its line:column),
 * invalid UTF-8 (at the byte itself; jansson gives the column before it), a
 * duplicate key with the path of the key ("rules[2].name: duplicate key
 * \"name\"", at the key), a \u0000 where the caller refuses it (jansson's
 * text names its flag). Anything else keeps jansson's text. Lines and
 * columns are 1-based.
 */
void shk_json_explain_error(const char *text, size_t len, const json_error_t *je, int *ret_line,
                            int *ret_column, char *msg, size_t msglen);

#endif
