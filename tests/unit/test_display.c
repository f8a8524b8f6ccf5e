/* SPDX-License-Identifier: MIT */
/*
 * What the operator's terminal is shown (src/cli/display.c): strings the
 * agent chose, escaped; the one-line notices shackle-run and attach print
 * on stderr for a held call and its outcome.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <shackle/json.h>

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

/* The notice for an event given as JSON text, as printed. */
static char *notice(const char *json, bool retry)
{
	static char out[1024];
	shk_parse_error pe;
	shk_doc *d = NULL;
	shk_val *e = NULL;
	FILE *f = fmemopen(out, sizeof(out), "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(shk_doc_new(&d), 0);
	ck_assert_int_eq(shk_json_parse(d, json, strlen(json), "event", &e, &pe), 0);
	shk_cli_held_notice(f, "shackle-run", e, retry);
	fputc(0, f);
	fclose(f);
	shk_doc_free(d);
	return out;
}

START_TEST(held_notice)
{
	ck_assert_str_eq(notice("{\"event\":\"pending\",\"id\":\"3\",\"session\":\"demo\",\"tool\":\"exec:git\","
	                        "\"params\":{\"argv\":[\"git\",\"push\",\"origin\",\"main\"]},"
	                        "\"expires_in_s\":110}", false),
	                 "shackle-run: held 3: git push origin main -- shackle approve 3 --session demo "
	                 "(or reject; expires in 110 s)\n");
	/* what the agent chose cannot reach the terminal as it is */
	ck_assert_str_eq(notice("{\"event\":\"pending\",\"id\":\"4\",\"session\":\"s\\u001b\",\"tool\":\"exec:x\","
	                        "\"params\":{\"argv\":[\"x\\u001b[2K\"]},\"expires_in_s\":5}", false),
	                 "shackle-run: held 4: $'x\\x1b[2K' -- shackle approve 4 --session s\\x1b "
	                 "(or reject; expires in 5 s)\n");
	ck_assert_str_eq(notice("{\"event\":\"pending\",\"id\":\"5\",\"session\":\"d\",\"tool\":\"net:connect\","
	                        "\"params\":{\"proto\":\"tcp\",\"addr\":\"10.0.0.1\",\"port\":443},"
	                        "\"expires_in_s\":0}", false),
	                 "shackle-run: held 5: net:connect tcp 10.0.0.1 port 443 -- shackle approve 5 "
	                 "--session d (or reject; expires in 0 s)\n");
	ck_assert_str_eq(notice("{\"event\":\"resolved\",\"id\":\"3\",\"state\":\"approved\",\"operator\":\"alice\","
	                        "\"verdict\":\"ALLOW\",\"reason\":\"hitl_transition:approve\"}", false),
	                 "shackle-run: held 3 approved by alice: released (ALLOW hitl_transition:approve)\n");
	ck_assert_str_eq(notice("{\"event\":\"resolved\",\"id\":\"3\",\"state\":\"approved\",\"operator\":\"alice\","
	                        "\"verdict\":\"ALLOW\",\"reason\":\"hitl_transition:approve\"}", true),
	                 "shackle-run: held 3 approved by alice: released, its retry passes once "
	                 "(ALLOW hitl_transition:approve)\n");
	ck_assert_str_eq(notice("{\"event\":\"resolved\",\"id\":\"3\",\"state\":\"approved\",\"operator\":\"alice\","
	                        "\"verdict\":\"DENY\",\"reason\":\"hitl_transition:digest_mismatch\"}", false),
	                 "shackle-run: held 3 approved by alice: denied (DENY hitl_transition:digest_mismatch)\n");
	ck_assert_str_eq(notice("{\"event\":\"resolved\",\"id\":\"7\",\"state\":\"expired\",\"operator\":null,"
	                        "\"verdict\":\"DENY\",\"reason\":\"hitl_transition:reject\"}", false),
	                 "shackle-run: held 7 expired: denied (DENY hitl_transition:reject)\n");
	ck_assert_str_eq(notice("{\"event\":\"resolved\",\"id\":\"7\",\"state\":\"deferred\",\"operator\":\"bob\","
	                        "\"verdict\":\"HITL\",\"reason\":\"hitl_transition:defer_escalate\"}", false),
	                 "shackle-run: held 7 deferred by bob: still held (HITL hitl_transition:defer_escalate)\n");
	ck_assert_str_eq(notice("{\"event\":\"resolved\",\"id\":\"8\",\"state\":\"cancelled\",\"operator\":null}", false),
	                 "shackle-run: held 8 cancelled (interrupted, or its process or the session ended)\n");
	ck_assert_str_eq(notice("{\"event\":\"resolved\",\"id\":\"8\",\"state\":\"expired\",\"operator\":null}", false),
	                 "shackle-run: held 8 expired: denied\n");
	/* other events are not notices */
	ck_assert_str_eq(notice("{\"event\":\"decision\",\"verdict\":\"ALLOW\"}", false), "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("display");
	TCase *tc = tcase_create("display");

	tcase_add_test(tc, text_escapes_and_terminates);
	tcase_add_test(tc, held_notice);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
