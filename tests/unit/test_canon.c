/* SPDX-License-Identifier: MIT */
/*
 * Canonical JSON, digests and the value model.
 *
 * Every expected byte string below follows from Python's documented rules for
 * json.dumps(v, sort_keys=True, separators=(",",":"), ensure_ascii=False,
 * allow_nan=False) and float.__repr__; they were cross-checked with python3
 * when the table was written. The test itself runs no Python.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <shackle/canon.h>
#include <shackle/json.h>

#include "core/json_internal.h"
#include "testutil.h"
#include "checkrun.h"

static shk_doc *doc;

static void setup(void)
{
	ck_assert_int_eq(shk_doc_new(&doc), 0);
}

static void teardown(void)
{
	shk_doc_free(doc);
	doc = NULL;
}

/* Canonical bytes of v must be exactly want (want_len bytes). */
static void expect_canon(const shk_val *v, const char *want, size_t want_len)
{
	char *buf = NULL;
	size_t len = 0;

	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(shk_canon_check(v, SHK_CANON_NO_DEPTH_LIMIT), SHK_CANON_OK);
	ck_assert_int_eq(shk_canon_dump(v, &buf, &len), 0);
	if (len != want_len || memcmp(buf, want, len) != 0)
		ck_abort_msg("canonical form\n  got  %s\n  want %s", buf, want);
	free(buf);
}

static shk_val *parse(const char *text)
{
	shk_val *v = NULL;
	shk_parse_error err;
	int r = shk_json_parse(doc, text, strlen(text), "test", &v, &err);

	if (r < 0)
		ck_abort_msg("parse of %s failed: %s:%d:%d: %s", text, err.source, err.line,
			     err.column, err.text);
	return v;
}

/* ---- numbers ------------------------------------------------------------- */

static const struct {
	double d;
	const char *repr;
} reals[] = {
	{ 1.0, "1.0" },
	{ 0.1, "0.1" },
	{ -0.0, "-0.0" },
	{ 0.0, "0.0" },
	{ 0.5, "0.5" },
	{ 100.0, "100.0" },
	{ 1e-05, "1e-05" },
	{ 0.0001, "0.0001" },
	{ 0.00012345, "0.00012345" },
	{ 1e-07, "1e-07" },
	{ 1e15, "1000000000000000.0" },
	{ 1234567890123456.0, "1234567890123456.0" },
	{ 9999999999999998.0, "9999999999999998.0" },
	{ 1e16, "1e+16" },
	{ 12345678901234567.0, "1.2345678901234568e+16" },
	{ 9007199254740993.0, "9007199254740992.0" }, /* 2^53+1 is not a double */
	{ 9223372036854775808.0, "9.223372036854776e+18" },
	{ 1e22, "1e+22" },
	{ 1.5e300, "1.5e+300" },
	{ -1e-300, "-1e-300" },
	{ 5e-324, "5e-324" },
	{ 1.5e-323, "1.5e-323" },
	{ 2.2250738585072014e-308, "2.2250738585072014e-308" },
	{ 1.7976931348623157e308, "1.7976931348623157e+308" },
	{ 123456789.123, "123456789.123" },
	{ 0.1 + 0.2, "0.30000000000000004" },
	{ -2.5, "-2.5" },
	{ 1e23, "1e+23" },
	{ 0x1p-1022, "2.2250738585072014e-308" },
	{ 0x1p60, "1.152921504606847e+18" },
	{ 0x1p-20, "9.5367431640625e-07" },
};

START_TEST(test_real_repr)
{
	char buf[40];
	int n = shk_canon_format_real(reals[_i].d, buf, sizeof(buf));

	ck_assert_int_eq(n, (int)strlen(reals[_i].repr));
	ck_assert_str_eq(buf, reals[_i].repr);
	/* The snprintf/strtod search agrees with the fast path. */
	ck_assert_int_eq(shk_canon_format_real_slow(reals[_i].d, buf, sizeof(buf)), n);
	ck_assert_str_eq(buf, reals[_i].repr);
	expect_canon(shk_real(doc, reals[_i].d), reals[_i].repr, strlen(reals[_i].repr));
	/* And the text reads back to the same double. */
	ck_assert(strtod(buf, NULL) == reals[_i].d);
}
END_TEST

