/* SPDX-License-Identifier: MIT */
/*
 * Canonical JSON: the structural check (SP/1.0.1 Rule 1), the serialiser that
 * matches Python's json.dumps(sort_keys=True, separators=(",",":"),
 * ensure_ascii=False, allow_nan=False) byte for byte, and SHA-256 over it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/real_exact.h"
#include "core/sha256.h"

#include <shackle/canon.h>

#include "core/json_internal.h"

const char *shk_canon_status_name(shk_canon_status s)
{
	switch (s) {
	case SHK_CANON_OK: return "ok";
	case SHK_CANON_NOT_OBJECT: return "not_an_object";
	case SHK_CANON_NON_STRING_KEY: return "non_string_key";
	case SHK_CANON_NON_FINITE: return "non_finite";
	case SHK_CANON_FOREIGN: return "foreign";
	case SHK_CANON_BAD_UTF8: return "bad_utf8";
	case SHK_CANON_TOO_DEEP: return "too_deep";
	case SHK_CANON_MARKER: return "noncanonical_marker";
	}
	return "unknown";
}

/* ---- structural check ---------------------------------------------------- */

/*
 * Strict UTF-8 (RFC 3629): no overlong forms, no surrogates (U+D800..U+DFFF,
 * which Python's str.encode("utf-8") refuses), nothing above U+10FFFF.
 */
static bool utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint64_t w;
		unsigned char c;

		/* ASCII runs dominate real params: eight bytes per step. */
		while (i + 8 <= n) {
			memcpy(&w, s + i, 8);
			if (w & 0x8080808080808080ULL)
				break;
			i += 8;
		}
		if (i >= n)
			break;
		c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			if (n - i < 2 || (s[i + 1] & 0xC0) != 0x80)
				return false;
			i += 2;
		} else if (c >= 0xE0 && c <= 0xEF) {
			unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
			if (n - i < 3 || s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0) != 0x80)
				return false;
			i += 3;
		} else if (c >= 0xF0 && c <= 0xF4) {
			unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
			if (n - i < 4 || s[i + 1] < lo || s[i + 1] > hi ||
			    (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
				return false;
			i += 4;
		} else {
			return false; /* continuation byte, C0/C1 or F5..FF */
		}
	}
	return true;
}

static shk_canon_status check(const shk_val *v, int depth, int max)
{
	shk_canon_status r;

	if (!v)
		return SHK_CANON_FOREIGN;
	if (depth > max)
		return SHK_CANON_TOO_DEEP;
	switch (v->type) {
	case SHK_NULL:
	case SHK_BOOL:
	case SHK_INT:
		return SHK_CANON_OK;
	case SHK_REAL:
		return isfinite(v->u.d) ? SHK_CANON_OK : SHK_CANON_NON_FINITE;
	case SHK_STRING:
		return utf8_valid((const unsigned char *)v->u.str.s, v->u.str.len) ?
			SHK_CANON_OK : SHK_CANON_BAD_UTF8;
	case SHK_ARRAY:
		for (size_t i = 0; i < v->u.arr.len; i++)
			if ((r = check(v->u.arr.items[i], depth + 1, max)) != SHK_CANON_OK)
				return r;
		return SHK_CANON_OK;
	case SHK_OBJECT:
		for (size_t i = 0; i < v->u.obj.len; i++) {
			const shk_val *k = v->u.obj.m[i].key;
			if (!k)
				return SHK_CANON_FOREIGN;
			if (k->type != SHK_STRING)
				return SHK_CANON_NON_STRING_KEY;
			if (!utf8_valid((const unsigned char *)k->u.str.s, k->u.str.len))
				return SHK_CANON_BAD_UTF8;
			if ((r = check(v->u.obj.m[i].value, depth + 1, max)) != SHK_CANON_OK)
				return r;
		}
		return SHK_CANON_OK;
	case SHK_FOREIGN:
		break;
	}
	return SHK_CANON_FOREIGN;
}

shk_canon_status shk_canon_check(const shk_val *v, int max_depth)
{
	/* Even "no limit" keeps the stack bounded (and terminates on cycles). */
	int max = max_depth < 0 || max_depth > SHK_JSON_HARD_DEPTH ? SHK_JSON_HARD_DEPTH : max_depth;

	return check(v, 0, max);
}

shk_canon_status shk_canon_check_params(const shk_val *params)
{
	const shk_val *m;

	if (!params || params->type != SHK_OBJECT)
		return SHK_CANON_NOT_OBJECT;
	/* Python: params.get("__noncanonical__") is True — the boolean only. */
	m = shk_object_get(params, "__noncanonical__");
	if (m && m->type == SHK_BOOL && m->u.b)
		return SHK_CANON_MARKER;
	return check(params, 0, SHK_CANON_MAX_DEPTH);
}

