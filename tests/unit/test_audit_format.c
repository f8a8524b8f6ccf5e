/* SPDX-License-Identifier: MIT */
/* The audit ledger's bytes: SHA-256 against libsodium, reals formatted as the
 * canonical form does, and every decision shape canonical. */
#include <sodium.h>

#include "ledger_session.h"
#include "checkrun.h"

/* ---- SHA-256 ------------------------------------------------------------- */

/* The accelerated SHA-256 agrees with libsodium on every length around the
 * block boundaries and on split updates. */
START_TEST(sha256_matches_libsodium)
{
	uint8_t data[1100], a[32], b[32];
	shk_sha256 st;

	randombytes_buf(data, sizeof(data));
	for (size_t len = 0; len <= sizeof(data); len += len < 300 ? 1 : 97) {
		crypto_hash_sha256(a, data, len);
		shk_sha256_once(data, len, b);
		ck_assert_msg(!memcmp(a, b, 32), "length %zu (accelerated: %d)", len, shk_sha256_accelerated());
		for (size_t cut = 0; cut <= len; cut += 13) {
			shk_sha256_init(&st);
			shk_sha256_update(&st, data, cut);
			shk_sha256_update(&st, data + cut, len - cut);
			shk_sha256_final(&st, b);
			ck_assert_msg(!memcmp(a, b, 32), "length %zu split %zu", len, cut);
		}
	}
	shk_sha256_force_portable(true);
	shk_sha256_once(data, 1000, b);
	crypto_hash_sha256(a, data, 1000);
	ck_assert(!memcmp(a, b, 32));
	shk_sha256_force_portable(false);
}
END_TEST

/* Decision entries of every shape the one-pass writer handles (redacted,
 * unprepared and non-canonical params, invalid costs, inputs, operator,
 * quotes in names, negative ids) are canonical and hashed like any entry;
 * numbers JSON cannot hold fail the append and leave nothing behind. */
START_TEST(decision_shapes_are_canonical)
{
	const char *p = tpath("shapes.jsonl");
	shk_ledger_session s;
	shk_ledger *l = NULL;
	shk_verify_report rep;
	lines ls;
	const double costs[] = { 0.25, __builtin_nan(""), __builtin_inf(), -__builtin_inf(), 1e-9, 123456.789 };

	session_info(&s, "sh\"ape\x01");
	ck_assert_int_eq(shk_ledger_open(p, key, &s, &(shk_ledger_options){ .fsync = SHK_FSYNC_NONE }, &l), 0);
	for (int i = 0; i < 24; i++) {
		shk_toolcall tc = { 0 };
		shk_outcome o = { 0 };
		shk_audit_decision d = { 0 };
		shk_val *red = shk_object(gdoc), *in = shk_object(gdoc);

		tc.tool_name = i % 4 ? "exec:curl" : "exec:\"q\"";
		tc.params = params_of(i);
		if (i % 6 == 5)
			shk_object_set_str((shk_val *)tc.params, "bad", shk_real(gdoc, __builtin_nan("")));
		tc.nonce = UINT64_MAX - (uint64_t)i;
		tc.estimated_cost_usd = costs[i % 6];
		if (i % 3)
			shk_toolcall_prepare(&tc);
		o.verdict = o.decided.verdict = (shk_verdict)(i % 3);
		o.reason = o.decided.reason = SHK_R_WITHIN_THRESHOLDS;
		o.layer = (shk_layer)(i % 5);
		o.budget_initial_usd = 1.0 / 3;
		o.budget_remaining_usd = 5.0 - 0.001 * i;
		o.budget_after_usd = -0.1 * i;
		o.repeat_count = (uint64_t)INT64_MAX;
		o.max_repeat_calls = UINT32_MAX;
		o.total_calls = (uint64_t)i;
		o.circuit_tripped = o.trips = i & 1;
		shk_object_set_str(red, "redacted", shk_bool(gdoc, true));
		shk_object_set_str(in, "z", shk_real(gdoc, 0.1));
		shk_object_set_str(in, "a", shk_null(gdoc));
		d.time_ns = -(int64_t)i;
		d.pid = INT32_MIN;
		d.tid = -i;
		d.exe = i % 5 ? "/usr/bin/cu\"rl" : NULL;
		d.call_number = (uint64_t)i;
		d.call = &tc;
		d.action = (shk_action)(i % 3);
		d.rule = i % 2 ? "rule \\ 1" : NULL;
		d.outcome = &o;
		d.params_redacted = i % 4 == 1 ? red : NULL;
		d.operator_id = i % 7 == 3 ? "ålice" : NULL;
		d.inputs = i % 2 ? in : NULL;
		ck_assert_int_eq(shk_ledger_append_decision(l, &d), 0);
		/* Refused whole: nothing of the entry reaches the file. */
		o.budget_after_usd = __builtin_nan("");
		ck_assert_int_eq(shk_ledger_append_decision(l, &d), -EDOM);
		o.budget_after_usd = 0;
		d.call_number = UINT64_MAX;
		ck_assert_int_eq(shk_ledger_append_decision(l, &d), -ERANGE);
	}
	ck_assert_int_eq(shk_ledger_end(l, &(shk_audit_session_end){ T0, 0, NULL, NULL }), 0);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	verify_one(p, key, &rep);
	ck_assert_msg(rep.result == SHK_VERIFY_OK, "%s", shk_verify_class_name(rep.result));
	lines_read(p, &ls);
	for (size_t i = 0; i < ls.n; i++) {
		shk_val *v = NULL;
		shk_parse_error pe;
		char *canon = NULL, hex[65];
		uint8_t h[32];
		size_t len;

		ck_assert_int_eq(shk_json_parse(gdoc, ls.l[i], strlen(ls.l[i]), "t", &v, &pe), 0);
		ck_assert_int_eq(shk_canon_dump(v, &canon, &len), 0);
		ck_assert_str_eq(canon, ls.l[i]);
		free(canon);
		ck_assert_int_eq(shk_ledger_entry_hash(v, h), 0);
		shk_hex(h, 32, hex);
		ck_assert(shk_val_str_eq(shk_object_get(v, "hash"), hex));
	}
	ck_assert(lines_find(&ls, 0, "\"cost\":\"nan\"") > 0);
	ck_assert(lines_find(&ls, 0, "\"cost\":\"-inf\"") > 0);
	ck_assert(lines_find(&ls, 0, "\"params\":{\"redacted\":true}") > 0);
	ck_assert(lines_find(&ls, 0, "\"params\":null,\"params_hash\":null,\"params_status\":\"non_finite\"") > 0);
	ck_assert(lines_find(&ls, 0, "\"nonce\":\"18446744073709551615\"") > 0);
	ck_assert(lines_find(&ls, 1, "\"session\":\"sh\\\"ape\\u0001\"") == 1);
	ck_assert_uint_eq(ls.n, 1 + 24 + 2); /* start, decisions, end, checkpoint */
	lines_free(&ls);
}
END_TEST

