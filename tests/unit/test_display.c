/* SPDX-License-Identifier: MIT */
/*
 * What the operator's terminal is shown (src/cli/display.c): strings the
 * agent chose, escaped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "cli/display.h"
#include "checkrun.h"

START_TEST(text_escapes_and_terminates)
{
	char buf[32];

	/* a buffer that held an earlier field: "" must not give it back */
	memset(buf, 'A', sizeof(buf));
	buf[sizeof(buf) - 1] = 0;
	ck_assert_str_eq(shk_cli_text("", buf, sizeof(buf)), "");
	strcpy(buf, "alice");
	ck_assert_str_eq(shk_cli_text("", buf, sizeof(buf)), "");
	ck_assert_str_eq(shk_cli_text(NULL, buf, sizeof(buf)), "?");
	ck_assert_str_eq(shk_cli_text("a\x1b[2Kb\\", buf, sizeof(buf)), "a\\x1b[2Kb\\\\");
	/* cut at len - 1, and terminated there */
	ck_assert_str_eq(shk_cli_text("0123456789", buf, 5), "0123");
	ck_assert_str_eq(shk_cli_text("x", buf, 0), "?");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("display");
	TCase *tc = tcase_create("display");

	tcase_add_test(tc, text_escapes_and_terminates);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