/* ---- Python float repr ---------------------------------------------------- */

/* Digits of |d| correctly rounded to p significant digits: fills dig (no
 * point), returns the decimal exponent of the first digit. */
static int round_digits(double d, int p, char *dig)
{
	char buf[40];
	int j = 0;

	snprintf(buf, sizeof(buf), "%.*e", p - 1, d);
	for (const char *c = buf; *c && *c != 'e'; c++)
		if (*c >= '0' && *c <= '9')
			dig[j++] = *c;
	dig[j] = '\0';
	return atoi(strchr(buf, 'e') + 1);
}

/* Written as an integer mantissa ("12345e-4"): no decimal point, so the
 * result does not depend on LC_NUMERIC. (round_digits skips whatever
 * separator snprintf used for the same reason.) */
static bool reads_back(const char *dig, int exp10, double d)
{
	char buf[48];

	snprintf(buf, sizeof(buf), "%se%d", dig, exp10 - ((int)strlen(dig) - 1));
	return strtod(buf, NULL) == d;
}

/* Add one unit in the last place of a p-digit decimal (with carry). */
static int digits_inc(char *dig, int exp10)
{
	int i = (int)strlen(dig) - 1;

	for (; i >= 0; i--) {
		if (dig[i] != '9') {
			dig[i]++;
			return exp10;
		}
		dig[i] = '0';
	}
	memmove(dig + 1, dig, strlen(dig) + 1);
	dig[0] = '1';
	dig[strlen(dig) - 1] = '\0';
	return exp10 + 1;
}

/* Bit tests rather than libm calls: libshackle does not link libm. */
static bool is_power_of_two(double d)
{
	uint64_t b;

	memcpy(&b, &d, sizeof(b));
	return (b & 0x000fffffffffffffULL) == 0 && (b & 0x7ff0000000000000ULL) != 0;
}

/* Does some p-digit decimal read back as d? Leaves the closest one in dig. */
static bool try_precision(double d, int p, char *dig, int *ret_exp)
{
	int e = round_digits(d, p, dig);

	*ret_exp = e;
	if (reads_back(dig, e, d))
		return true;
	/* At a power of two the gap below d is half the gap above it, so the
	 * nearest p-digit decimal can miss below while the next one up hits. */
	if (is_power_of_two(d)) {
		char up[24];
		int ue;
		memcpy(up, dig, strlen(dig) + 1);
		ue = digits_inc(up, e);
		if (reads_back(up, ue, d)) {
			memcpy(dig, up, strlen(up) + 1);
			*ret_exp = ue;
			return true;
		}
	}
	return false;
}

static int put_uint(char *out, uint64_t u);

static const double pow10_exact[23] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/*
 * Fast path for d > 0 with a short decimal form c * 10^-k (c < 2^53, k <= 22):
 * c and 10^k are exact doubles, so c / 10^k is correctly rounded exactly like
 * strtod("c e-k") and the round-trip test needs no strtod. The smallest k
 * with a hit gives the fewest digits. The true nearest c lies within one of
 * round(d * 10^k); when two or more candidates hit, Python would take the
 * closest one, which this path cannot judge exactly: it declines, as it does
 * for values outside its range, and the exact slow path decides.
 */
enum fast_result { FAST_OK, FAST_AMBIGUOUS, FAST_LONG };

static enum fast_result fast_digits(double d, char *dig, int *ret_exp)
{
	for (int k = 0; k <= 22; k++) {
		double s = d * pow10_exact[k];
		uint64_t m, hit = 0;
		int hits = 0, n;

		if (!(s < 0x1p53))
			return FAST_LONG;
		m = (uint64_t)(s + 0.5);
		for (uint64_t c = m ? m - 1 : 0; c <= m + 1; c++)
			if ((double)c / pow10_exact[k] == d) {
				hits++;
				hit = c;
			}
		if (hits > 1)
			return FAST_AMBIGUOUS;
		if (hits == 1) {
			n = put_uint(dig, hit);
			dig[n] = '\0';
			*ret_exp = n - 1 - k;
			return FAST_OK;
		}
	}
	return FAST_LONG;
}

/* Shortest digits that round-trip (Python repr / David Gay mode 0). */
static int shortest_digits(double d, char *dig, bool allow_fast)
{
	int lo = 1, hi = 17, e = 0, best_e = 0, best_p = 0;
	char best[24];
	size_t n;

	if (allow_fast) {
		enum fast_result r = fast_digits(d, dig, &e);
		if (r == FAST_OK)
			goto strip;
		if (shk_real_exact_digits(d, dig, &e))
			goto strip;
		/* For 1e-7 <= d < 2^53 the fast path covers every form of up to
		 * 15 digits unless it found several candidates: a decline for
		 * length means at least 16 digits are needed. */
		if (r == FAST_LONG && d >= 1e-7 && d < 0x1p53)
			lo = 16;
	}
	/* Having a p-digit decimal in the rounding interval implies having a
	 * (p+1)-digit one, so the shortest precision can be bisected. */
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (try_precision(d, mid, dig, &e)) {
			hi = best_p = mid;
			memcpy(best, dig, strlen(dig) + 1);
			best_e = e;
		} else {
			lo = mid + 1;
		}
	}
	if (best_p == lo) {
		memcpy(dig, best, strlen(best) + 1);
		e = best_e;
	} else {
		try_precision(d, lo, dig, &e);
	}
