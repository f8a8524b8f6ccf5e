/* SPDX-License-Identifier: MIT */
/* Glob and argv-pattern semantics of policy v1 (src/core/policy_glob.c). */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/policy_glob.h"
#include "checkrun.h"

static bool gm(const char *pattern, shk_glob_mode mode, const char *s)
{
	struct shk_glob g;
	const char *why = NULL;
	bool m;

	ck_assert_int_eq(shk_glob_compile(&g, pattern, strlen(pattern), mode, &why), 0);
	m = shk_glob_match(&g, s, strlen(s));
	shk_glob_free(&g);
	return m;
}

#define PATH_YES(p, s) ck_assert_msg(gm(p, SHK_GLOB_PATH, s), "%s should match %s", p, s)
#define PATH_NO(p, s) ck_assert_msg(!gm(p, SHK_GLOB_PATH, s), "%s should not match %s", p, s)
#define ARG_YES(p, s) ck_assert_msg(gm(p, SHK_GLOB_ARG, s), "%s should match arg %s", p, s)
#define ARG_NO(p, s) ck_assert_msg(!gm(p, SHK_GLOB_ARG, s), "%s should not match arg %s", p, s)

START_TEST(test_literal)
{
	PATH_YES("/usr/bin/git", "/usr/bin/git");
	PATH_NO("/usr/bin/git", "/usr/bin/gitx");
	PATH_NO("/usr/bin/git", "/usr/bin/gi");
	PATH_NO("/usr/bin/git", "/USR/bin/git");
	PATH_YES("", "");
	PATH_NO("", "/");
}
END_TEST

START_TEST(test_star)
{
	PATH_YES("/usr/bin/*", "/usr/bin/git");
	PATH_NO("/usr/bin/*", "/usr/bin/x/y");
	PATH_NO("/usr/bin/*", "/usr/sbin/git");
	PATH_YES("/usr/bin/*", "/usr/bin/");
	PATH_YES("/usr/*/git", "/usr/bin/git");
	PATH_NO("/usr/*/git", "/usr/a/b/git");
	PATH_YES("/usr/bin/py*3", "/usr/bin/python3");
	PATH_YES("/usr/bin/py*3", "/usr/bin/py3");
	PATH_NO("/usr/bin/py*3", "/usr/bin/python3.11");
}
END_TEST

START_TEST(test_double_star)
{
	PATH_YES("/usr/**", "/usr/bin/x/y");
	PATH_YES("/usr/**", "/usr/");
	PATH_NO("/usr/**", "/usr");
	PATH_YES("**/git", "/usr/bin/git");
	PATH_YES("**/git", "/git");
	PATH_NO("**/git", "/usr/bin/legit");
	PATH_YES("/usr/**/git", "/usr/git");
	PATH_YES("/usr/**/git", "/usr/bin/git");
	PATH_YES("/usr/**/git", "/usr/a/b/c/git");
	PATH_NO("/usr/**/git", "/usr/bin/gitk");
	PATH_NO("/usr/**/git", "/opt/usr/bin/git");
	PATH_YES("/opt/**.so", "/opt/lib/x/libfoo.so");
	PATH_YES("/**", "/anything/at/all");
	PATH_YES("**/docker.sock", "/var/run/docker.sock");
	PATH_YES("**/docker.sock", "/run/user/1000/docker.sock");
}
END_TEST

START_TEST(test_question_and_escape)
{
	PATH_YES("/bin/?s", "/bin/ls");
	PATH_NO("/bin/?s", "/bin/s");
	PATH_NO("/bin/?s", "/bin//s");
	PATH_YES("/tmp/\\*", "/tmp/*");
	PATH_NO("/tmp/\\*", "/tmp/x");
	PATH_YES("/tmp/a\\?", "/tmp/a?");
	PATH_NO("/tmp/a\\?", "/tmp/ab");
	PATH_YES("/tmp/a\\\\b", "/tmp/a\\b");
}
END_TEST

START_TEST(test_arg_mode)
{
	ARG_YES("*npm*", "/usr/lib/node_modules/npm/bin/npm-cli.js");
	ARG_YES("--registry=*", "--registry=https://r.example/x");
	ARG_NO("--registry=*", "--reg");
	ARG_YES("?", "/");
	ARG_YES("*cargo", "/home/u/.cargo/bin/cargo");
	ARG_NO("*cargo", "cargo-fmt");
}
END_TEST

START_TEST(test_compile_errors)
{
	struct shk_glob g;
	const char *why = NULL;
	char *big = malloc(600);

	ck_assert_int_eq(shk_glob_compile(&g, "/x\\", 3, SHK_GLOB_PATH, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "backslash"));
	memset(big, 'a', 600);
	ck_assert_int_eq(shk_glob_compile(&g, big, 600, SHK_GLOB_PATH, &why), -EINVAL);
	/* Runs of stars collapse, so they do not count against the limit. */
	memset(big, '*', 600);
	ck_assert_int_eq(shk_glob_compile(&g, big, 600, SHK_GLOB_ARG, &why), 0);
	ck_assert(shk_glob_match(&g, "anything", 8));
	shk_glob_free(&g);
	free(big);
}
END_TEST

