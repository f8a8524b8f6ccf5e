/* SPDX-License-Identifier: MIT */
/*
 * Every shipped policy denies a held call before a common agent gives up
 * on the command itself: Claude Code's Bash tool kills a command after
 * 120 s by default, and an approval given after that releases nothing the
 * agent still waits for (docs/hitl.md, "Timeouts"). The effective value
 * counts: a policy that does not set hitl_timeout_s gets the default (300).
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <shackle/policy.h>

#include "testutil.h"
#include "checkrun.h"

#define AGENT_COMMAND_TIMEOUT_S 120

START_TEST(held_calls_end_before_the_agent_gives_up)
{
	char dir[4096], path[8192];
	struct dirent *de;
	size_t checked = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s", shk_test_src("policies"));
	ck_assert_ptr_nonnull(d = opendir(dir));
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		shk_parse_error err;
		shk_policy *p = NULL;

		if (n < 6 || strcmp(de->d_name + n - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		ck_assert_msg(shk_policy_load_file(path, &p, &err) == 0, "%s: %s", path, err.text);
		ck_assert_msg(shk_policy_guard(p)->hitl_timeout_s < AGENT_COMMAND_TIMEOUT_S,
		              "%s: hitl_timeout_s %u is not below %u s", de->d_name,
		              shk_policy_guard(p)->hitl_timeout_s, AGENT_COMMAND_TIMEOUT_S);
		shk_policy_free(p);
		checked++;
	}
	closedir(d);
	ck_assert_uint_ge(checked, 3);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shipped_timeouts");
	TCase *tc = tcase_create("policies");

	tcase_add_test(tc, held_calls_end_before_the_agent_gives_up);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