strip:
	n = strlen(dig);
	while (n > 1 && dig[n - 1] == '0')
		dig[--n] = '\0';
	return e;
}

static int put_uint(char *out, uint64_t u)
{
	char tmp[24];
	int n = 0, k = 0;

	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	while (n)
		out[k++] = tmp[--n];
	return k;
}

static int format_real(double d, char *out, size_t outlen, bool allow_fast)
{
	char dig[24];
	int e, nd, k = 0;

	if (!isfinite(d) || !out || outlen < 32)
		return -EINVAL;
	if (signbit(d)) {
		out[k++] = '-';
		d = -d;
	}
	if (d < 1e16 && (double)(uint64_t)d == d) {
		/* Integral values below 1e16 print as "<int>.0"; no search. */
		k += put_uint(out + k, (uint64_t)d);
		memcpy(out + k, ".0", 3);
		return k + 2;
	}
	e = shortest_digits(d, dig, allow_fast);
	nd = (int)strlen(dig);
	if (e >= -4 && e < 16) {
		if (e < 0) {
			out[k++] = '0';
			out[k++] = '.';
			for (int i = 0; i < -e - 1; i++)
				out[k++] = '0';
			memcpy(out + k, dig, (size_t)nd);
			k += nd;
		} else {
			for (int i = 0; i <= e; i++)
				out[k++] = i < nd ? dig[i] : '0';
			out[k++] = '.';
			if (nd > e + 1) {
				memcpy(out + k, dig + e + 1, (size_t)(nd - e - 1));
				k += nd - e - 1;
			} else {
				out[k++] = '0';
			}
		}
	} else {
		out[k++] = dig[0];
		if (nd > 1) {
			out[k++] = '.';
			memcpy(out + k, dig + 1, (size_t)(nd - 1));
			k += nd - 1;
		}
		out[k++] = 'e';
		out[k++] = e < 0 ? '-' : '+';
		if (abs(e) < 10)
			out[k++] = '0';
		k += put_uint(out + k, (uint64_t)abs(e));
	}
	out[k] = '\0';
	return k;
}

int shk_canon_format_real(double d, char *out, size_t outlen)
{
	return format_real(d, out, outlen, true);
}

int shk_canon_format_real_slow(double d, char *out, size_t outlen)
{
	return format_real(d, out, outlen, false);
}

/* ---- writer -------------------------------------------------------------- */

/* Output is batched so that the sink (e.g. SHA-256 update) sees few calls. */
struct writer {
	shk_canon_sink sink;
	void *ctx;
	int err;
	size_t len;
	char buf[2048];
};

static void w_flush(struct writer *w)
{
	if (w->len && !w->err)
		w->err = w->sink(w->ctx, w->buf, w->len);
	w->len = 0;
}

