/* SPDX-License-Identifier: MIT */
/*
 * Which exec carries out which proposed command (shackle/proplink.h): the
 * commands a proposal names, the commands an exec carries out (argv, a
 * shell's -c string, its eval'd words with their quoting taken off, as
 * Claude Code wraps a Bash command), and the ring (oldest first, each
 * proposal taken once, the oldest dropped when full).
 */
#include <check.h>
#include "checkrun.h"
#include <stdio.h>
#include <string.h>

#include <shackle/proplink.h>

static shk_doc *doc;

static shk_val *js(const char *text)
{
	shk_parse_error pe;
	shk_val *v = NULL;

	ck_assert_msg(shk_json_parse(doc, text, strlen(text), "t", &v, &pe) == 0, "%s", text);
	return v;
}

/* argv as one string split at '^' */
static bool carries(const char *path, const char *argv, const char *input)
{
	shk_proplink_cmd want, got[SHK_PROPLINK_CANDIDATES];
	static char buf[4096];
	const char *v[64];
	size_t n = 0, k;

	snprintf(buf, sizeof(buf), "%s", argv);
	for (char *t = strtok(buf, "^"); t && n < 64; t = strtok(NULL, "^"))
		v[n++] = t;
	if (!shk_proplink_proposed(js(input), &want))
		return false;
	k = shk_proplink_exec_cmds(path, v, n, got, SHK_PROPLINK_CANDIDATES);
	for (size_t i = 0; i < k; i++)
		if (!memcmp(got[i].sha256, want.sha256, 32))
			return true;
	return false;
}

START_TEST(test_proposed)
{
	shk_proplink_cmd c;

	ck_assert(shk_proplink_proposed(js("{\"command\":\"ls -la\",\"description\":\"x\"}"), &c));
	ck_assert(shk_proplink_proposed(js("{\"cmd\":\"ls\"}"), &c));
	ck_assert(shk_proplink_proposed(js("{\"command\":[\"bash\",\"-lc\",\"ls\"]}"), &c));
	ck_assert(shk_proplink_proposed(js("{\"type\":\"exec\",\"command\":[\"ls\"]}"), &c));
	ck_assert(!shk_proplink_proposed(js("{\"file_path\":\"/x\"}"), &c));
	ck_assert(!shk_proplink_proposed(js("{\"command\":\"\"}"), &c));
	ck_assert(!shk_proplink_proposed(js("{\"command\":[]}"), &c));
	ck_assert(!shk_proplink_proposed(js("{\"command\":[\"ls\",1]}"), &c));
	ck_assert(!shk_proplink_proposed(js("{\"command\":[\"a\\u0000b\"]}"), &c));
	ck_assert(!shk_proplink_proposed(js("{\"command\":42}"), &c));
	ck_assert(!shk_proplink_proposed(js("[\"ls\"]"), &c));
	ck_assert(shk_proplink_names_command(js("{\"command\":\"[REDACTED:4]\"}")));
	ck_assert(!shk_proplink_names_command(js("{\"path\":\"x\"}")));
}
END_TEST

START_TEST(test_shell_c)
{
	const char *ls = "{\"command\":\"ls -la | wc -l\"}";

	ck_assert(carries("/usr/bin/dash", "/bin/sh^-c^ls -la | wc -l", ls));
	ck_assert(carries("/usr/bin/bash", "bash^-lc^ls -la | wc -l", ls));
	ck_assert(carries("/usr/bin/bash", "bash^-c^-l^ls -la | wc -l", ls));
	ck_assert(carries("/usr/bin/bash", "bash^-o^pipefail^-c^ls -la | wc -l^argv0", ls));
	ck_assert(carries("/usr/bin/bash", "bash^--norc^-ec^ls -la | wc -l", ls));
	ck_assert(carries("/usr/bin/zsh", "zsh^-c^--^ls -la | wc -l", ls));
	/* not a shell, no -c, or another string */
	ck_assert(!carries("/usr/bin/python3", "python3^-c^ls -la | wc -l", ls));
	ck_assert(!carries("/usr/bin/bash", "bash^ls -la | wc -l", ls));
	ck_assert(!carries("/usr/bin/bash", "bash^-c^ls -la | wc", ls));
	ck_assert(!carries("/usr/bin/bash", "bash^-o^-c^ls -la | wc -l", ls)); /* -c is -o's value */
	ck_assert(!carries("/usr/bin/bash", "bash^+c^ls -la | wc -l", ls));
	ck_assert(!carries("/usr/bin/dash", "sh^-c", ls));
}
END_TEST

/* What Claude Code 2.1.197 execs for its Bash tool (seen under shackle-run). */
#define CC_PRE "source /home/u/.claude/shell-snapshots/snapshot-bash-1-x.sh 2>/dev/null || true && " \
               "shopt -u extglob 2>/dev/null || true && eval "
#define CC_POST " < /dev/null && pwd -P >| /tmp/claude-f548-cwd"

