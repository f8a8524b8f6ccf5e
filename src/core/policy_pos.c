/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include <shackle/policy.h>

#include "core/policy_pos.h"

struct cur {
	const unsigned char *t;
	size_t len, pos;
	int line, col;
};

static bool more(const struct cur *c)
{
	return c->pos < c->len;
}

static unsigned char peek(const struct cur *c)
{
	return more(c) ? c->t[c->pos] : 0;
}

/* Columns count code points: continuation bytes do not move the column. */
static void adv(struct cur *c)
{
	unsigned char ch;

	if (!more(c))
		return;
	ch = c->t[c->pos++];
	if (ch == '\n') {
		c->line++;
		c->col = 1;
	} else if ((ch & 0xc0) != 0x80) {
		c->col++;
	}
}

static void skip_ws(struct cur *c)
{
	while (more(c) && strchr(" \t\r\n", peek(c)) && peek(c))
		adv(c);
}

static int hexval(unsigned char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static long read_u4(struct cur *c)
{
	long v = 0;

	for (int i = 0; i < 4; i++) {
		int h = hexval(peek(c));

		if (h < 0)
			return -1;
		v = v * 16 + h;
		adv(c);
	}
	return v;
}

static size_t utf8_encode(unsigned long cp, unsigned char out[4])
{
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xc0 | cp >> 6);
		out[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xe0 | cp >> 12);
		out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (unsigned char)(0xf0 | cp >> 18);
	out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Decode one escape after the backslash into out; returns its length. */
static size_t decode_escape(struct cur *c, unsigned char out[4])
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	unsigned char e = peek(c);
	const char *hit;
	long cp, lo;

	adv(c);
	if (e != 'u') {
		hit = e ? strchr(from, e) : NULL;
		out[0] = hit ? (unsigned char)to[hit - from] : e;
		return 1;
	}
	cp = read_u4(c);
	if (cp < 0)
		return 0;
	if (cp >= 0xd800 && cp <= 0xdbff && peek(c) == '\\' && c->pos + 1 < c->len &&
	    c->t[c->pos + 1] == 'u') {
		adv(c);
		adv(c);
		lo = read_u4(c);
		if (lo >= 0xdc00 && lo <= 0xdfff)
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	return utf8_encode((unsigned long)cp, out);
}

/* Advance past a string; with key != NULL, say whether it decodes to key. */
static bool scan_string(struct cur *c, const char *key)
{
	size_t klen = key ? strlen(key) : 0, k = 0;
	bool eq = key != NULL;

	adv(c); /* opening quote */
	while (more(c) && peek(c) != '"') {
		unsigned char buf[4];
		size_t n;

		if (peek(c) == '\\') {
			adv(c);
			n = decode_escape(c, buf);
		} else {
			buf[0] = peek(c);
			n = 1;
			adv(c);
		}
		if (eq && (k + n > klen || memcmp(key + k, buf, n) != 0))
			eq = false;
		k += n;
	}
	adv(c); /* closing quote */
	return eq && k == klen;
}

static void skip_value(struct cur *c)
{
	int depth = 0;

	skip_ws(c);
	if (peek(c) == '"') {
		scan_string(c, NULL);
		return;
	}
	if (peek(c) != '{' && peek(c) != '[') {
		while (more(c) && !strchr(",]} \t\r\n", peek(c)))
			adv(c);
		return;
	}
	while (more(c)) {
		unsigned char ch = peek(c);

		if (ch == '"') {
			scan_string(c, NULL);
			continue;
		}
		if (ch == '{' || ch == '[')
			depth++;
		else if (ch == '}' || ch == ']')
			depth--;
		adv(c);
		if (depth == 0)
			return;
	}
}

/* Enter the member `key` of the object at c; leave c at its value. */
static int enter_key(struct cur *c, const char *key, int *kline, int *kcol)
{
	if (peek(c) != '{')
		return -ENOENT;
	adv(c);
	for (;;) {
		bool eq;

		skip_ws(c);
		if (peek(c) != '"')
			return -ENOENT;
		*kline = c->line;
		*kcol = c->col;
		eq = scan_string(c, key);
		skip_ws(c);
		if (peek(c) != ':')
			return -ENOENT;
		adv(c);
		skip_ws(c);
		if (eq)
			return 0;
		skip_value(c);
		skip_ws(c);
		if (peek(c) != ',')
			return -ENOENT;
		adv(c);
	}
}

static int enter_index(struct cur *c, size_t index)
{
	if (peek(c) != '[')
		return -ENOENT;
	adv(c);
	for (size_t i = 0;; i++) {
		skip_ws(c);
		if (!more(c) || peek(c) == ']')
			return -ENOENT;
		if (i == index)
			return 0;
		skip_value(c);
		skip_ws(c);
		if (peek(c) != ',')
			return -ENOENT;
		adv(c);
	}
}

int shk_json_locate(const char *text, size_t len, const struct shk_jpath *path, bool at_key,
                    int *ret_line, int *ret_column)
{
	struct cur c = { (const unsigned char *)text, len, 0, 1, 1 };
	int kline = 0, kcol = 0;

	skip_ws(&c);
	*ret_line = c.line;
	*ret_column = c.col;
	for (size_t i = 0; i < path->n; i++) {
		const struct shk_jseg *s = &path->seg[i];
		int r = s->key ? enter_key(&c, s->key, &kline, &kcol) : enter_index(&c, s->index);

		if (r < 0)
			return r;
		if (at_key && i + 1 == path->n && s->key) {
			*ret_line = kline;
			*ret_column = kcol;
			return 0;
		}
		*ret_line = c.line;
		*ret_column = c.col;
	}
	return 0;
}

/* Line and column of byte offset stop. */
static void position_of(const char *text, size_t len, size_t stop, int *ret_line, int *ret_column)
{
	struct cur c = { (const unsigned char *)text, len < stop ? len : stop, 0, 1, 1 };

	while (more(&c))
		adv(&c);
	*ret_line = c.line;
	*ret_column = c.col;
}

#define DUP_DEPTH 32

struct frame {
	bool obj;
	size_t kstart, klen, index;
};

static void put_path(const char *text, const struct frame *st, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	out[0] = 0;
	for (size_t i = 0; i < n && o < outlen; i++) {
		if (st[i].obj)
			o += (size_t)snprintf(out + o, outlen - o, "%s%.*s", i ? "." : "", (int)st[i].klen,
					      text + st[i].kstart);
		else
			o += (size_t)snprintf(out + o, outlen - o, "[%zu]", st[i].index);
	}
}

/*
 * The path of the key that ends at byte offset stop (jansson's position for
 * a duplicate key), e.g. "exec.rules[2].name", and where that key starts.
 * The text up to there was accepted by jansson, so a plain walk suffices.
 * Returns false when the walk does not end in a key (deeper than DUP_DEPTH).
 */
static bool dup_key(const char *text, size_t len, size_t stop, char *path, size_t plen,
                    struct frame *ret_key, int *ret_line, int *ret_column)
{
	struct cur c = { (const unsigned char *)text, len < stop ? len : stop, 0, 1, 1 };
	struct frame st[DUP_DEPTH];
	size_t n = 0, depth = 0;
	bool want_key = false;

	while (more(&c)) {
		unsigned char ch = peek(&c);
		size_t s = c.pos + 1;
		int line = c.line, col = c.col;

		if (ch == '"') {
			scan_string(&c, NULL);
			if (want_key && depth == n && n > 0) {
				st[n - 1].kstart = s;
				st[n - 1].klen = c.pos - 1 - s;
				*ret_line = line;
				*ret_column = col;
			}
			want_key = false;
			continue;
		}
		if ((ch == '{' || ch == '[') && depth++ < DUP_DEPTH)
			st[n++] = (struct frame){ .obj = ch == '{' };
		else if ((ch == '}' || ch == ']') && depth > 0 && depth-- <= DUP_DEPTH)
			n--;
		else if (ch == ',' && depth == n && n > 0 && !st[n - 1].obj)
			st[n - 1].index++;
		if (!strchr(" \t\r\n", ch))
			want_key = (ch == '{' || ch == ',') && depth == n && n > 0 && st[n - 1].obj;
		adv(&c);
	}
	if (n == 0 || depth != n || !st[n - 1].obj)
		return false;
	put_path(text, st, n, path, plen);
	*ret_key = st[n - 1];
	return true;
}

void shk_json_explain_error(const char *text, size_t len, const json_error_t *je, int *ret_line,
                            int *ret_column, char *msg, size_t msglen)
{
	const char *nul = len ? memchr(text, 0, len) : NULL;
	enum json_error_code code = json_error_code(je);
	struct frame k;
	char path[256];

	*ret_line = je->line > 0 ? je->line : 1;
	*ret_column = je->column > 0 ? je->column : 1;
	/* jansson takes a NUL byte for the end of the input: past it, the error
	 * is the NUL's (its position counts the byte it stopped at) */
	if (nul && je->position > nul - text) {
		position_of(text, len, (size_t)(nul - text), ret_line, ret_column);
		snprintf(msg, msglen, "the file contains a NUL byte (a binary file? JSON text has none)");
		return;
	}
	if (code == json_error_null_character) {
		snprintf(msg, msglen, "a string holds \\u0000 (NUL), which is not allowed here");
		return;
	}
	if (code == json_error_invalid_utf8 && je->position >= 0) {
		/* jansson gives the column before the byte (0 at a line start) */
		position_of(text, len, (size_t)je->position, ret_line, ret_column);
		snprintf(msg, msglen, "%s (not UTF-8 text)", je->text);
		return;
	}
	if (code == json_error_duplicate_key && je->position >= 0 &&
	    dup_key(text, len, (size_t)je->position, path, sizeof(path), &k, ret_line, ret_column)) {
		snprintf(msg, msglen, "%s: duplicate key \"%.*s\"", path, (int)k.klen, text + k.kstart);
		return;
	}
	snprintf(msg, msglen, "%s", je->text);
}

int shk_policy_exec_rule_locate(const char *text, size_t len, size_t i, int *ret_line,
                                int *ret_column)
{
	struct shk_jpath p = { .seg = { { "exec", 0 }, { "rules", 0 }, { NULL, i } }, .n = 3 };

	return shk_json_locate(text, len, &p, false, ret_line, ret_column);
}

int shk_policy_model_ignore_input_locate(const char *text, size_t len, size_t i, size_t k,
                                         int *ret_line, int *ret_column)
{
	struct shk_jpath p = { .seg = { { "models", 0 }, { "rules", 0 }, { NULL, i },
	                                { "ignore_input", 0 }, { NULL, k } }, .n = 5 };

	return shk_json_locate(text, len, &p, false, ret_line, ret_column);
}