static void w_put(struct writer *w, const char *s, size_t n)
{
	if (n > sizeof(w->buf) - w->len) {
		w_flush(w);
		if (n >= sizeof(w->buf)) {
			if (!w->err)
				w->err = w->sink(w->ctx, s, n);
			return;
		}
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

static inline void w_byte(struct writer *w, char c)
{
	if (w->len == sizeof(w->buf))
		w_flush(w);
	w->buf[w->len++] = c;
}

/* 0: raw; otherwise the character after the backslash ('u' for \u00XX). */
static const char escape_of[256] = {
	['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
	[0x00] = 'u', [0x01] = 'u', [0x02] = 'u', [0x03] = 'u', [0x04] = 'u', [0x05] = 'u',
	[0x06] = 'u', [0x07] = 'u', [0x0b] = 'u', [0x0e] = 'u', [0x0f] = 'u', [0x10] = 'u',
	[0x11] = 'u', [0x12] = 'u', [0x13] = 'u', [0x14] = 'u', [0x15] = 'u', [0x16] = 'u',
	[0x17] = 'u', [0x18] = 'u', [0x19] = 'u', [0x1a] = 'u', [0x1b] = 'u', [0x1c] = 'u',
	[0x1d] = 'u', [0x1e] = 'u', [0x1f] = 'u',
	['"'] = '"', ['\\'] = '\\',
};

static void w_string(struct writer *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t start = 0;

	w_byte(w, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char e = escape_of[c];
		if (!e)
			continue;
		w_put(w, s + start, i - start);
		start = i + 1;
		if (e == 'u') {
			char u[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			w_put(w, u, sizeof(u));
		} else {
			char esc[2] = { '\\', e };
			w_put(w, esc, sizeof(esc));
		}
	}
	w_put(w, s + start, n - start);
	w_byte(w, '"');
}

static void w_int(struct writer *w, int64_t i)
{
	char tmp[24];
	int k = 0;
	uint64_t u = (uint64_t)i;

	if (i < 0) {
		tmp[k++] = '-';
		u = 0 - u; /* well defined for INT64_MIN too */
	}
	k += put_uint(tmp + k, u);
	w_put(w, tmp, (size_t)k);
}

/* v has passed check(): every value is representable. */
static void w_value(struct writer *w, const shk_val *v)
{
	char tmp[40];
	int n;

	switch (v->type) {
	case SHK_NULL: w_put(w, "null", 4); break;
	case SHK_BOOL: v->u.b ? w_put(w, "true", 4) : w_put(w, "false", 5); break;
	case SHK_INT: w_int(w, v->u.i); break;
	case SHK_REAL:
		n = shk_canon_format_real(v->u.d, tmp, sizeof(tmp));
		if (n < 0 && !w->err)
			w->err = n;
		else if (n > 0)
			w_put(w, tmp, (size_t)n);
		break;
	case SHK_STRING: w_string(w, v->u.str.s, v->u.str.len); break;
	case SHK_ARRAY:
		w_byte(w, '[');
		for (size_t i = 0; i < v->u.arr.len && !w->err; i++) {
			if (i)
				w_byte(w, ',');
			w_value(w, v->u.arr.items[i]);
		}
		w_byte(w, ']');
		break;
	case SHK_OBJECT:
		w_byte(w, '{');
		for (size_t i = 0; i < v->u.obj.len && !w->err; i++) {
			const shk_val *k = v->u.obj.m[i].key;
			if (i)
				w_byte(w, ',');
			w_string(w, k->u.str.s, k->u.str.len);
			w_byte(w, ':');
			w_value(w, v->u.obj.m[i].value);
		}
		w_byte(w, '}');
		break;
	case SHK_FOREIGN:
		if (!w->err)
			w->err = -EINVAL;
		break;
	}
}

int shk_canon_write(const shk_val *v, shk_canon_sink sink, void *ctx)
{
	struct writer w;

	if (!sink || shk_canon_check(v, SHK_CANON_NO_DEPTH_LIMIT) != SHK_CANON_OK)
		return -EINVAL;
	w.sink = sink;
	w.ctx = ctx;
	w.err = 0;
	w.len = 0;
	w_value(&w, v);
	w_flush(&w);
	return w.err;
}

/* ---- dump and digests ---------------------------------------------------- */

struct membuf {
	char *buf;
	size_t len, cap;
};

static int membuf_sink(void *ctx, const char *bytes, size_t len)
{
	struct membuf *m = ctx;

	if (len >= m->cap - m->len) {
		size_t ncap = m->cap ? m->cap : 256;
		while (len >= ncap - m->len) {
			if (ncap > SIZE_MAX / 2)
				return -ENOMEM;
			ncap *= 2;
		}
		char *nb = realloc(m->buf, ncap);
		if (!nb)
			return -ENOMEM;
		m->buf = nb;
		m->cap = ncap;
	}
	memcpy(m->buf + m->len, bytes, len);
	m->len += len;
	return 0;
}

int shk_canon_dump(const shk_val *v, char **ret_buf, size_t *ret_len)
{
	struct membuf m = { NULL, 0, 0 };
	int r;

	if (!ret_buf)
		return -EINVAL;
	r = membuf_sink(&m, "", 0); /* so that even "" has a buffer */
	if (r == 0)
		r = shk_canon_write(v, membuf_sink, &m);
	if (r < 0) {
		free(m.buf);
		return r;
	}
	m.buf[m.len] = '\0';
	*ret_buf = m.buf;
	if (ret_len)
		*ret_len = m.len;
	return 0;
}

static int sha256_sink(void *ctx, const char *bytes, size_t len)
{
	shk_sha256_update(ctx, bytes, len);
	return 0;
}

int shk_canon_sha256(const shk_val *v, uint8_t ret_digest[SHK_SHA256_LEN])
{
	shk_sha256 st;
	int r;

	if (!ret_digest)
		return -EINVAL;
	shk_sha256_init(&st);
	r = shk_canon_write(v, sha256_sink, &st);
	if (r == 0)
		shk_sha256_final(&st, ret_digest);
	return r;
}

void shk_hex(const uint8_t *bytes, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[bytes[i] >> 4];
		out[2 * i + 1] = hex[bytes[i] & 15];
	}
	out[2 * n] = '\0';
}
