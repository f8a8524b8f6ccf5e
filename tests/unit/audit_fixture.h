/* SPDX-License-Identifier: MIT */
/* Shared by the audit tests: temporary directories, a scripted ledger, and
 * line-level file surgery for the tamper tests. Header-only. */
#ifndef SHACKLE_TEST_AUDIT_FIXTURE_H
#define SHACKLE_TEST_AUDIT_FIXTURE_H

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include <shackle/audit.h>
#include <shackle/canon.h>
#include <shackle/json.h>

static char tdir[256];

static inline int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static inline void tdir_setup(void)
{
	snprintf(tdir, sizeof(tdir), "/tmp/shk-audit-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tdir));
}

static inline void tdir_teardown(void)
{
	nftw(tdir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

static inline const char *tpath(const char *name)
{
	static char buf[8][512];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tdir, name);
	return buf[i];
}

/* ---- files as arrays of lines -------------------------------------------- */

typedef struct lines {
	char *l[4096];
	size_t n;
	bool last_newline;
} lines;

static inline void lines_read(const char *path, lines *ls)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	ck_assert_ptr_nonnull(f);
	ls->n = 0;
	ls->last_newline = true;
	while ((n = getline(&line, &cap, f)) > 0) {
		ck_assert_uint_lt(ls->n, 4096);
		ls->last_newline = line[n - 1] == '\n';
		if (ls->last_newline)
			line[n - 1] = 0;
		ls->l[ls->n++] = strdup(line);
	}
	free(line);
	fclose(f);
}

static inline void lines_write(const char *path, const lines *ls)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; i < ls->n; i++)
		fprintf(f, "%s%s", ls->l[i], i + 1 < ls->n || ls->last_newline ? "\n" : "");
	fclose(f);
}

static inline void lines_free(lines *ls)
{
	for (size_t i = 0; i < ls->n; i++)
		free(ls->l[i]);
	ls->n = 0;
}

static inline void lines_delete(lines *ls, size_t i)
{
	free(ls->l[i]);
	memmove(&ls->l[i], &ls->l[i + 1], (ls->n - i - 1) * sizeof(char *));
	ls->n--;
}

static inline void lines_insert(lines *ls, size_t i, const char *text)
{
	memmove(&ls->l[i + 1], &ls->l[i], (ls->n - i) * sizeof(char *));
	ls->l[i] = strdup(text);
	ls->n++;
}

/* Index of the first line (from `from`) containing needle, or -1. */
static inline long lines_find(const lines *ls, size_t from, const char *needle)
{
	for (size_t i = from; i < ls->n; i++)
		if (strstr(ls->l[i], needle))
			return (long)i;
	return -1;
}

/* Replace the first occurrence of a by b in line i. */
static inline void line_replace(lines *ls, size_t i, const char *a, const char *b)
{
	char *p = strstr(ls->l[i], a), *n;

	ck_assert_msg(p != NULL, "'%s' not in line %zu", a, i + 1);
	n = malloc(strlen(ls->l[i]) - strlen(a) + strlen(b) + 1);
	ck_assert_ptr_nonnull(n);
	sprintf(n, "%.*s%s%s", (int)(p - ls->l[i]), ls->l[i], b, p + strlen(a));
	free(ls->l[i]);
	ls->l[i] = n;
}

/* ---- keys ------------------------------------------------------------------ */

static inline shk_key *test_key(const char *prefix)
{
	shk_key *k = NULL;
	shk_key_error err;

	ck_assert_int_eq(shk_key_generate(&k), 0);
	if (prefix)
		ck_assert_int_eq(shk_key_write_files(k, tpath(prefix), &err), 0);
	return k;
}

static inline void verify_paths(const char *const *paths, size_t n, const shk_key *k,
                         bool live, shk_verify_report *rep)
{
	shk_verify_options o = { .live = live };

	ck_assert_int_eq(shk_verify_files(paths, n, shk_key_public(k), &o, rep), 0);
}

static inline void verify_one(const char *path, const shk_key *k, shk_verify_report *rep)
{
	verify_paths(&path, 1, k, false, rep);
}

#define ck_assert_finding(rep, cls_, line_, seq_) do { \
	ck_assert_msg((rep)->result == (cls_), "result %s, expected %s (%s)", \
	              shk_verify_class_name((rep)->result), shk_verify_class_name(cls_), \
	              (rep)->nfindings ? (rep)->findings[0].detail : ""); \
	const shk_verify_finding *f_ = NULL; \
	for (size_t i_ = 0; i_ < (rep)->nfindings; i_++) \
		if ((rep)->findings[i_].cls == (cls_)) { f_ = &(rep)->findings[i_]; break; } \
	ck_assert_ptr_nonnull(f_); \
	ck_assert_uint_eq(f_->line, (line_)); \
	ck_assert_int_eq(f_->seq, (seq_)); \
} while (0)

#endif
