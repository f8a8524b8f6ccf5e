/* SPDX-License-Identifier: MIT */
/*
 * `shackle conformance` end to end: the project's fixtures all pass; a
 * corrupted copy fails with exit 1 and names the vector; malformed input
 * exits 2 with FILE:LINE:COLUMN or the fixture and field. With the argument
 * "shared" it runs the 15 published vectors instead (skipped, or failed under
 * SHACKLE_TESTS_MUST_RUN=1, when the file is absent).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "testutil.h"
#include "checkrun.h"

static char tmpdir[64];

struct result {
	int status;
	char out[65536];
};

/* Run a shell command line; capture stdout+stderr and the exit status. */
static void run(struct result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run(struct result *r, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	FILE *p;
	size_t n;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	if (!p) { /* no Check assertion here: shared mode runs outside Check */
		r->status = 127;
		snprintf(r->out, sizeof(r->out), "popen %s failed", cmd);
		return;
	}
	n = fread(r->out, 1, sizeof(r->out) - 1, p);
	r->out[n] = '\0';
	st = pclose(p);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static const char *shackle(void)
{
	static char path[4096];
	snprintf(path, sizeof(path), "%s", shk_test_build("src/cli/shackle"));
	return path;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	ck_assert_msg(f != NULL, "create %s", path);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* Last non-empty line of s. */
static const char *last_line(char *s)
{
	size_t n = strlen(s);

	while (n && s[n - 1] == '\n')
		s[--n] = '\0';
	char *nl = strrchr(s, '\n');
	return nl ? nl + 1 : s;
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/shk-conformance-XXXXXX");
	ck_assert(mkdtemp(tmpdir) != NULL);
}

static void teardown(void)
{
	struct result r;
	run(&r, "rm -rf '%s'", tmpdir);
}

START_TEST(fixtures_pass)
{
	static struct result r;
	unsigned passed = 0, failed = 1;

	run(&r, "'%s' conformance '%s'/*.json 2>&1", shackle(), shk_test_src("fixtures"));
	ck_assert_msg(r.status == 0, "exit %d:\n%s", r.status, r.out);
	ck_assert_int_eq(sscanf(last_line(r.out), "%u passed, %u failed", &passed, &failed), 2);
	ck_assert_uint_ge(passed, 60);
	ck_assert_uint_eq(failed, 0);
}
END_TEST

START_TEST(corrupted_copy_fails)
{
	static struct result r;
	char path[256], want[512];
	char *text = read_file(shk_test_src("fixtures/rule02_circuit.json"));
	char *at = strstr(text, "\"expected_reason\": \"circuit_open\"");

	ck_assert_ptr_nonnull(at);
	/* same length, so the rest of the file is untouched */
	memcpy(at + strlen("\"expected_reason\": \""), "global_limit", strlen("global_limit"));
	snprintf(path, sizeof(path), "%s/corrupt.json", tmpdir);
	write_file(path, text);
	free(text);
	/* global_limit is not an SP/1.0 reason: malformed vector, exit 2 */
	run(&r, "'%s' conformance '%s' 2>&1", shackle(), path);
	ck_assert_msg(r.status == 2, "exit %d:\n%s", r.status, r.out);
	ck_assert_msg(strstr(r.out, "expected_reason: \"global_limit\" is not an SP/1.0 reason"), "%s", r.out);

	/* a wrong but valid reason: exit 1, one line naming the vector */
	text = read_file(shk_test_src("fixtures/rule02_circuit.json"));
	at = strstr(text, "\"expected_reason\": \"circuit_open\"");
	ck_assert_ptr_nonnull(at);
	{
		char *fixed = malloc(strlen(text) + 16);
		size_t head = (size_t)(at - text);
		memcpy(fixed, text, head);
		strcpy(fixed + head, "\"expected_reason\": \"budget_overrun\"");
		strcat(fixed, at + strlen("\"expected_reason\": \"circuit_open\""));
		write_file(path, fixed);
		free(fixed);
	}
	free(text);
	run(&r, "'%s' conformance '%s' 2>&1", shackle(), path);
	ck_assert_msg(r.status == 1, "exit %d:\n%s", r.status, r.out);
	snprintf(want, sizeof(want), "%s: r2_circuit_open: expected DENY budget_overrun, got DENY circuit_open\n", path);
	ck_assert_msg(strstr(r.out, want), "missing failure line in:\n%s", r.out);
	snprintf(want, sizeof(want), "%s: r2_circuit_open: vector_hash mismatch", path);
	ck_assert_msg(strstr(r.out, want), "missing seal failure in:\n%s", r.out);
	ck_assert_str_eq(last_line(r.out), "4 passed, 1 failed");
}
END_TEST

START_TEST(tampered_params_hash)
{
	static struct result r;
	char path[256];

	snprintf(path, sizeof(path), "%s/params.json", tmpdir);
	write_file(path, "[{\"name\":\"p\",\"call\":{\"params\":{\"a\":1}},"
			 "\"canonical_hash\":\"0000000000000000000000000000000000000000000000000000000000000000\","
			 "\"expected_verdict\":\"ALLOW\",\"expected_reason\":\"within_thresholds\"}]\n");
	run(&r, "'%s' conformance '%s' 2>&1", shackle(), path);
	ck_assert_msg(r.status == 1, "exit %d:\n%s", r.status, r.out);
	ck_assert_msg(strstr(r.out, "p: canonical_hash mismatch: vector says 0000"), "%s", r.out);
	ck_assert_str_eq(last_line(r.out), "0 passed, 1 failed");
}
END_TEST

START_TEST(malformed_input_exit_2)
{
	static struct result r;
	char path[256], want[300];

	snprintf(path, sizeof(path), "%s/bad.json", tmpdir);
	write_file(path, "{\"fixtures\": [\n  {\"name\": \"x\",, }\n]}\n");
	run(&r, "'%s' conformance '%s' 2>&1", shackle(), path);
	ck_assert_msg(r.status == 2, "exit %d:\n%s", r.status, r.out);
	snprintf(want, sizeof(want), "%s:2:", path);
	ck_assert_msg(strstr(r.out, want), "no FILE:LINE:COLUMN in:\n%s", r.out);

	write_file(path, "{\"fixtures\": [{\"name\": \"tru");
	run(&r, "'%s' conformance '%s' 2>&1", shackle(), path);
	ck_assert_msg(r.status == 2, "truncated: exit %d:\n%s", r.status, r.out);
	snprintf(want, sizeof(want), "%s:1:", path);
	ck_assert_msg(strstr(r.out, want), "%s", r.out);

	write_file(path, "{\"fixtures\": [{\"name\": \"t\", \"state\": {\"budget_remaining_usd\": \"1\"},"
			 "\"call\": {\"params\": {}}, \"expected_verdict\": \"ALLOW\", \"expected_reason\": \"within_thresholds\"}]}");
	run(&r, "'%s' conformance '%s' 2>&1", shackle(), path);
	ck_assert_msg(r.status == 2, "exit %d:\n%s", r.status, r.out);
	ck_assert_msg(strstr(r.out, "fixture 0 (\"t\"): state.budget_remaining_usd: expected a number"), "%s", r.out);

	write_file(path, "{\"vectors\": []}");
	run(&r, "'%s' conformance '%s' 2>&1", shackle(), path);
	ck_assert_int_eq(r.status, 2);

	run(&r, "'%s' conformance '%s/does-not-exist.json' 2>&1", shackle(), tmpdir);
	ck_assert_int_eq(r.status, 2);
	run(&r, "'%s' conformance 2>&1", shackle());
	ck_assert_int_eq(r.status, 2);
	run(&r, "'%s' conformance --bogus x 2>&1", shackle());
	ck_assert_int_eq(r.status, 2);
}
END_TEST

START_TEST(seal_roundtrip)
{
	static struct result r;
	char path[256];

	snprintf(path, sizeof(path), "%s/new.json", tmpdir);
	write_file(path, "[{\"name\":\"n\",\"call\":{\"params\":{\"q\":\"caf\xc3\xa9\",\"n\":1e-05}},"
			 "\"expected_verdict\":\"ALLOW\",\"expected_reason\":\"within_thresholds\"}]");
	run(&r, "'%s' conformance --seal '%s' 2>&1", shackle(), path);
	ck_assert_msg(r.status == 0, "%s", r.out);
	run(&r, "'%s' conformance --verbose '%s' 2>&1", shackle(), path);
	ck_assert_msg(r.status == 0, "%s", r.out);
	ck_assert_msg(strstr(r.out, ": n: ALLOW within_thresholds"), "%s", r.out);
	{
		char *sealed = read_file(path);
		ck_assert_ptr_nonnull(strstr(sealed, "\"canonical_hash\""));
		ck_assert_ptr_nonnull(strstr(sealed, "\"vector_hash\""));
		free(sealed);
	}
}
END_TEST

static int shared_vectors(void)
{
	static struct result r;
	char path[4096];
	const char *dir = getenv("SHACKLE_SHARED_DIR");
	struct stat st;

	snprintf(path, sizeof(path), "%s/conformance/sp1.0/conformance.json", dir ? dir : "../shared");
	if (stat(path, &st) < 0)
		shk_test_skip("published vectors not found at %s", path);
	run(&r, "'%s' conformance '%s' 2>&1", shackle(), path);
	if (r.status != 0 || strcmp(last_line(r.out), "15 passed, 0 failed") != 0) {
		fprintf(stderr, "exit %d:\n%s\n", r.status, r.out);
		return 1;
	}
	printf("%s\n", r.out);
	return 0;
}

int main(int argc, char **argv)
{
	Suite *s;
	TCase *tc;

	if (argc > 1 && !strcmp(argv[1], "shared"))
		return shared_vectors();
	s = suite_create("conformance-cli");
	tc = tcase_create("cli");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, fixtures_pass);
	tcase_add_test(tc, corrupted_copy_fails);
	tcase_add_test(tc, tampered_params_hash);
	tcase_add_test(tc, malformed_input_exit_2);
	tcase_add_test(tc, seal_roundtrip);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
