/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the value model and the canonicaliser.
 *
 * Arbitrary bytes are (1) parsed as JSON: whatever parses must be canonical
 * (jansson refuses invalid UTF-8, NaN and nesting beyond 2048), serialise,
 * re-parse to an equal value and re-serialise to identical bytes, and its
 * streamed SHA-256 must equal the SHA-256 of the dumped bytes; (2) taken as a
 * raw string: the UTF-8 validator and the escaper must agree with jansson;
 * (3) taken as doubles: repr must read back to the same double and the fast
 * path must agree with the exact snprintf/strtod search.
 * Any broken invariant aborts, which libFuzzer reports as a crash.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include <shackle/canon.h>
#include <shackle/json.h>

#include "core/json_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define require(cond) do { if (!(cond)) abort(); } while (0)

static void roundtrip_canonical(shk_doc *doc, const shk_val *v)
{
	char *a = NULL, *b = NULL;
	size_t alen, blen;
	shk_val *w = NULL, *c;
	shk_parse_error err;
	uint8_t d1[SHK_SHA256_LEN], d2[SHK_SHA256_LEN];

	require(shk_canon_check(v, SHK_CANON_NO_DEPTH_LIMIT) == SHK_CANON_OK);
	(void)shk_canon_check(v, SHK_CANON_MAX_DEPTH);
	(void)shk_canon_check_params(v);
	require(shk_val_equal(v, v));
	c = shk_val_copy(doc, v);
	require(c && shk_val_equal(v, c));

	require(shk_canon_dump(v, &a, &alen) == 0);
	require(strlen(a) <= alen && a[alen] == '\0');
	require(shk_json_parse(doc, a, alen, "canonical", &w, &err) == 0);
	require(shk_val_equal(v, w));
	require(shk_canon_dump(w, &b, &blen) == 0);
	require(alen == blen && memcmp(a, b, alen) == 0);

	require(shk_canon_sha256(v, d1) == 0);
	crypto_hash_sha256(d2, (const unsigned char *)a, alen);
	require(memcmp(d1, d2, sizeof(d1)) == 0);
	free(a);
	free(b);
}

static void raw_string(shk_doc *doc, const uint8_t *data, size_t size)
{
	shk_val *s = shk_string(doc, (const char *)data, size), *w = NULL;
	shk_parse_error err;
	char *buf = NULL;
	size_t len;

	require(s);
	if (shk_canon_check(s, 0) != SHK_CANON_OK) {
		require(shk_canon_dump(s, &buf, &len) < 0 && buf == NULL);
		return;
	}
	/* Our validator accepted it: jansson must read the escaped form back to
	 * exactly these bytes. */
	require(shk_canon_dump(s, &buf, &len) == 0);
	require(shk_json_parse(doc, buf, len, "string", &w, &err) == 0);
	require(shk_val_equal(s, w));
	free(buf);
}

static void check_real(double d)
{
	char out[32], slow[32];
	int n = shk_canon_format_real(d, out, sizeof(out));

	if (!isfinite(d)) {
		require(n < 0);
		return;
	}
	require(n > 0 && n < (int)sizeof(out) && (size_t)n == strlen(out));
	require(strtod(out, NULL) == d || (d == 0 && strtod(out, NULL) == 0));
	require(!!signbit(d) == (out[0] == '-'));
	/* Fast path and exact search must agree byte for byte. */
	require(shk_canon_format_real_slow(d, slow, sizeof(slow)) == n);
	require(memcmp(out, slow, (size_t)n + 1) == 0);
}

static void raw_doubles(const uint8_t *data, size_t size)
{
	static const double p10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
				      1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
				      1e20, 1e21, 1e22, 1e23, 1e24, 1e25 };

	for (size_t i = 0; i + 8 <= size && i < 16; i += 8) {
		double d;
		uint64_t u;
		memcpy(&d, data + i, 8);
		memcpy(&u, data + i, 8);
		check_real(d);
		/* Short decimals (the fast path's domain) and their neighbours. */
		d = (double)((u >> 8) % 100000000000000000ULL) / p10[(u & 0xff) % 26];
		check_real(d);
		check_real(nextafter(d, 0));
		check_real(nextafter(d, 1e300));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shk_doc *doc = NULL;
	shk_val *v = NULL;
	shk_parse_error err;

	if (shk_doc_new(&doc) < 0)
		return 0;
	if (shk_json_parse(doc, (const char *)data, size, "fuzz", &v, &err) == 0)
		roundtrip_canonical(doc, v);
	else
		require(err.text[0] != '\0' && err.line >= 0 && err.column >= 0);
	raw_string(doc, data, size);
	raw_doubles(data, size);
	shk_doc_free(doc);
	return 0;
}