/* A pattern that makes a backtracking matcher exponential stays linear here. */
START_TEST(test_hostile_subject_is_bounded)
{
	static const char pat[] = "/*a*a*a*a*a*a*a*a*a*a*a*a*b";
	struct shk_glob g;
	const char *why = NULL;
	char *s = malloc(4097);
	struct timespec t0, t1;
	double secs;

	s[0] = '/';
	memset(s + 1, 'a', 4095);
	s[4096] = 0;
	ck_assert_int_eq(shk_glob_compile(&g, pat, strlen(pat), SHK_GLOB_PATH, &why), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert(!shk_glob_match(&g, s, 4096));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* 4096 x 27 state steps; a backtracking matcher would take years. */
	ck_assert_msg(secs < 0.5, "took %f s", secs);
	s[4095] = 'b';
	ck_assert(shk_glob_match(&g, s, 4096));
	shk_glob_free(&g);
	free(s);
}
END_TEST

/* Build argv elements from strings the way the loader does. */
static size_t mk(struct shk_argv_elem *e, const char *const *pats)
{
	size_t n = 0;
	const char *why;

	for (; pats[n]; n++) {
		if (!strcmp(pats[n], "*")) {
			e[n].kind = SHK_ARGV_ONE;
		} else if (!strcmp(pats[n], "**")) {
			e[n].kind = SHK_ARGV_ANY;
		} else {
			e[n].kind = SHK_ARGV_GLOB;
			ck_assert_int_eq(shk_glob_compile(&e[n].glob, pats[n], strlen(pats[n]),
							  SHK_GLOB_ARG, &why), 0);
		}
	}
	return n;
}

static void unmk(struct shk_argv_elem *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (e[i].kind == SHK_ARGV_GLOB)
			shk_glob_free(&e[i].glob);
}

static bool am(const char *const *pats, const char *const *argv)
{
	struct shk_argv_elem e[16] = { 0 };
	size_t n = mk(e, pats), argc = 0;
	bool m;

	while (argv[argc])
		argc++;
	m = shk_argv_match(e, n, argv, argc);
	unmk(e, n);
	return m;
}

#define A(...) ((const char *const[]){ __VA_ARGS__, NULL })

START_TEST(test_argv_patterns)
{
	const char *const *push = A("git", "push", "**");

	ck_assert(am(push, A("git", "push")));
	ck_assert(am(push, A("git", "push", "origin", "main")));
	ck_assert(!am(push, A("git", "pull")));
	ck_assert(!am(push, A("git")));
	ck_assert(!am(push, A("/usr/bin/git", "push")));
	ck_assert(!am(push, A("git", "-C", "/r", "push")));

	ck_assert(am(A("*", "**", "push", "**"), A("git", "-C", "/r", "push", "-f")));
	ck_assert(am(A("*", "**", "push", "**"), A("git", "push")));
	ck_assert(!am(A("*", "**", "push", "**"), A("push")));
	ck_assert(!am(A("*", "**", "push", "**"), A("git", "pushx")));

	ck_assert(am(A("*"), A("anything")));
	ck_assert(!am(A("*"), A("a", "b")));
	ck_assert(am(A("*", "*"), A("a", "b")));
	ck_assert(am(A("**"), A("x")));
	ck_assert(am(A("ls", "-*"), A("ls", "-la")));
	ck_assert(!am(A("ls", "-*"), A("ls", "/etc")));
	ck_assert(am(A("**", "*npm*", "**", "publish", "**"),
		     A("node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "publish", "--tag", "x")));
	ck_assert(!am(A("**", "*npm*", "**", "publish", "**"), A("npm", "install")));
	ck_assert(am(A("", "x"), A("", "x")));
}
END_TEST

START_TEST(test_argv_zero_args)
{
	struct shk_argv_elem e[2] = { 0 };
	size_t n = mk(e, A("**"));

	ck_assert(shk_argv_match(e, n, NULL, 0));
	unmk(e, n);
	n = mk(e, A("*"));
	ck_assert(!shk_argv_match(e, n, NULL, 0));
	unmk(e, n);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("policy_glob");
	TCase *tc = tcase_create("glob");

	tcase_add_test(tc, test_literal);
	tcase_add_test(tc, test_star);
	tcase_add_test(tc, test_double_star);
	tcase_add_test(tc, test_question_and_escape);
	tcase_add_test(tc, test_arg_mode);
	tcase_add_test(tc, test_compile_errors);
	tcase_add_test(tc, test_hostile_subject_is_bounded);
	tcase_add_test(tc, test_argv_patterns);
	tcase_add_test(tc, test_argv_zero_args);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