/* ---- reals ----------------------------------------------------------------- */

/* The neighbouring double of a positive d (delta = +-1). */
static double ulp_step(double d, int delta)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof(d));
	bits += (uint64_t)(int64_t)delta;
	memcpy(&d, &bits, sizeof(d));
	return d;
}

static void same_real(double d)
{
	char a[SHK_AUDIT_REAL_MAX], b[SHK_AUDIT_REAL_MAX];
	int na = shk_canon_format_real(d, a, sizeof(a)), nb = shk_canon_format_real_slow(d, b, sizeof(b));

	ck_assert_msg(na == nb, "%.17g: fast %d, exact search %d", d, na, nb);
	if (na > 0)
		ck_assert_msg(!strcmp(a, b), "%.17g: fast %s, exact search %s", d, a, b);
}

/* The printf-free repr() (fast paths, 128-bit exact digits) gives the bytes
 * of the snprintf/strtod exact search:
 * random doubles of every magnitude it handles itself (and beyond, where it
 * defers), running budget sums, short decimals and their neighbours, powers
 * of two (asymmetric rounding interval) and powers of ten. */
START_TEST(real_format_matches_canon)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	double b = 5.0;

	for (int i = 0; i < 60000; i++) {
		uint64_t bits;
		double d;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		bits = (uint64_t)(1023 - 30 + (int)(x >> 56) % 90) << 52 | (x & ((1ULL << 52) - 1));
		memcpy(&d, &bits, sizeof(d));
		same_real(d);
		same_real(-d);
		b -= (double)(x % 1000) / 7919.0;
		same_real(b);
		same_real(0.001 * i);
		{
			char s[40];

			snprintf(s, sizeof(s), "%llue-%d", (unsigned long long)(x % 100000000000000000ULL) >> (x % 50),
			         (int)(x >> 40) % 24);
			d = strtod(s, NULL);
		}
		same_real(d);
		same_real(ulp_step(d, -1));
		same_real(ulp_step(d, 1));
	}
	for (int e = -30; e < 60; e++) {
		uint64_t pb = (uint64_t)(1023 + e) << 52;
		double p;

		memcpy(&p, &pb, sizeof(p));
		same_real(p);
		same_real(ulp_step(p, -1));
		same_real(ulp_step(p, 1));
	}
	for (int e = -8; e < 17; e++) {
		double p = 1.0;

		for (int i = 0; i < e; i++)
			p *= 10;
		for (int i = 0; i > e; i--)
			p /= 10;
		for (int i = 0; i < 20; i++, p = ulp_step(p, -1))
			same_real(p);
	}
	same_real(0.0);
	same_real(-0.0);
	same_real(5e-324);
	same_real(1.7976931348623157e308);
	ck_assert_int_lt(shk_canon_format_real(__builtin_nan(""), (char[SHK_AUDIT_REAL_MAX]){ 0 }, SHK_AUDIT_REAL_MAX), 0);
	ck_assert_int_lt(shk_canon_format_real(-__builtin_inf(), (char[SHK_AUDIT_REAL_MAX]){ 0 }, SHK_AUDIT_REAL_MAX), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("audit-format");
	TCase *tc = tcase_create("format");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sha256_matches_libsodium);
	tcase_add_test(tc, real_format_matches_canon);
	tcase_add_test(tc, decision_shapes_are_canonical);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
