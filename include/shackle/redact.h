/* SPDX-License-Identifier: MIT */
/*
 * shackle/redact.h — hiding secrets of tool-call parameters from the audit
 * log and the operator channel (the policy's "redact" list).
 *
 * A key of the list matches, ASCII case-insensitively:
 *   - an object member of that name at any depth: its value is hidden (a
 *     string as far as a whole value reaches, below; any other type whole);
 *   - inside any string (an argv element, a shell command line, a URL, a
 *     JSON body, a header): `KEY=V`, `-KEY=V`, `--KEY=V`, `KEY: V`,
 *     `"KEY": V`, and inside a longer string `--KEY V`, where KEY stands on a
 *     word boundary (the characters around it are not letters, digits, `_`,
 *     `-` or `.`; a `_` before it counts as a boundary for `KEY=V` and
 *     `KEY: V`, so "password" hides DB_PASSWORD=V too). V is hidden;
 *   - in an array, an element that is exactly `-KEY` or `--KEY`: the element
 *     after it is hidden as a whole value (`curl --token SECRET`).
 * How far V reaches (docs/policy.md, "redact"): a quoted value to its
 * closing quote, an object or array after a quoted key to its closing
 * bracket, a header value (`KEY: V`) to the end of the line or of the
 * quotes around it, a whole value to its end, any other value to the next
 * blank, shell metacharacter (; & | < > ( ) `) or closing quote (and `,`
 * `}` `]` after a quoted key). A quote without its closing partner hides
 * the rest. In every case a hidden span ends before the first `;` `&` `|`
 * `<` `>` backtick, `$(`, newline or carriage return, quoted, escaped or
 * not: text that could make a shell run or redirect something is never
 * hidden (the rest of such a secret stays visible instead).
 *
 * A hidden span becomes "[REDACTED:N]", N its length in bytes (a whole
 * value of another type "[REDACTED]"), so that a reader sees how much was
 * hidden. N is written in decimal with a `_` between two digits where the
 * digits would otherwise spell an error status (5_00 is 500): the marker
 * contains no error-signal phrase (shackle/layers.h) and none can form
 * across its brackets, so redaction can remove such a phrase but never
 * create one. Redaction is best effort for honest command lines; it is no
 * defence against an agent that writes a secret in another form.
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
#define SHK_REDACT_MARKER_MAX 48 /* "[REDACTED:N]" with separators, no NUL */

/* The marker for n hidden bytes into out (SHK_REDACT_MARKER_MAX bytes, not
 * NUL-terminated); its length. */
size_t shk_redact_marker(size_t n, char *out);

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