START_TEST(test_eval)
{
	ck_assert(carries("/usr/bin/bash", "/bin/bash^-c^" CC_PRE "'echo turn-0'" CC_POST,
	                  "{\"command\":\"echo turn-0\"}"));
	/* a single quote as '"'"' */
	ck_assert(carries("/usr/bin/bash", "/bin/bash^-c^" CC_PRE
	                  "'printf '\"'\"'%s\\n'\"'\"' \"it'\"'\"'s\" $HOME'" CC_POST,
	                  "{\"command\":\"printf '%s\\\\n' \\\"it's\\\" $HOME\"}"));
	ck_assert(carries("/usr/bin/bash", "/bin/bash^-c^" CC_PRE "'echo a\necho b'" CC_POST,
	                  "{\"command\":\"echo a\\necho b\"}"));
	/* double quotes and backslashes, a line continued */
	ck_assert(carries("/usr/bin/bash", "bash^-c^eval \"echo \\\"\\$x\\\" \\\\\"", "{\"command\":\"echo \\\"$x\\\" \\\\\"}"));
	ck_assert(carries("/usr/bin/bash", "bash^-c^eval \"a\\\nb\"", "{\"command\":\"ab\"}"));
	ck_assert(carries("/usr/bin/bash", "bash^-c^x; eval ls\\ -l; y", "{\"command\":\"ls -l\"}"));
	/* only the word after eval, unquoted; eval must stand as a word */
	ck_assert(!carries("/usr/bin/bash", "bash^-c^" CC_PRE "'echo turn-0'" CC_POST,
	                   "{\"command\":\"echo turn-1\"}"));
	ck_assert(!carries("/usr/bin/bash", "bash^-c^myeval 'ls'", "{\"command\":\"ls\"}"));
	ck_assert(!carries("/usr/bin/bash", "bash^-c^eval 'ls", "{\"command\":\"ls\"}"));
	ck_assert(!carries("/usr/bin/bash", "bash^-c^eval ''", "{\"command\":\"x\"}"));
	ck_assert(!carries("/usr/bin/python3", "python3^-c^eval 'ls'", "{\"command\":\"ls\"}"));
}
END_TEST

START_TEST(test_argv)
{
	const char *codex = "{\"command\":[\"bash\",\"-lc\",\"ls\"]}";

	ck_assert(carries("/usr/bin/bash", "bash^-lc^ls", codex));
	ck_assert(!carries("/usr/bin/bash", "/bin/bash^-lc^ls", codex));
	ck_assert(carries("/usr/bin/ls", "ls^-la", "{\"command\":[\"ls\",\"-la\"]}"));
	ck_assert(!carries("/usr/bin/ls", "ls^-la^x", "{\"command\":[\"ls\",\"-la\"]}"));
	/* an argv is not a command line, nor is ["ls -la"] the argv ls, -la */
	ck_assert(!carries("/usr/bin/ls", "ls^-la", "{\"command\":\"ls -la\"}"));
	ck_assert(!carries("/usr/bin/dash", "sh^-c^ls", "{\"command\":[\"ls\"]}"));
	ck_assert(!carries("/usr/bin/ls", "ls^-la", "{\"command\":[\"ls -la\"]}"));
}
END_TEST

static shk_proplink_cmd line(const char *s)
{
	shk_proplink_cmd c;
	char in[256];

	snprintf(in, sizeof(in), "{\"command\":\"%s\"}", s);
	ck_assert(shk_proplink_proposed(js(in), &c));
	return c;
}

START_TEST(test_ring)
{
	static shk_proplink_ring r;
	shk_proplink_cmd a = line("a"), b = line("b"), c;
	shk_proplink_entry e;
	char tool[300];

	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(shk_proplink_find(&r, &a, 1), -1);
	shk_proplink_add(&r, 10, "Bash", &a);
	shk_proplink_add(&r, 11, "Bash", NULL); /* unknown: never found by command */
	shk_proplink_add(&r, 12, "shell", &b);
	shk_proplink_add(&r, 13, "Bash", &a);
	ck_assert_int_eq(shk_proplink_find(&r, &b, 1), 2);
	ck_assert_int_eq(shk_proplink_find(&r, &a, 1), 0); /* the oldest */
	shk_proplink_take(&r, 0, &e);
	ck_assert_int_eq(e.seq, 10);
	ck_assert_str_eq(e.tool, "Bash");
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(r.e[shk_proplink_find(&r, &a, 1)].seq, 13); /* taken once */
	ck_assert_int_eq(shk_proplink_index(&r, 11), 0);
	ck_assert_int_eq(shk_proplink_index(&r, 10), -1);
	shk_proplink_take(&r, 7, NULL); /* out of range: nothing */
	ck_assert_int_eq(r.n, 3);
	/* full: the oldest goes */
	c = line("c");
	for (int i = 0; i < SHK_PROPLINK_RING; i++)
		shk_proplink_add(&r, 100 + i, "Bash", &c);
	ck_assert_int_eq(r.n, SHK_PROPLINK_RING);
	ck_assert_int_eq(shk_proplink_find(&r, &a, 1), -1);
	ck_assert_int_eq(r.e[0].seq, 100);
	/* a long tool name is cut, NUL-terminated */
	memset(tool, 'x', sizeof(tool) - 1);
	tool[sizeof(tool) - 1] = 0;
	shk_proplink_add(&r, 200, tool, &a);
	ck_assert_uint_eq(strlen(r.e[r.n - 1].tool), SHK_PROPLINK_TOOL_MAX - 1);
	/* ... on a character, not inside one (2-byte characters) */
	for (size_t i = 0; i + 1 < sizeof(tool); i += 2)
		memcpy(tool + i, "\xc3\xa9", 2);
	shk_proplink_add(&r, 201, tool, &a);
	ck_assert_uint_eq(strlen(r.e[r.n - 1].tool), SHK_PROPLINK_TOOL_MAX - 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proplink");
	TCase *tc = tcase_create("proplink");
	int r;

	shk_doc_new(&doc);
	tcase_add_test(tc, test_proposed);
	tcase_add_test(tc, test_shell_c);
	tcase_add_test(tc, test_eval);
	tcase_add_test(tc, test_argv);
	tcase_add_test(tc, test_ring);
	suite_add_tcase(s, tc);
	r = shk_test_run(s);
	shk_doc_free(doc);
	return r;
}
