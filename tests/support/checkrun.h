/* SPDX-License-Identifier: MIT */
/* The end of every Check-based test program. */
#ifndef SHACKLE_CHECKRUN_H
#define SHACKLE_CHECKRUN_H

#include <check.h>

/* Run the suite (CK_NORMAL output), free it; the exit status for meson. */
static inline int shk_test_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

#endif
