/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

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
