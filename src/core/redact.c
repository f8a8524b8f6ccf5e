/* SPDX-License-Identifier: MIT */
/*
 * The policy's "redact" list applied to tool-call parameters (the rules are
 * in shackle/redact.h). Strings are scanned once, left to right, with a
 * shell-like quoting state (single quotes, double quotes with backslash
 * escapes), because secrets reach argv inside command lines: the quotes a
 * key stands in tell where its value ends.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <shackle/canon.h>
#include <shackle/layers.h>
#include <shackle/redact.h>

#define MARKER_LEN (sizeof(SHK_REDACT_MARKER) - 1)

static unsigned char lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* Characters of a name: a key stands where none of them touches it. */
static bool name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

static bool blank(unsigned char c)
{
	return c == ' ' || c == '\t';
}

static bool space(unsigned char c)
{
	return blank(c) || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool quote_char(unsigned char c)
{
	return c == '"' || c == '\'';
}

static bool lower_eq(const char *s, const char *key, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (lower((unsigned char)s[i]) != lower((unsigned char)key[i]))
			return false;
	return true;
}

/* Length of the key s[at..] starts with, ending on a name boundary; 0: none. */
static size_t key_at(const shk_redact_keys *k, const char *s, size_t len, size_t at)
{
	unsigned char first;

	if (at >= len)
		return 0;
	first = lower((unsigned char)s[at]);
	for (size_t i = 0; i < k->n; i++) {
		size_t kl;

		/* most positions start no key: one comparison each */
		if (lower((unsigned char)k->keys[i][0]) != first)
			continue;
		kl = strlen(k->keys[i]);
		if (kl && kl <= len - at && lower_eq(s + at, k->keys[i], kl) &&
		    (at + kl == len || !name_char((unsigned char)s[at + kl])))
			return kl;
	}
	return 0;
}

static size_t dashes(const char *s, size_t len, size_t at)
{
	size_t d = 0;

	while (d < 2 && at + d < len && s[at + d] == '-')
		d++;
	return d;
}

bool shk_redact_is_key(const shk_redact_keys *k, const char *name, size_t len)
{
	return k && name && key_at(k, name, len, 0) == len && len > 0;
}

bool shk_redact_is_option(const shk_redact_keys *k, const char *s, size_t len)
{
	size_t d = s ? dashes(s, len, 0) : 0;

	return k && d > 0 && d < len && key_at(k, s, len, d) == len - d;
}

static void set_bit(unsigned char *set, unsigned char c)
{
	set[c >> 3] |= (unsigned char)(1u << (c & 7));
}

void shk_redact_iter_init(shk_redact_iter *it, const shk_redact_keys *keys, const char *s,
                          size_t len)
{
	*it = (shk_redact_iter){ .keys = keys, .s = s, .len = s ? len : 0 };
	set_bit(it->first, '-');
	for (size_t i = 0; keys && i < keys->n; i++) {
		unsigned char c = (unsigned char)keys->keys[i][0];

		set_bit(it->first, c);
		set_bit(it->first, lower(c));
		if (c >= 'a' && c <= 'z')
			set_bit(it->first, (unsigned char)(c - 32));
	}
}

/* One character through the quoting state; the next position. */
static size_t lex(shk_redact_iter *it, size_t p)
{
	char c = it->s[p];

	if (it->quote == '\'') {
		if (c == '\'')
			it->quote = 0;
		return p + 1;
	}
	if (c == '\\')
		return p + 2 < it->len ? p + 2 : it->len;
	if (it->quote == '"') {
		if (c == '"')
			it->quote = 0;
		return p + 1;
	}
	if (quote_char((unsigned char)c)) {
		it->quote = c;
		it->quote_at = p;
	}
	return p + 1;
}

/*
 * Where a hidden span ends whatever else holds: a character that lets a
 * shell run or redirect something (; & | < > ` $( ) or a line break. In any
 * quotes and escaped or not, because a string may be evaluated once more
 * (eval, sh -c inside sh -c, a script's "$1"): what could run stays
 * readable to the approver and in the log, at the price of showing the
 * part of a secret after such a character.
 */
static bool stop_at(const char *s, size_t len, size_t p)
{
	unsigned char c = (unsigned char)s[p];

	return c == ';' || c == '&' || c == '|' || c == '<' || c == '>' || c == '`' || c == '\n' ||
	       c == '\r' || (c == '$' && p + 1 < len && s[p + 1] == '(');
}

/* The first stop_at position from p (len: none). */
static size_t next_stop(const char *s, size_t len, size_t p)
{
	while (p < len && !stop_at(s, len, p))
		p++;
	return p;
}

/* Position of the quote q closing a quoted run that starts at p, of a
 * stop_at character before it, or len. */
static size_t closing(const char *s, size_t len, size_t p, char q)
{
	for (; p < len && s[p] != q; p++) {
		if (stop_at(s, len, p))
			return p;
		if (s[p] == '\\' && q == '"' && p + 1 < len && !stop_at(s, len, p + 1))
			p++;
	}
	return p < len ? p : len;
}

/* A character that ends an unquoted shell word: the shell itself splits
 * there, so a secret cannot contain it unquoted. */
static bool shell_meta(unsigned char c)
{
	return c == ';' || c == '&' || c == '|' || c == '<' || c == '>' || c == '(' || c == ')' ||
	       c == '`';
}

/* End of an unquoted value: a blank, a shell metacharacter (`&` ends a URL
 * parameter too), a stop_at character, the closing quote it stands in;
 * after a quoted key also `,` `}` `]`. Quotes inside it (outside any
 * quotes) are skipped as a whole, as a shell would join them. */
static size_t word_end(const char *s, size_t len, size_t p, char enc, bool qkey)
{
	for (; p < len; p++) {
		unsigned char c = (unsigned char)s[p];

		if (space(c) || shell_meta(c) || stop_at(s, len, p) || (enc && c == (unsigned char)enc) ||
		    (qkey && (c == ',' || c == '}' || c == ']')))
			return p;
		if (c == '\\' && enc != '\'') {
			if (p + 1 < len && stop_at(s, len, p + 1))
				return p + 1;
			p++;
		} else if (!enc && quote_char(c)) {
			size_t e = closing(s, len, p + 1, (char)c);

			if (e >= len || s[e] != (char)c)
				return e;
			p = e;
		}
	}
	return len;
}

/* A JSON object or array value: to its closing bracket (strings inside
 * skipped), a stop_at character, or the end of the string. */
static size_t bracket_end(const char *s, size_t len, size_t p)
{
	size_t depth = 0;

	for (; p < len; p++) {
		if (stop_at(s, len, p)) {
			return p;
		} else if (s[p] == '"') {
			p = closing(s, len, p + 1, '"');
			if (p >= len || s[p] != '"')
				return p;
		} else if (s[p] == '{' || s[p] == '[') {
			depth++;
		} else if ((s[p] == '}' || s[p] == ']') && --depth == 0) {
			return p + 1;
		}
	}
	return len;
}

/* A header's value runs to the end of the line or of the quotes around it
 * (or to a stop_at character). */
static size_t header_end(const char *s, size_t len, size_t p, char enc)
{
	for (; p < len; p++) {
		if (stop_at(s, len, p) || (enc && s[p] == enc))
			return p;
		if (s[p] == '\\' && enc == '"')
			p++;
	}
	return len;
}

struct match {
	size_t start, end, resume;
	char quote;       /* the quoting state to go on with at resume */
	size_t quote_at;
};

/* After the key ends at j: the separator, and where the value starts. */
static bool separator(const char *s, size_t len, size_t j, size_t d, bool qkey, char *ret_sep,
                      size_t *ret_v)
{
	if (qkey)
		while (j < len && blank((unsigned char)s[j]))
			j++;
	if (j < len && (s[j] == '=' || s[j] == ':')) {
		*ret_sep = s[j++];
		if (*ret_sep == ':' || qkey)
			while (j < len && blank((unsigned char)s[j]))
				j++;
	} else if (!qkey && d > 0 && j < len && blank((unsigned char)s[j])) {
		*ret_sep = ' '; /* "--key value" inside a longer string */
		while (j < len && blank((unsigned char)s[j]))
			j++;
	} else {
		return false;
	}
	*ret_v = j;
	return true;
}

/* Does the word go on after the quoted run that starts at v (closed, and
 * followed by what word_end would not stop at)? */
static bool word_goes_on(const char *s, size_t len, size_t v, char enc, bool qkey)
{
	size_t e = closing(s, len, v + 1, s[v]), n = e + 1;

	/* inside enclosing quotes word_end does not skip quoted runs: it
	 * would stop at the first blank of this value and show the rest */
	if (enc || e >= len || s[e] != s[v] || n >= len)
		return false;
	return word_end(s, len, n, enc, qkey) > n;
}

/* A quoted value: inside its quotes; a stop_at character inside them ends
 * it, and the scan goes on from there inside those quotes. */
static void quoted_value(const char *s, size_t len, size_t v, struct match *m)
{
	m->start = v + 1;
	m->end = closing(s, len, v + 1, s[v]);
	if (m->end < len && s[m->end] == s[v]) {
		m->resume = m->end + 1;
	} else {
		m->resume = m->end;
		m->quote = m->end < len ? s[v] : m->quote;
		m->quote_at = v;
	}
}

/* A key right after "://" is a URL's user info (https://token=x@host/...):
 * its value ends at the '@' before the host, or the destination an operator
 * must see is hidden with it. */
static void userinfo_end(const char *s, size_t i, size_t v, struct match *m)
{
	size_t at = 0;

	if (i < 3 || memcmp(s + i - 3, "://", 3) != 0)
		return;
	/* the LAST '@' before the path ends the user info (URL parsers take
	 * that one: "p@ss@host" is user info "p@ss"); a quote means the value
	 * is not a plain URL: hide it all */
	for (size_t p = v; p < m->end && s[p] != '/'; p++) {
		if (quote_char((unsigned char)s[p]))
			return;
		if (s[p] == '@')
			at = p;
	}
	if (at)
		m->end = m->resume = at;
}

/*
 * A key at i: its value as [start, end). after_ul: the key follows a `_`
 * (DB_PASSWORD=): only KEY=V and KEY: V count there, so that a longer
 * variable or header name that ends in a key is hidden too.
 */
static bool match_at(shk_redact_iter *it, size_t i, bool after_ul, struct match *m)
{
	const char *s = it->s;
	size_t len = it->len, d = dashes(s, len, i), kl = key_at(it->keys, s, len, i + d), j, v;
	char enc = it->quote, sep;
	bool qkey;

	if (!kl || (after_ul && d))
		return false;
	j = i + d + kl;
	/* "KEY" or, inside a double-quoted command line, \"KEY\" */
	qkey = d == 0 && i > 0 && quote_char((unsigned char)s[i - 1]) && j < len &&
	       (s[j] == s[i - 1] || (s[j] == '\\' && j + 1 < len && s[j + 1] == s[i - 1]));
	if (qkey) {
		/* the key's own quotes are not quotes around its value */
		if (enc == s[i - 1] && it->quote_at == i - 1)
			enc = 0;
		j += s[j] == '\\' ? 2 : 1;
	}
	if (!separator(s, len, j, d, qkey, &sep, &v) || (after_ul && sep == ' '))
		return false;
	m->quote = enc;
	m->quote_at = it->quote_at;
	m->start = m->end = m->resume = v;
	if (v >= len || (enc && s[v] == enc))
		return true; /* nothing to hide */
	if (qkey && (s[v] == '{' || s[v] == '['))
		m->end = m->resume = bracket_end(s, len, v);
	else if (quote_char((unsigned char)s[v]) && !word_goes_on(s, len, v, enc, qkey))
		quoted_value(s, len, v, m);
	else if (quote_char((unsigned char)s[v]))
		/* 'abc'"'"'def' is one word to a shell: hidden whole, quotes
		 * included, not only its first run */
		m->end = m->resume = word_end(s, len, v, enc, qkey);
	else if (sep == ':' && !qkey)
		m->end = m->resume = header_end(s, len, v, enc);
	else
		m->end = m->resume = word_end(s, len, v, enc, qkey);
	userinfo_end(s, i, v, m);
	return true;
}

bool shk_redact_next(shk_redact_iter *it, size_t *ret_start, size_t *ret_end)
{
	struct match m;

	if (!it->keys || !it->keys->n)
		return false;
	while (it->pos < it->len) {
		size_t i = it->pos;
		unsigned char c = (unsigned char)it->s[i], prev = i ? (unsigned char)it->s[i - 1] : 0;

		if ((it->first[c >> 3] & (1u << (c & 7))) && (i == 0 || !name_char(prev) || prev == '_') &&
		    match_at(it, i, i > 0 && prev == '_', &m)) {
			it->pos = m.resume > i ? m.resume : i + 1;
			it->quote = m.quote;
			it->quote_at = m.quote_at;
			if (m.end > m.start) {
				*ret_start = m.start;
				*ret_end = m.end;
				return true;
			}
			continue;
		}
		it->pos = lex(it, i);
	}
	return false;
}

/* ---- values ---------------------------------------------------------------- */

static bool is_option_val(const shk_redact_keys *k, const shk_val *v)
{
	size_t len;
	const char *s = shk_val_str(v, &len);

	return s && shk_redact_is_option(k, s, len);
}

/* How much of a value hidden whole (after "--KEY", or of a member named
 * KEY) is hidden: a string up to its first stop_at character; SIZE_MAX:
 * a value of another type, replaced whole. */
static size_t whole_span(const shk_val *v)
{
	size_t len;
	const char *s = shk_val_str(v, &len);

	return s ? next_stop(s, len, 0) : SIZE_MAX;
}

static bool needed(const shk_redact_keys *k, const shk_val *v, int depth)
{
	shk_redact_iter it;
	const char *s;
	size_t n, a, b;

	if (depth > SHK_CANON_MAX_DEPTH)
		return true;
	switch (shk_val_type(v)) {
	case SHK_STRING:
		s = shk_val_str(v, &n);
		shk_redact_iter_init(&it, k, s, n);
		return shk_redact_next(&it, &a, &b);
	case SHK_ARRAY:
		n = shk_val_len(v);
		for (size_t i = 0; i < n; i++)
			if ((i + 1 < n && is_option_val(k, shk_array_at(v, i)) &&
			     whole_span(shk_array_at(v, i + 1)) > 0) ||
			    needed(k, shk_array_at(v, i), depth + 1))
				return true;
		return false;
	case SHK_OBJECT:
		n = shk_val_len(v);
		for (size_t i = 0; i < n; i++) {
			s = shk_val_str(shk_object_key_at(v, i), &a);
			if ((s && shk_redact_is_key(k, s, a) && whole_span(shk_object_value_at(v, i)) > 0) ||
			    needed(k, shk_object_value_at(v, i), depth + 1))
				return true;
		}
		return false;
	default:
		return false;
	}
}

bool shk_redact_needed(const shk_redact_keys *k, const shk_val *v)
{
	return k && k->n && v && needed(k, v, 0);
}

size_t shk_redact_marker(size_t n, char *out)
{
	char digits[24];
	size_t nd = 0, k = MARKER_LEN - 1, run = 0;

	memcpy(out, SHK_REDACT_MARKER, MARKER_LEN - 1);
	out[k++] = ':';
	do {
		digits[nd++] = (char)('0' + n % 10);
		n /= 10;
	} while (n);
	while (nd--) {
		char tri[3] = { out[k - 2], out[k - 1], digits[nd] };

		/* 5_00: the digits never spell an HTTP error status */
		if (run >= 2 && shk_error_signal_in(tri, 3)) {
			out[k] = out[k - 1];
			out[k - 1] = '_';
			k++;
			run = 1;
		}
		out[k++] = digits[nd];
		run++;
	}
	out[k++] = ']';
	return k;
}

static shk_val *marker(shk_doc *doc)
{
	return shk_string(doc, SHK_REDACT_MARKER, MARKER_LEN);
}

/*
 * s with s[0, pre) and every secret the scan finds after it replaced by
 * markers that give their lengths. Two passes: out == NULL counts.
 */
static size_t rewrite(const shk_redact_keys *k, const char *s, size_t len, size_t pre, char *out)
{
	char mk[SHK_REDACT_MARKER_MAX];
	shk_redact_iter it;
	size_t a, b, at = pre, n = 0, ml;

	if (pre) {
		ml = shk_redact_marker(pre, mk);
		if (out)
			memcpy(out, mk, ml);
		n = ml;
	}
	shk_redact_iter_init(&it, k, s + pre, len - pre);
	while (shk_redact_next(&it, &a, &b)) {
		a += pre, b += pre;
		ml = shk_redact_marker(b - a, mk);
		if (out) {
			memcpy(out + n, s + at, a - at);
			memcpy(out + n + (a - at), mk, ml);
		}
		n += (a - at) + ml;
		at = b;
	}
	if (out)
		memcpy(out + n, s + at, len - at);
	return n + (len - at);
}

static shk_val *copy_str(shk_doc *doc, const shk_redact_keys *k, const shk_val *v, size_t pre)
{
	size_t len, out;
	const char *s = shk_val_str(v, &len);
	shk_redact_iter it;
	size_t a, b;
	shk_val *r;
	char *buf;

	shk_redact_iter_init(&it, k, s + pre, len - pre);
	if (!pre && !shk_redact_next(&it, &a, &b))
		return shk_val_copy(doc, v);
	out = rewrite(k, s, len, pre, NULL);
	if (!(buf = malloc(out ? out : 1)))
		return NULL;
	rewrite(k, s, len, pre, buf);
	r = shk_string(doc, buf, out);
	free(buf);
	return r;
}

/* A value hidden whole (whole_span): a string keeps what follows its first
 * stop_at character, scanned like any string. */
static shk_val *hide_whole(shk_doc *doc, const shk_redact_keys *k, const shk_val *v)
{
	size_t n = whole_span(v);

	return n == SIZE_MAX ? marker(doc) : copy_str(doc, k, v, n);
}

static shk_val *copy(shk_doc *doc, const shk_redact_keys *k, const shk_val *v, int depth);

static shk_val *copy_array(shk_doc *doc, const shk_redact_keys *k, const shk_val *v, int depth)
{
	shk_val *a = shk_array(doc);
	bool hide = false;

	for (size_t i = 0; a && i < shk_val_len(v); i++) {
		const shk_val *e = shk_array_at(v, i);
		shk_val *c = hide ? hide_whole(doc, k, e) : copy(doc, k, e, depth + 1);

		if (!c || shk_array_append(a, c) < 0)
			return NULL;
		hide = is_option_val(k, e);
	}
	return a;
}

static shk_val *copy_object(shk_doc *doc, const shk_redact_keys *k, const shk_val *v, int depth)
{
	shk_val *o = shk_object(doc);

	for (size_t i = 0; o && i < shk_val_len(v); i++) {
		const shk_val *key = shk_object_key_at(v, i);
		size_t kl;
		const char *ks = shk_val_str(key, &kl);
		shk_val *kc = shk_val_copy(doc, key);
		shk_val *vc = ks && shk_redact_is_key(k, ks, kl) ? hide_whole(doc, k, shk_object_value_at(v, i))
		                                               : copy(doc, k, shk_object_value_at(v, i), depth + 1);

		if (!kc || !vc || shk_object_set(o, kc, vc) < 0)
			return NULL;
	}
	return o;
}

static shk_val *copy(shk_doc *doc, const shk_redact_keys *k, const shk_val *v, int depth)
{
	if (depth > SHK_CANON_MAX_DEPTH)
		return marker(doc);
	switch (shk_val_type(v)) {
	case SHK_STRING: return copy_str(doc, k, v, 0);
	case SHK_ARRAY: return copy_array(doc, k, v, depth);
	case SHK_OBJECT: return copy_object(doc, k, v, depth);
	default: return shk_val_copy(doc, v);
	}
}

int shk_redact_copy(shk_doc *doc, const shk_redact_keys *k, const shk_val *v, shk_val **ret)
{
	shk_val *c;

	if (!doc || !k || !v || !ret)
		return -EINVAL;
	c = copy(doc, k, v, 0);
	if (!c)
		return -ENOMEM;
	*ret = c;
	return 0;
}

int shk_policy_redact_params(const shk_policy *p, shk_doc *doc, const shk_val *params,
                             shk_val **ret_redacted)
{
	shk_redact_keys k = { 0 };
	shk_val *c = NULL;
	int r;

	*ret_redacted = NULL;
	if (!p || !params)
		return 0;
	k.keys = shk_policy_redact_keys(p, &k.n);
	if (!shk_redact_needed(&k, params))
		return 0;
	if ((r = shk_redact_copy(doc, &k, params, &c)) < 0)
		return r;
	*ret_redacted = c;
	return 0;
}

int shk_policy_redact_logged(const shk_policy *p, shk_doc *doc, const shk_val *params,
                             shk_val **ret_redacted)
{
	int r = shk_policy_redact_params(p, doc, params, ret_redacted);

	if (r == 0 && *ret_redacted && shk_canon_check(params, SHK_CANON_NO_DEPTH_LIMIT) != SHK_CANON_OK)
		*ret_redacted = NULL;
	return r;
}
