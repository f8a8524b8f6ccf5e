/* SPDX-License-Identifier: MIT */
/*
 * shackle/redact.h — hiding secrets of tool-call parameters from the audit
 * log and the operator channel (the policy's "redact" list).
 *
 * A key of the list matches, ASCII case-insensitively:
 *   - an object member of that name at any depth: its whole value (of any
 *     type) becomes SHK_REDACT_MARKER;
 *   - inside any string (an argv element, a shell command line, a URL, a
 *     JSON body, a header): `KEY=V`, `-KEY=V`, `--KEY=V`, `KEY: V`,
 *     `"KEY": V`, and inside a longer string `--KEY V`, where KEY stands on a
 *     word boundary (the characters around it are not letters, digits, `_`,
 *     `-` or `.`). V becomes the marker;
 *   - in an array, an element that is exactly `-KEY` or `--KEY`: the element
 *     after it becomes the marker (`curl --token SECRET`).
 * How far V reaches (docs/policy.md, "redact"): to the end of the string
 * when KEY starts it (a program receives `--password=a b&c` as one
 * argument); otherwise a quoted value to its closing quote, an object or
 * array after a quoted key to its closing bracket, a header value
 * (`KEY: V`) to the end of the line or of the quotes around it, any other
 * value to the next blank, shell metacharacter (; & | < > ( ) `) or closing
 * quote (and `,` `}` `]` after a quoted key). A quote without its closing
 * partner hides the rest.
 *
 * The marker contains no letter, digit, blank or quote next to kept text,
 * so redaction can remove an error-signal phrase (shackle/layers.h) but
 * never create one. Redaction is best effort for honest command lines; it
 * is no defence against an agent that writes a secret in another form.
 *
 * All functions are pure. The scans allocate nothing; shk_redact_copy
 * allocates the copy in a document and one temporary buffer per string it
 * rewrites, i.e. only for calls that carry something to hide.
 */
#ifndef SHACKLE_REDACT_H
#define SHACKLE_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#include <shackle/json.h>
#include <shackle/policy.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHK_REDACT_MARKER "[REDACTED]"

/* A list of keys: n NUL-terminated, non-empty strings. */
typedef struct shk_redact_keys {
	const char *const *keys;
	size_t n;
} shk_redact_keys;

/* Scanning one string: the iterator keeps the quoting state, so a string is
 * read once however many secrets it holds (linear in len x keys). */
typedef struct shk_redact_iter {
	const shk_redact_keys *keys;
	const char *s;
	size_t len, pos;
	char quote;       /* '\'', '"' or 0: the quotes the scan is inside */
	size_t quote_at;  /* where that quote opened */
	unsigned char first[32]; /* bit set: bytes a key (or "-") can start with */
} shk_redact_iter;

void shk_redact_iter_init(shk_redact_iter *it, const shk_redact_keys *keys, const char *s,
                          size_t len);
/* The next secret as s[*ret_start, *ret_end) (never empty); false at the end. */
bool shk_redact_next(shk_redact_iter *it, size_t *ret_start, size_t *ret_end);

/* Is s exactly "-KEY" or "--KEY" for a key of the list? */
bool shk_redact_is_option(const shk_redact_keys *keys, const char *s, size_t len);
/* Is name (an object key) one of the list? */
bool shk_redact_is_key(const shk_redact_keys *keys, const char *name, size_t len);

/* Would shk_redact_copy change anything in v? */
bool shk_redact_needed(const shk_redact_keys *keys, const shk_val *v);

/*
 * A copy of v in doc with every secret replaced by the marker. Values nested
 * deeper than SHK_CANON_MAX_DEPTH are replaced whole. 0, -EINVAL (NULL
 * arguments) or -ENOMEM.
 */
int shk_redact_copy(shk_doc *doc, const shk_redact_keys *keys, const shk_val *v, shk_val **ret);

/*
 * The policy's list applied to params: *ret_redacted is the redacted copy
 * (in doc), or NULL when the policy redacts nothing in them. 0 or -ENOMEM.
 */
int shk_policy_redact_params(const shk_policy *policy, shk_doc *doc, const shk_val *params,
                             shk_val **ret_redacted);

/*
 * The same for an audit entry (shk_audit_decision.params_redacted): NULL
 * also when params cannot be written as JSON at all (invalid UTF-8, NaN,
 * ...), because the entry then logs them as null — nothing of them, and
 * no redacted copy that could not be written either.
 */
int shk_policy_redact_logged(const shk_policy *policy, shk_doc *doc, const shk_val *params,
                             shk_val **ret_redacted);

#ifdef __cplusplus
}
#endif
#endif
