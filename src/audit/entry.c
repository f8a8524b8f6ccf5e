/* SPDX-License-Identifier: MIT */
/*
 * Ledger entries: a canonical-JSON object builder for the writer (so the
 * decision path renders an entry without building a document), the entry
 * hash for the verifier, genesis, and the line reader.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include <shackle/canon.h>

#include "audit/internal.h"

void shk_audit_hex(const uint8_t *bytes, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * n] = 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1; /* upper case is not canonical here */
}

bool shk_audit_unhex32(const char *s, size_t len, uint8_t ret[32])
{
	if (!s || len != 64)
		return false;
	for (size_t i = 0; i < 32; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		ret[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

size_t shk_checkpoint_message(const uint8_t hash[32], uint8_t out[64])
{
	size_t dl = sizeof(SHK_CHECKPOINT_DOMAIN); /* includes the NUL */

	memcpy(out, SHK_CHECKPOINT_DOMAIN, dl);
	memcpy(out + dl, hash, 32);
	return dl + 32;
}

void shk_ledger_genesis(const char *session_id, size_t len, uint8_t ret[32])
{
	shk_sha256 st;

	shk_sha256_init(&st);
	shk_sha256_update(&st, SHK_LEDGER_DOMAIN, sizeof(SHK_LEDGER_DOMAIN));
	shk_sha256_update(&st, session_id, len);
	shk_sha256_final(&st, ret);
}

/* ---- buffers ------------------------------------------------------------ */

int shk_buf_reserve(shk_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 1024;
	char *p;

	if (n > SIZE_MAX / 4 - b->len)
		return -E2BIG;
	if (b->len + n + 1 <= b->cap)
		return 0;
	while (cap < b->len + n + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int shk_buf_grow(shk_buf *b, const char *s, size_t n)
{
	int r = shk_buf_reserve(b, n);

	if (r < 0)
		return r;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
	return 0;
}

void shk_buf_free(shk_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* Strict UTF-8 (no overlongs, no surrogates, <= U+10FFFF): length of the
 * sequence at s, or 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Bytes that end a plain run: controls, '"', '\\' and non-ASCII (checked). */
static const unsigned char special[256] = {
	[0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1,
};

/* No byte of the 8 at s is special: a control, '"', '\\' or >= 0x80. The
 * zero-byte tests are exact for "any byte", which is all that is asked. */
static inline bool word_plain(const char *s)
{
	const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
	uint64_t x, q, b, ctl;

	memcpy(&x, s, sizeof(x));
	q = x ^ (ones * '"');
	b = x ^ (ones * '\\');
	ctl = (x - ones * 0x20) & ~x;   /* a byte < 0x20 */
	q = (q - ones) & ~q;            /* a byte == '"' */
	b = (b - ones) & ~b;            /* a byte == '\\' */
	return !((ctl | q | b | x) & high);
}

/* What follows the backslash for the bytes below 0x20 and '"', '\\'. */
static const char short_escape[256] = {
	['"'] = '"', ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
};

/* Room for the worst case (every byte a \u00XX) is taken first, so the
 * string is written with no further checks; nothing is committed to b
 * unless the whole string is valid. */
int shk_json_quote(shk_buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	char *o;
	int r;

	if (len > SIZE_MAX / 8)
		return -E2BIG;
	r = shk_buf_reserve(b, 6 * len + 2);
	if (r < 0)
		return r;
	o = b->p + b->len;
	*o++ = '"';
	while (i < len) {
		size_t run = i;

		while (i + 8 <= len && word_plain(s + i))
			i += 8;
		while (i < len && !special[u[i]])
			i++;
		memcpy(o, s + run, i - run);
		o += i - run;
		if (i == len)
			break;
		if (u[i] >= 0x80) {
			size_t l = utf8_seq(u + i, len - i);

			if (l == 0)
				return -EILSEQ;
			memcpy(o, s + i, l);
			o += l;
			i += l;
			continue;
		}
		*o++ = '\\';
		if (short_escape[u[i]]) {
			*o++ = short_escape[u[i]];
		} else {
			memcpy(o, "u00", 3);
			o[3] = hex[u[i] >> 4];
			o[4] = hex[u[i] & 15];
			o += 5;
		}
		i++;
	}
	*o++ = '"';
	*o = 0;
	b->len = (size_t)(o - b->p);
	return 0;
}

/* ---- canonical object builder ------------------------------------------ */

void shk_cob_reset(shk_cob *c)
{
	c->vals.len = 0;
	c->n = 0;
	c->err = 0;
}

void shk_cob_free(shk_cob *c)
{
	shk_buf_free(&c->vals);
	c->n = 0;
}

static bool cob_begin(shk_cob *c, const char *key)
{
	if (c->err)
		return false;
	if (c->n == SHK_COB_MAX) {
		c->err = -E2BIG;
		return false;
	}
	c->m[c->n].key = key;
	c->m[c->n].off = c->vals.len;
	return true;
}

static void cob_end(shk_cob *c, int r)
{
	if (r < 0) {
		c->err = r;
		return;
	}
	c->m[c->n].len = c->vals.len - c->m[c->n].off;
	c->n++;
}

void shk_cob_raw(shk_cob *c, const char *key, const char *json, size_t len)
{
	if (cob_begin(c, key))
		cob_end(c, shk_buf_put(&c->vals, json, len));
}

/*
 * Names from the kernel (an executable's path, a tool named after it) need
 * not be UTF-8, and JSON cannot hold other bytes. Refusing the entry would
 * let an agent freeze its own supervision with one odd file name, and
 * replacing bytes would change the evidence; such a string is logged as
 * {"invalid_utf8_hex": "<hex of its bytes>"} instead.
 */
int shk_json_quote_or_hex(shk_buf *b, const char *s, size_t len)
{
	size_t mark = b->len;
	int r = shk_json_quote(b, s, len);

	if (r != -EILSEQ)
		return r;
	b->len = mark;
	r = shk_buf_put(b, "{\"invalid_utf8_hex\":\"", 21);
	for (size_t i = 0; r == 0 && i < len; i++) {
		char h[3];

		shk_audit_hex((const uint8_t *)s + i, 1, h);
		r = shk_buf_put(b, h, 2);
	}
	return r == 0 ? shk_buf_put(b, "\"}", 2) : r;
}

void shk_cob_strn(shk_cob *c, const char *key, const char *s, size_t len)
{
	if (cob_begin(c, key))
		cob_end(c, shk_json_quote_or_hex(&c->vals, s, len));
}

void shk_cob_str(shk_cob *c, const char *key, const char *s)
{
	if (!s)
		shk_cob_null(c, key);
	else
		shk_cob_strn(c, key, s, strlen(s));
}

/* Decimal digits of v at the end of t[24]; returns where they start. */
char *shk_u64_digits(uint64_t v, char t[24])
{
	char *p = t + 23;

	*p = 0;
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	return p;
}

void shk_cob_int(shk_cob *c, const char *key, int64_t v)
{
	char t[24], *p = shk_u64_digits(v < 0 ? 0 - (uint64_t)v : (uint64_t)v, t);

	if (v < 0)
		*--p = '-';
	shk_cob_raw(c, key, p, (size_t)(t + 23 - p));
}

void shk_cob_uint(shk_cob *c, const char *key, uint64_t v)
{
	char t[24], *p;

	if (v > INT64_MAX) { /* JSON integers here are int64 */
		c->err = c->err ? c->err : -ERANGE;
		return;
	}
	p = shk_u64_digits(v, t);
	shk_cob_raw(c, key, p, (size_t)(t + 23 - p));
}

/*
 * Even without printf a 17-digit real costs ~0.1 us. The values of
 * consecutive entries repeat (budget after = next budget before, initial
 * budget, cost), so a few recent results are remembered.
 */
#define REAL_CACHE 8
static __thread struct {
	double d;
	int n;
	char t[40];
} real_cache[REAL_CACHE];
static __thread unsigned real_next;

int shk_audit_real_cached(double v, char t[SHK_AUDIT_REAL_MAX])
{
	int n;

	for (unsigned i = 0; i < REAL_CACHE; i++)
		if (real_cache[i].n > 0 && !memcmp(&real_cache[i].d, &v, sizeof(v))) {
			memcpy(t, real_cache[i].t, (size_t)real_cache[i].n + 1);
			return real_cache[i].n;
		}
	n = shk_canon_format_real(v, t, SHK_AUDIT_REAL_MAX);
	if (n > 0 && (size_t)n < sizeof(real_cache[0].t)) {
		unsigned i = real_next++ % REAL_CACHE;

		real_cache[i].d = v;
		real_cache[i].n = n;
		memcpy(real_cache[i].t, t, (size_t)n + 1);
	}
	return n;
}

void shk_cob_real(shk_cob *c, const char *key, double v)
{
	char t[SHK_AUDIT_REAL_MAX];
	int n = shk_audit_real_cached(v, t);

	if (n < 0) {
		c->err = c->err ? c->err : -EDOM;
		return;
	}
	shk_cob_raw(c, key, t, (size_t)n);
}

void shk_cob_bool(shk_cob *c, const char *key, bool v)
{
	shk_cob_raw(c, key, v ? "true" : "false", v ? 4 : 5);
}

void shk_cob_null(shk_cob *c, const char *key)
{
	shk_cob_raw(c, key, "null", 4);
}

static int buf_sink(void *ctx, const char *bytes, size_t len)
{
	return shk_buf_put(ctx, bytes, len);
}

void shk_cob_val(shk_cob *c, const char *key, const shk_val *v)
{
	if (!v) {
		shk_cob_null(c, key);
		return;
	}
	if (cob_begin(c, key))
		cob_end(c, shk_canon_write(v, buf_sink, &c->vals));
}

/* Sorted member order; reuses the previous one when the keys are the same
 * literals in the same sequence (pointer equality suffices for a hit). */
static int cob_order(shk_cob *c, size_t order[SHK_COB_MAX])
{
	size_t n = 0;

	if (c->cached_n == c->n && c->n > 0) {
		size_t i = 0;

		while (i < c->n && c->cached_keys[i] == c->m[i].key)
			i++;
		if (i == c->n) {
			memcpy(order, c->cached_order, c->n * sizeof(*order));
			return 0;
		}
	}
	/* Insertion sort by key bytes: the member count is small. */
	for (size_t i = 0; i < c->n; i++) {
		size_t j = n;

		while (j > 0 && strcmp(c->m[order[j - 1]].key, c->m[i].key) > 0) {
			order[j] = order[j - 1];
			j--;
		}
		if (j > 0 && !strcmp(c->m[order[j - 1]].key, c->m[i].key))
			return -EEXIST;
		order[j] = i;
		n++;
	}
	for (size_t i = 0; i < c->n; i++)
		c->cached_keys[i] = c->m[i].key;
	memcpy(c->cached_order, order, c->n * sizeof(*order));
	c->cached_n = c->n;
	return 0;
}

int shk_cob_emit(shk_cob *c, shk_buf *out, const char *hole, size_t *ret_hole)
{
	size_t order[SHK_COB_MAX];
	size_t n = c->n;
	int r;

	if (c->err)
		return c->err;
	r = cob_order(c, order);
	if (r < 0)
		return r;
	if (ret_hole)
		*ret_hole = SIZE_MAX; /* after the last member */
	r = shk_buf_put(out, "{", 1);
	for (size_t k = 0; r == 0 && k < n; k++) {
		const char *key = c->m[order[k]].key;
		size_t kl = strlen(key);

		if (k > 0)
			r = shk_buf_put(out, ",", 1);
		if (ret_hole && *ret_hole == SIZE_MAX && hole && strcmp(key, hole) > 0)
			*ret_hole = out->len;
		/* Keys are ASCII literals of this file set: no escapes needed. */
		if (r == 0 && out->len + kl + 3 < out->cap) {
			out->p[out->len] = '"';
			memcpy(out->p + out->len + 1, key, kl);
			memcpy(out->p + out->len + 1 + kl, "\":", 2);
			out->len += kl + 3;
		} else if (r == 0) {
			r = shk_buf_put(out, "\"", 1);
			if (r == 0)
				r = shk_buf_put(out, key, kl);
			if (r == 0)
				r = shk_buf_put(out, "\":", 2);
		}
		if (r == 0)
			r = shk_buf_put(out, c->vals.p + c->m[order[k]].off, c->m[order[k]].len);
	}
	if (r == 0)
		r = shk_buf_put(out, "}", 1);
	return r;
}

int shk_buf_insert(shk_buf *b, size_t off, const char *s, size_t n)
{
	size_t tail = b->len - off;
	int r = shk_buf_put(b, s, n); /* grows; bytes are moved into place below */

	if (r < 0)
		return r;
	memmove(b->p + off + n, b->p + off, tail);
	memcpy(b->p + off, s, n);
	return 0;
}

/* ---- entry hash of a parsed entry -------------------------------------- */

static int sha_sink(void *ctx, const char *bytes, size_t len)
{
	shk_sha256_update(ctx, bytes, len);
	return 0;
}

int shk_ledger_entry_hash(const shk_val *entry, uint8_t ret[32])
{
	shk_sha256 st;
	bool first = true;
	size_t n;

	if (shk_val_type(entry) != SHK_OBJECT)
		return -EINVAL;
	shk_sha256_init(&st);
	sha_sink(&st, "{", 1);
	n = shk_val_len(entry);
	for (size_t i = 0; i < n; i++) {
		const shk_val *k = shk_object_key_at(entry, i);
		int r;

		if (shk_val_str_eq(k, "hash") || shk_val_str_eq(k, "sig"))
			continue;
		if (!first)
			sha_sink(&st, ",", 1);
		first = false;
		r = shk_canon_write(k, sha_sink, &st);
		if (r == 0)
			r = sha_sink(&st, ":", 1);
		if (r == 0)
			r = shk_canon_write(shk_object_value_at(entry, i), sha_sink, &st);
		if (r < 0)
			return r;
	}
	sha_sink(&st, "}", 1);
	shk_sha256_final(&st, ret);
	return 0;
}

/* ---- line reader -------------------------------------------------------- */

int shk_ledger_read_lines(const char *path, shk_ledger_line_fn fn, void *ctx)
{
	struct stat st;
	const char *data, *p, *end;
	uint64_t lineno = 0;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (st.st_size == 0) {
		close(fd);
		return 0;
	}
	data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (data == MAP_FAILED)
		return -errno;
	end = data + st.st_size;
	for (p = data; r == 0 && p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		lineno++;
		if (!nl) {
			r = fn(ctx, lineno, p, (size_t)(end - p), true);
			break;
		}
		r = fn(ctx, lineno, p, (size_t)(nl - p), false);
		p = nl + 1;
	}
	munmap((void *)data, (size_t)st.st_size);
	return r;
}