START_TEST(test_real_nonfinite)
{
	char buf[40];

	ck_assert_int_eq(shk_canon_format_real(NAN, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(shk_canon_format_real(INFINITY, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(shk_canon_format_real(-INFINITY, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(shk_canon_format_real(1.0, buf, 8), -EINVAL);
}
END_TEST

/*
 * The fast path and the exact snprintf/strtod search must agree on many
 * pseudo-random doubles of both kinds: short decimals (the fast path's
 * domain, and their neighbours one ulp away) and arbitrary bit patterns.
 */
START_TEST(test_real_paths_agree)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	char a[40], b[40];

	for (int i = 0; i < 20000; i++) {
		double d;
		uint64_t u;

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		u = s ^ (s >> 29);
		if (i % 2) {
			memcpy(&d, &u, sizeof(d));
		} else {
			d = (double)(u % 10000000000000000ULL) / pow(10, (double)(i % 23));
			if (i % 6 == 2)
				d = nextafter(d, 1e300);
		}
		int n = shk_canon_format_real(d, a, sizeof(a));
		if (!isfinite(d)) {
			ck_assert_int_eq(n, -EINVAL);
			continue;
		}
		ck_assert_int_gt(n, 0);
		ck_assert_int_eq(shk_canon_format_real_slow(d, b, sizeof(b)), n);
		if (strcmp(a, b) != 0 || strtod(a, NULL) != d)
			ck_abort_msg("%a: fast %s, exact %s", d, a, b);
	}
}
END_TEST

static const struct {
	int64_t i;
	const char *text;
} ints[] = {
	{ 0, "0" },
	{ -1, "-1" },
	{ 7, "7" },
	{ INT64_MIN, "-9223372036854775808" },
	{ INT64_MAX, "9223372036854775807" },
	{ 9007199254740993LL, "9007199254740993" },
	{ -9007199254740993LL, "-9007199254740993" },
};

START_TEST(test_int)
{
	expect_canon(shk_int(doc, ints[_i].i), ints[_i].text, strlen(ints[_i].text));
	/* Through the parser too: jansson keeps every int64 exactly. */
	expect_canon(parse(ints[_i].text), ints[_i].text, strlen(ints[_i].text));
}
END_TEST

/* Numbers as they arrive in JSON text: int stays int, anything with a point
 * or an exponent is a float (Python's json.loads does the same). */
START_TEST(test_parsed_numbers)
{
	static const char *const pairs[][2] = {
		{ "1e16", "1e+16" }, { "1E+16", "1e+16" }, { "1.0", "1.0" },
		{ "-0", "0" },        { "-0.0", "-0.0" },  { "1e2", "100.0" },
		{ "0.1", "0.1" },     { "1e-5", "1e-05" }, { "[1,1.0,true]", "[1,1.0,true]" },
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		expect_canon(parse(pairs[i][0]), pairs[i][1], strlen(pairs[i][1]));
}
END_TEST

/* ---- strings ------------------------------------------------------------- */

START_TEST(test_string_escapes)
{
	static const char in[] = "\"\\\n\r\t\b\f\x01\x1f\x7f/";
	static const char want[] = "\"\\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u001f\x7f/\"";
	expect_canon(shk_string(doc, in, sizeof(in) - 1), want, sizeof(want) - 1);
}
END_TEST

START_TEST(test_string_nul_and_unicode)
{
	/* Embedded NUL, U+2028 (raw under ensure_ascii=False), é, emoji. */
	static const char in[] = "a\0b\xe2\x80\xa8\xc3\xa9\xf0\x9f\x98\x80";
	static const char want[] = "\"a\\u0000b\xe2\x80\xa8\xc3\xa9\xf0\x9f\x98\x80\"";
	expect_canon(shk_string(doc, in, sizeof(in) - 1), want, sizeof(want) - 1);
	/* The same through the parser, written with JSON escapes. */
	expect_canon(parse("\"a\\u0000b\\u2028\\u00e9\\ud83d\\ude00\""), want, sizeof(want) - 1);
	expect_canon(shk_string(doc, "", 0), "\"\"", 2);
}
END_TEST

START_TEST(test_string_every_control)
{
	char in[32], want[256];
	size_t k = 0;

	for (int c = 0; c < 32; c++)
		in[c] = (char)c;
	want[k++] = '"';
	for (int c = 0; c < 32; c++) {
		const char *e = NULL;
		switch (c) {
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		}
		if (e)
			k += (size_t)sprintf(want + k, "%s", e);
		else
			k += (size_t)sprintf(want + k, "\\u%04x", c);
	}
	want[k++] = '"';
	expect_canon(shk_string(doc, in, sizeof(in)), want, k);
	ck_assert(strstr(want, "\\u001b") && strstr(want, "\\u000b"));
}
END_TEST

/* A string far longer than the writer's buffer, with escapes on both sides
 * of buffer boundaries. */
START_TEST(test_string_long)
{
	size_t n = 100000, k = 0;
	char *in = malloc(n), *want = malloc(2 * n + 2);

	ck_assert(in && want);
	want[k++] = '"';
	for (size_t i = 0; i < n; i++) {
		in[i] = i % 1000 == 999 ? '\n' : (char)('a' + i % 26);
		if (in[i] == '\n') {
			want[k++] = '\\';
			want[k++] = 'n';
		} else {
			want[k++] = in[i];
		}
	}
	want[k++] = '"';
	expect_canon(shk_string(doc, in, n), want, k);
	free(in);
	free(want);
}
END_TEST

/* ---- containers and key order -------------------------------------------- */

START_TEST(test_key_order)
{
	static const char *const keys[] = {
		"b", "a", "ab", "", "\xc3\xa9", "z", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
		"\xef\xbd\xa1", "A", "a\x7f", "aa",
	};
	/* Code-point order: U+FF61 (EF BD A1) before U+1F600 (F0 ...), which
	 * UTF-16 order would reverse. */
	static const char want[] =
		"{\"\":3,\"A\":9,\"a\":1,\"aa\":11,\"ab\":2,\"a\x7f\":10,\"b\":0,\"z\":5,"
		"\"\xc3\xa9\":4,\"\xe2\x82\xac\":6,\"\xef\xbd\xa1\":8,\"\xf0\x9f\x98\x80\":7}";
	shk_val *o = shk_object(doc);

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		ck_assert_int_eq(shk_object_set_str(o, keys[i], shk_int(doc, (int64_t)i)), 0);
	expect_canon(o, want, sizeof(want) - 1);
	ck_assert_int_eq(shk_object_set_str(o, "ab", shk_null(doc)), -EEXIST);
	ck_assert_uint_eq(shk_val_len(o), 12);
	ck_assert_int_eq(shk_val_int(shk_object_get(o, "aa")), 11);
	ck_assert_int_eq(shk_val_int(shk_object_get(o, "")), 3);
	ck_assert_ptr_null(shk_object_get(o, "a\x7f\x7f"));
	ck_assert_ptr_null(shk_object_get(o, "c"));
	/* Keys with NUL bytes are found by length. */
	ck_assert_int_eq(shk_object_set(o, shk_string(doc, "a\0b", 3), shk_int(doc, 99)), 0);
	ck_assert_int_eq(shk_val_int(shk_object_getn(o, "a\0b", 3)), 99);
	ck_assert_ptr_null(shk_object_getn(o, "a\0c", 3));
}
END_TEST

START_TEST(test_prefix_keys_parsed)
{
	const char *in = "{\"abc\":1,\"ab\":2,\"a\":3,\"abd\":4,\"b\":{\"y\":[],\"x\":{}}}";
	const char *want = "{\"a\":3,\"ab\":2,\"abc\":1,\"abd\":4,\"b\":{\"x\":{},\"y\":[]}}";
	expect_canon(parse(in), want, strlen(want));
}
END_TEST

START_TEST(test_nested)
{
	const char *in = " { \"a\" : { \"b\" : [ { } , [ ] , { \"e\" : false , \"d\" : true , \"c\" : null } ] } } ";
	const char *want = "{\"a\":{\"b\":[{},[],{\"c\":null,\"d\":true,\"e\":false}]}}";
	expect_canon(parse(in), want, strlen(want));
	expect_canon(parse("[]"), "[]", 2);
	expect_canon(parse("{}"), "{}", 2);
	expect_canon(parse("null"), "null", 4);
	expect_canon(parse("[[[[\"x\"]]]]"), "[[[[\"x\"]]]]", 11);
}
END_TEST

START_TEST(test_sha256)
{
	uint8_t d[SHK_SHA256_LEN];
	char hex[SHK_SHA256_HEX_LEN + 1];

	ck_assert_int_eq(shk_canon_sha256(parse("{ }"), d), 0);
	shk_hex(d, sizeof(d), hex);
	ck_assert_str_eq(hex, "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
	ck_assert_int_eq(shk_canon_sha256(parse("{\"b\":null,\"a\":[1,2.5,\"x\\u00e9\"]}"), d), 0);
	shk_hex(d, sizeof(d), hex);
	ck_assert_str_eq(hex, "7be060dce53e0a0844c7d1f485934a961632524c05d9d5736987a77b4922e9c7");
	ck_assert_int_eq(shk_canon_sha256(shk_real(doc, NAN), d), -EINVAL);
}
END_TEST

struct sink_state {
	int calls;
	size_t bytes;
	int fail_at; /* fail on this call (1-based); 0: never */
};

static int counting_sink(void *ctx, const char *bytes, size_t len)
{
	struct sink_state *st = ctx;

	(void)bytes;
	st->calls++;
	st->bytes += len;
	return st->calls == st->fail_at ? -EPIPE : 0;
}

START_TEST(test_sink)
{
	shk_val *a = shk_array(doc);
	struct sink_state st = { 0, 0, 0 };
	char *buf;
	size_t len;

	for (int i = 0; i < 20000; i++)
		ck_assert_int_eq(shk_array_append(a, shk_cstring(doc, "x\n")), 0);
	ck_assert_int_eq(shk_canon_dump(a, &buf, &len), 0);
	free(buf);
	/* Output is batched: far fewer sink calls than values. */
	ck_assert_int_eq(shk_canon_write(a, counting_sink, &st), 0);
	ck_assert_uint_eq(st.bytes, len);
	ck_assert_int_le(st.calls, (int)(len / 1024) + 2);
	/* The sink's error stops the walk and is returned as is. */
	st = (struct sink_state){ 0, 0, 2 };
	ck_assert_int_eq(shk_canon_write(a, counting_sink, &st), -EPIPE);
	ck_assert_int_eq(st.calls, 2);
	ck_assert_int_eq(shk_canon_write(a, NULL, NULL), -EINVAL);
	/* Nothing at all reaches the sink for a value that is not canonical. */
	st = (struct sink_state){ 0, 0, 0 };
	ck_assert_int_eq(shk_array_append(a, shk_real(doc, NAN)), 0);
	ck_assert_int_eq(shk_canon_write(a, counting_sink, &st), -EINVAL);
	ck_assert_int_eq(st.calls, 0);
}
END_TEST

/* ---- structural rejection ------------------------------------------------- */

static shk_val *obj1(const char *key, shk_val *value)
{
	shk_val *o = shk_object(doc);
	ck_assert_int_eq(shk_object_set_str(o, key, value), 0);
	return o;
}

static shk_val *nest_arrays(int levels, shk_val *inner)
{
	for (int i = 0; i < levels; i++) {
		shk_val *a = shk_array(doc);
		ck_assert_int_eq(shk_array_append(a, inner), 0);
		inner = a;
	}
	return inner;
}

START_TEST(test_reject_structural)
{
	shk_val *o = shk_object(doc);
	char *buf = NULL;

	ck_assert_int_eq(shk_object_set(o, shk_int(doc, 1), shk_int(doc, 2)), 0);
	ck_assert_int_eq(shk_canon_check(o, -1), SHK_CANON_NON_STRING_KEY);
	ck_assert_int_eq(shk_canon_check_params(o), SHK_CANON_NON_STRING_KEY);
	ck_assert_int_eq(shk_canon_dump(o, &buf, NULL), -EINVAL);
	ck_assert_ptr_null(buf);

	ck_assert_int_eq(shk_canon_check_params(obj1("x", shk_real(doc, NAN))), SHK_CANON_NON_FINITE);
	ck_assert_int_eq(shk_canon_check_params(obj1("x", shk_real(doc, INFINITY))), SHK_CANON_NON_FINITE);
	ck_assert_int_eq(shk_canon_check(shk_real(doc, -INFINITY), -1), SHK_CANON_NON_FINITE);
	ck_assert_int_eq(shk_canon_check_params(obj1("x", shk_foreign(doc))), SHK_CANON_FOREIGN);
	ck_assert_int_eq(shk_canon_check(NULL, -1), SHK_CANON_FOREIGN);
	ck_assert_int_eq(shk_canon_check_params(NULL), SHK_CANON_NOT_OBJECT);
	ck_assert_int_eq(shk_canon_check_params(shk_array(doc)), SHK_CANON_NOT_OBJECT);
	ck_assert_int_eq(shk_canon_check_params(shk_cstring(doc, "{}")), SHK_CANON_NOT_OBJECT);
	ck_assert_int_eq(shk_canon_check_params(shk_null(doc)), SHK_CANON_NOT_OBJECT);
	ck_assert_int_eq(shk_canon_check_params(shk_object(doc)), SHK_CANON_OK);
	/* A non-object is canonicalisable as such; only params must be objects. */
	ck_assert_int_eq(shk_canon_check(shk_array(doc), SHK_CANON_MAX_DEPTH), SHK_CANON_OK);
	/* Deep inside arrays too. */
	ck_assert_int_eq(shk_canon_check_params(obj1("a", nest_arrays(5, shk_real(doc, NAN)))),
			 SHK_CANON_NON_FINITE);
}
END_TEST

START_TEST(test_reject_marker)
{
	ck_assert_int_eq(shk_canon_check_params(parse("{\"__noncanonical__\":true,\"tool\":\"x\"}")),
			 SHK_CANON_MARKER);
	/* Only the boolean true, as Python's `is True`: 1, "true", false don't count. */
	ck_assert_int_eq(shk_canon_check_params(parse("{\"__noncanonical__\":1}")), SHK_CANON_OK);
	ck_assert_int_eq(shk_canon_check_params(parse("{\"__noncanonical__\":1.0}")), SHK_CANON_OK);
	ck_assert_int_eq(shk_canon_check_params(parse("{\"__noncanonical__\":\"true\"}")), SHK_CANON_OK);
	ck_assert_int_eq(shk_canon_check_params(parse("{\"__noncanonical__\":false}")), SHK_CANON_OK);
	/* Top level only. */
	ck_assert_int_eq(shk_canon_check_params(parse("{\"a\":{\"__noncanonical__\":true}}")), SHK_CANON_OK);
	/* The marker is canonical JSON in itself. */
	ck_assert_int_eq(shk_canon_check(parse("{\"__noncanonical__\":true}"), -1), SHK_CANON_OK);
}
END_TEST

START_TEST(test_reject_order)
{
	/* NOT_OBJECT before anything; MARKER before the structural walk. */
	shk_val *o = obj1("__noncanonical__", shk_bool(doc, true));
	ck_assert_int_eq(shk_object_set_str(o, "nan", shk_real(doc, NAN)), 0);
	ck_assert_int_eq(shk_canon_check_params(o), SHK_CANON_MARKER);
	ck_assert_int_eq(shk_canon_check(o, -1), SHK_CANON_NON_FINITE);
}
END_TEST

START_TEST(test_reject_depth)
{
	/* params is depth 0; a value at depth 64 is fine, at depth 65 is not. */
	shk_val *ok = obj1("a", nest_arrays(63, shk_int(doc, 1)));
	shk_val *deep = obj1("a", nest_arrays(64, shk_int(doc, 1)));
	shk_val *deep_empty = obj1("a", nest_arrays(64, shk_array(doc)));

	ck_assert_int_eq(shk_canon_check_params(ok), SHK_CANON_OK);
	ck_assert_int_eq(shk_canon_check_params(deep), SHK_CANON_TOO_DEEP);
	ck_assert_int_eq(shk_canon_check_params(deep_empty), SHK_CANON_TOO_DEEP);
	ck_assert_int_eq(shk_canon_check(deep, SHK_CANON_NO_DEPTH_LIMIT), SHK_CANON_OK);
	ck_assert_int_eq(shk_canon_check(deep, 65), SHK_CANON_OK);
	ck_assert_int_eq(shk_canon_check(shk_int(doc, 1), 0), SHK_CANON_OK);
	ck_assert_int_eq(shk_canon_check(shk_array(doc), 0), SHK_CANON_OK);
	ck_assert_int_eq(shk_canon_check(nest_arrays(1, shk_null(doc)), 0), SHK_CANON_TOO_DEEP);
	/* A cycle (only possible through the API) is refused, not followed. */
	shk_val *a = shk_array(doc);
	ck_assert_int_eq(shk_array_append(a, a), 0);
	ck_assert_int_eq(shk_canon_check(a, SHK_CANON_NO_DEPTH_LIMIT), SHK_CANON_TOO_DEEP);
	ck_assert(!shk_val_equal(a, a));
	ck_assert_ptr_null(shk_val_copy(doc, a));
}
END_TEST

static const struct {
	const char *bytes;
	size_t len;
	bool valid;
} utf8_cases[] = {
	{ "plain ascii", 11, true },
	{ "\xc3\xa9", 2, true },
	{ "\xed\x9f\xbf", 3, true },          /* U+D7FF */
	{ "\xee\x80\x80", 3, true },          /* U+E000 */
	{ "\xf4\x8f\xbf\xbf", 4, true },      /* U+10FFFF */
	{ "\xf0\x90\x80\x80", 4, true },      /* U+10000 */
	{ "\xc0\x80", 2, false },             /* overlong NUL */
	{ "\xc1\xbf", 2, false },             /* overlong */
	{ "\xe0\x80\x80", 3, false },         /* overlong */
	{ "\xe0\x9f\xbf", 3, false },         /* overlong U+07FF */
	{ "\xf0\x8f\xbf\xbf", 4, false },     /* overlong U+FFFF */
	{ "\xed\xa0\x80", 3, false },         /* U+D800 */
	{ "\xed\xbf\xbf", 3, false },         /* U+DFFF */
	{ "\xf4\x90\x80\x80", 4, false },     /* U+110000 */
	{ "\xf5\x80\x80\x80", 4, false },
	{ "\xff", 1, false },
	{ "\x80", 1, false },                 /* lone continuation */
	{ "abcdefgh\xc3", 9, false },         /* truncated after an ASCII run */
	{ "\xe2\x82", 2, false },
	{ "\xe2\x28\xa1", 3, false },
	{ "\xf0\x9f\x98", 3, false },
};

START_TEST(test_utf8)
{
	shk_val *s = shk_string(doc, utf8_cases[_i].bytes, utf8_cases[_i].len);
	shk_canon_status want = utf8_cases[_i].valid ? SHK_CANON_OK : SHK_CANON_BAD_UTF8;
	shk_val *o = shk_object(doc);

	ck_assert_int_eq(shk_canon_check(s, -1), want);
	/* As a key, too. */
	ck_assert_int_eq(shk_object_set(o, shk_string(doc, utf8_cases[_i].bytes, utf8_cases[_i].len),
					shk_null(doc)), 0);
	ck_assert_int_eq(shk_canon_check_params(o), want);
}
END_TEST

START_TEST(test_status_names)
{
	ck_assert_str_eq(shk_canon_status_name(SHK_CANON_OK), "ok");
	ck_assert_str_eq(shk_canon_status_name(SHK_CANON_NOT_OBJECT), "not_an_object");
	for (int s = SHK_CANON_OK; s <= SHK_CANON_MARKER; s++)
		ck_assert_str_ne(shk_canon_status_name((shk_canon_status)s), "unknown");
}
END_TEST

/* ---- equality ------------------------------------------------------------ */

START_TEST(test_equality)
{
	shk_val *t = shk_bool(doc, true), *one = shk_int(doc, 1), *onef = shk_real(doc, 1.0);
	shk_val *p53 = shk_int(doc, 9007199254740993LL), *p53f = shk_real(doc, 9007199254740992.0);
	shk_val *nan = shk_real(doc, NAN), *f = shk_foreign(doc);

	ck_assert(shk_val_equal(t, one) && shk_val_equal(one, onef) && shk_val_equal(t, onef));
	ck_assert(shk_val_equal(shk_bool(doc, false), shk_real(doc, -0.0)));
	ck_assert(shk_val_equal(shk_real(doc, 0.0), shk_real(doc, -0.0)));
	ck_assert(!shk_val_equal(p53, p53f)); /* exact, not via a rounded double */
	ck_assert(shk_val_equal(shk_int(doc, 9007199254740992LL), p53f));
	ck_assert(shk_val_equal(shk_int(doc, INT64_MIN), shk_real(doc, -0x1p63)));
	ck_assert(!shk_val_equal(shk_int(doc, INT64_MAX), shk_real(doc, 0x1p63)));
	ck_assert(!shk_val_equal(one, shk_real(doc, 1.5)));
	ck_assert(!shk_val_equal(nan, nan) && !shk_val_equal(f, f));
	ck_assert(!shk_val_equal(shk_null(doc), shk_int(doc, 0)));
	ck_assert(shk_val_equal(shk_null(doc), shk_null(doc)));
	ck_assert(!shk_val_equal(shk_cstring(doc, "1"), one));
	ck_assert(shk_val_equal(shk_string(doc, "a\0b", 3), shk_string(doc, "a\0b", 3)));
	ck_assert(!shk_val_equal(shk_string(doc, "a\0b", 3), shk_string(doc, "a\0c", 3)));
	ck_assert(!shk_val_equal(one, NULL) && !shk_val_equal(NULL, NULL));
	/* Deep; object equality independent of insertion order. */
	ck_assert(shk_val_equal(parse("{\"a\":[1,{\"x\":true}],\"b\":null}"),
				parse("{\"b\":null,\"a\":[1.0,{\"x\":1}]}")));
	ck_assert(!shk_val_equal(parse("{\"a\":[1,2]}"), parse("{\"a\":[2,1]}")));
	ck_assert(!shk_val_equal(parse("{\"a\":1}"), parse("{\"a\":1,\"b\":1}")));
	ck_assert(!shk_val_equal(parse("{\"a\":1}"), parse("{\"b\":1}")));
	ck_assert(!shk_val_equal(parse("[]"), parse("{}")));
	ck_assert(!shk_val_equal(parse("[[]]"), parse("[[null]]")));

	/* Non-string keys (API only): matched by value, whatever the order. */
	shk_val *o1 = shk_object(doc), *o2 = shk_object(doc);
	ck_assert_int_eq(shk_object_set(o1, shk_int(doc, 1), shk_cstring(doc, "a")), 0);
	ck_assert_int_eq(shk_object_set(o1, shk_null(doc), shk_cstring(doc, "b")), 0);
	ck_assert_int_eq(shk_object_set_str(o1, "s", one), 0);
	ck_assert_int_eq(shk_object_set(o2, shk_null(doc), shk_cstring(doc, "b")), 0);
	ck_assert_int_eq(shk_object_set_str(o2, "s", onef), 0);
	ck_assert(!shk_val_equal(o1, o2));
	ck_assert_int_eq(shk_object_set(o2, shk_real(doc, 1.0), shk_cstring(doc, "a")), 0);
	ck_assert(shk_val_equal(o1, o2));
	/* String keys sort before the others. */
	ck_assert(shk_val_str_eq(shk_object_key_at(o1, 0), "s"));
	ck_assert_ptr_null(shk_object_get(o1, "1"));
}
END_TEST

START_TEST(test_copy_and_accessors)
{
	shk_doc *d2;
	shk_val *v = parse("{\"k\":[1,2.5,\"s\",null,true,{}],\"j\":\"x\"}"), *c;
	double num;
	size_t len;

	ck_assert_int_eq(shk_doc_new(&d2), 0);
	c = shk_val_copy(d2, v);
	shk_doc_free(doc); /* the copy must not depend on the original */
	doc = NULL;
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	static const char want[] = "{\"j\":\"x\",\"k\":[1,2.5,\"s\",null,true,{}]}";
	expect_canon(c, want, sizeof(want) - 1);
	ck_assert_int_eq(shk_val_type(c), SHK_OBJECT);
	ck_assert_int_eq(shk_val_type(NULL), SHK_FOREIGN);
	ck_assert_str_eq(shk_val_str(shk_object_key_at(c, 0), &len), "j");
	ck_assert_uint_eq(len, 1);
	ck_assert_ptr_null(shk_object_key_at(c, 2));
	ck_assert_ptr_null(shk_array_at(c, 0));
	const shk_val *k = shk_object_get(c, "k");
	ck_assert_uint_eq(shk_val_len(k), 6);
	ck_assert(shk_val_number(shk_array_at(k, 1), &num) && num == 2.5);
	ck_assert(shk_val_number(shk_array_at(k, 4), &num) && num == 1.0);
	ck_assert(!shk_val_number(shk_array_at(k, 2), &num));
	ck_assert(shk_val_str_eq(shk_array_at(k, 2), "s"));
	ck_assert(!shk_val_str_eq(shk_array_at(k, 2), "st"));
	ck_assert_ptr_null(shk_val_str(shk_array_at(k, 0), &len));
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(shk_val_int(shk_array_at(k, 1)), 0);
	ck_assert_ptr_null(shk_array_at(k, 6));
	/* Mixing documents is refused. */
	ck_assert_int_eq(shk_array_append(shk_array(doc), shk_null(d2)), -EINVAL);
	ck_assert_int_eq(shk_array_append(shk_object(doc), shk_null(doc)), -EINVAL);
	ck_assert_int_eq(shk_object_set_str(shk_array(doc), "a", shk_null(doc)), -EINVAL);
	ck_assert_int_eq(shk_object_set(shk_object(doc), NULL, shk_null(doc)), -EINVAL);
	ck_assert_int_eq(shk_object_set_str(shk_object(doc), "a", NULL), -EINVAL);
	/* A NULL value is a constructor out of memory; the rest is set_str's. */
	shk_val *po = shk_object(doc);
	ck_assert_int_eq(shk_object_put(po, "a", NULL), -ENOMEM);
	ck_assert_int_eq(shk_object_put(po, "a", shk_int(doc, 1)), 0);
	ck_assert_int_eq(shk_object_put(po, "a", shk_int(doc, 2)), -EEXIST);
	ck_assert_int_eq(shk_object_put(shk_array(doc), "a", shk_null(doc)), -EINVAL);
	ck_assert_int_eq(shk_val_int(shk_object_get(po, "a")), 1);
	ck_assert_ptr_null(shk_cstring(doc, NULL));
	ck_assert_ptr_null(shk_null(NULL));
	ck_assert_ptr_null(shk_string(doc, NULL, 3));
	/* A copy within the same document is independent of the original. */
	shk_val *arr = parse("[1,[2]]"), *arr2 = shk_val_copy(doc, arr);
	ck_assert_int_eq(shk_array_append(arr, shk_int(doc, 3)), 0);
	expect_canon(arr2, "[1,[2]]", 7);
	shk_doc_free(d2);
	shk_doc_free(NULL);
}
END_TEST

/* Many members, out of order, inserted one by one (exercises growth). */
START_TEST(test_big_object)
{
	shk_val *o = shk_object(doc), *a = shk_array(doc);
	char key[32];

	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k%d", (i * 7919) % 5000);
		ck_assert_int_eq(shk_object_set_str(o, key, shk_int(doc, i)), 0);
		ck_assert_int_eq(shk_array_append(a, shk_int(doc, i)), 0);
	}
	for (size_t i = 1; i < shk_val_len(o); i++) {
		size_t la, lb;
		const char *ka = shk_val_str(shk_object_key_at(o, i - 1), &la);
		const char *kb = shk_val_str(shk_object_key_at(o, i), &lb);
		ck_assert_int_lt(strcmp(ka, kb), 0);
	}
	for (int i = 0; i < 5000; i += 37) {
		snprintf(key, sizeof(key), "k%d", i);
		ck_assert_ptr_nonnull(shk_object_get(o, key));
		ck_assert_int_eq(shk_val_int(shk_array_at(a, (size_t)i)), i);
	}
	ck_assert_int_eq(shk_canon_check(o, 0), SHK_CANON_TOO_DEEP);
	ck_assert_int_eq(shk_canon_check(o, 1), SHK_CANON_OK);
}
END_TEST

/* ---- parse errors -------------------------------------------------------- */

static void expect_parse_error(const char *text, int line, int column, const char *needle)
{
	shk_val *v = NULL;
	shk_parse_error err;
	int r = shk_json_parse(doc, text, strlen(text), "in.json", &v, &err);

	ck_assert_int_eq(r, -EINVAL);
	ck_assert_ptr_null(v);
	ck_assert_str_eq(err.source, "in.json");
	if (err.line != line || err.column != column || !strstr(err.text, needle))
		ck_abort_msg("%s: got %d:%d \"%s\", want %d:%d containing \"%s\"", text,
			     err.line, err.column, err.text, line, column, needle);
}

START_TEST(test_parse_errors)
{
	expect_parse_error("{\"a\": [1, 2,\n", 2, 1, "end of file");
	expect_parse_error("{\"a\": 1,}", 1, 9, "string or '}' expected");
	expect_parse_error("[1,\n 2,\n]", 3, 1, "unexpected token");
	expect_parse_error("{\"a\":1,\"a\":2}", 1, 8, "a: duplicate key \"a\"");
	expect_parse_error("[{\"b\":[{}, {\"a\":1,\n \"a\":2}]}]", 2, 2, "[0].b[1].a: duplicate key \"a\"");
	expect_parse_error("", 1, 1, "end of file");
	expect_parse_error("{} x", 1, 4, "end of file expected");
	expect_parse_error("9223372036854775808", 1, 19, "64-bit signed range");
	expect_parse_error("[-9223372036854775809]", 1, 21, "64-bit signed range");
	expect_parse_error("1e400", 1, 5, "range of a double");
	expect_parse_error("[NaN]", 1, 4, "invalid token");
	expect_parse_error("\"\\ud800\"", 1, 8, "invalid Unicode");
	expect_parse_error("\"\xc0\x80\"", 1, 2, "unable to decode byte 0xc0");
	/* Columns count characters, not bytes. */
	expect_parse_error("\"\xc3\xa9\xe2\x82\xacx", 1, 4, "premature end");
	expect_parse_error("\n\n  \"abc\n", 3, 6, "unexpected newline");
}
END_TEST

START_TEST(test_load_file_errors)
{
	shk_val *v = NULL;
	shk_parse_error err;
	char path[] = "/tmp/shk-test-canon-XXXXXX";
	int fd;

	ck_assert_int_eq(shk_json_load_file(doc, "/nonexistent/x.json", &v, &err), -ENOENT);
	ck_assert_str_eq(err.source, "/nonexistent/x.json");
	ck_assert_ptr_nonnull(strstr(err.text, strerror(ENOENT)));
	ck_assert_int_eq(shk_json_load_file(doc, "/", &v, &err), -EISDIR);
	ck_assert_ptr_nonnull(strstr(err.text, strerror(EISDIR)));

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "{\"x\": [1,\n  2,\n", 15), 15); /* truncated */
	close(fd);
	ck_assert_int_eq(shk_json_load_file(doc, path, &v, &err), -EINVAL);
	ck_assert_str_eq(err.source, path);
	ck_assert_int_eq(err.line, 3);
	ck_assert_ptr_null(v);
	unlink(path);
}
END_TEST

/* ---- published vectors --------------------------------------------------- */

static void hex_of(const shk_val *v, char *hex)
{
	uint8_t d[SHK_SHA256_LEN];

	ck_assert_int_eq(shk_canon_sha256(v, d), 0);
	shk_hex(d, sizeof(d), hex);
}

START_TEST(test_published_vectors)
{
	const char *dir = getenv("SHACKLE_SHARED_DIR");
	char path[4096];
	shk_val *root = NULL;
	shk_parse_error err;
	const shk_val *fixtures;
	char hex[SHK_SHA256_HEX_LEN + 1];

	snprintf(path, sizeof(path), "%s/conformance/sp1.0/conformance.json", dir ? dir : "");
	if (!dir || access(path, R_OK) != 0) {
		if (shk_test_must_run())
			ck_abort_msg("published vectors not found at %s (SHACKLE_TESTS_MUST_RUN=1)", path);
		fprintf(stderr, "SKIP test_published_vectors: %s not readable\n", path);
		return;
	}
	if (shk_json_load_file(doc, path, &root, &err) < 0)
		ck_abort_msg("%s:%d:%d: %s", err.source, err.line, err.column, err.text);
	fixtures = shk_object_get(root, "fixtures");
	ck_assert_uint_eq(shk_val_len(fixtures), 15);
	for (size_t i = 0; i < shk_val_len(fixtures); i++) {
		const shk_val *fx = shk_array_at(fixtures, i);
		const shk_val *name = shk_object_get(fx, "name");
		const shk_val *params = shk_object_get(shk_object_get(fx, "call"), "params");
		shk_val *sealed = shk_object(doc);

		hex_of(params, hex);
		if (!shk_val_str_eq(shk_object_get(fx, "canonical_hash"), hex))
			ck_abort_msg("%s: canonical_hash %s, computed %s", shk_val_str(name, NULL),
				     shk_val_str(shk_object_get(fx, "canonical_hash"), NULL), hex);
		for (size_t m = 0; m < shk_val_len(fx); m++) {
			const shk_val *k = shk_object_key_at(fx, m);
			if (shk_val_str_eq(k, "vector_hash"))
				continue;
			ck_assert_int_eq(shk_object_set(sealed, (shk_val *)k,
							(shk_val *)shk_object_value_at(fx, m)), 0);
		}
		ck_assert_uint_eq(shk_val_len(sealed), shk_val_len(fx) - 1);
		hex_of(sealed, hex);
		if (!shk_val_str_eq(shk_object_get(fx, "vector_hash"), hex))
			ck_abort_msg("%s: vector_hash %s, computed %s", shk_val_str(name, NULL),
				     shk_val_str(shk_object_get(fx, "vector_hash"), NULL), hex);
	}
}
END_TEST

/* A document reused per message: reset, then as good as new. */
START_TEST(test_doc_reset)
{
	static char big[20000];
	shk_doc *d = NULL;
	shk_val *v = NULL;
	shk_parse_error e;
	size_t len = 0;
	const char *small = "{\"a\":[1,2.5,true,null,\"x\"]}";

	memset(big, 'x', sizeof(big) - 1);
	big[0] = big[sizeof(big) - 2] = '"';
	ck_assert_int_eq(shk_doc_new(&d), 0);
	shk_doc_reset(d);
	for (int round = 0; round < 3; round++) {
		ck_assert_int_eq(shk_json_parse(d, small, strlen(small), "t", &v, &e), 0);
		ck_assert_int_eq(shk_json_parse(d, big, strlen(big), "t", &v, &e), 0);
		ck_assert_ptr_nonnull(shk_val_str(v, &len));
		ck_assert_uint_eq(len, sizeof(big) - 3);
		for (int i = 0; i < 2000; i++)
			ck_assert_ptr_nonnull(shk_int(d, i));
		shk_doc_reset(d);
		ck_assert_int_eq(shk_json_parse(d, "[1,{\"a\":\"b\"}]", 13, "t", &v, &e), 0);
		ck_assert_uint_eq(shk_val_len(v), 2);
		shk_doc_reset(d);
	}
	shk_doc_free(d);
	shk_doc_reset(NULL);
}
END_TEST

static Suite *canon_suite(void)
{
	Suite *s = suite_create("canon");
	TCase *tc = tcase_create("canon");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_real_repr, 0, (int)(sizeof(reals) / sizeof(reals[0])));
	tcase_add_test(tc, test_real_nonfinite);
	tcase_add_test(tc, test_real_paths_agree);
	tcase_add_loop_test(tc, test_int, 0, (int)(sizeof(ints) / sizeof(ints[0])));
	tcase_add_test(tc, test_parsed_numbers);
	tcase_add_test(tc, test_string_escapes);
	tcase_add_test(tc, test_string_nul_and_unicode);
	tcase_add_test(tc, test_string_every_control);
	tcase_add_test(tc, test_string_long);
	tcase_add_test(tc, test_key_order);
	tcase_add_test(tc, test_prefix_keys_parsed);
	tcase_add_test(tc, test_nested);
	tcase_add_test(tc, test_sha256);
	tcase_add_test(tc, test_sink);
	tcase_add_test(tc, test_reject_structural);
	tcase_add_test(tc, test_reject_marker);
	tcase_add_test(tc, test_reject_order);
	tcase_add_test(tc, test_reject_depth);
	tcase_add_loop_test(tc, test_utf8, 0, (int)(sizeof(utf8_cases) / sizeof(utf8_cases[0])));
	tcase_add_test(tc, test_status_names);
	tcase_add_test(tc, test_equality);
	tcase_add_test(tc, test_copy_and_accessors);
	tcase_add_test(tc, test_big_object);
	tcase_add_test(tc, test_parse_errors);
	tcase_add_test(tc, test_load_file_errors);
	tcase_add_test(tc, test_published_vectors);
	tcase_add_test(tc, test_doc_reset);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(canon_suite());
}
