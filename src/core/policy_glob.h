/* SPDX-License-Identifier: MIT */
/*
 * Globs of policy v1, compiled at load time into a token array and matched
 * by simulating the pattern as an NFA over a fixed-size bit set: time
 * O(len(subject) * len(pattern)), no backtracking blow-up on hostile
 * subjects, no allocation, no recursion.
 */
#ifndef SHACKLE_CORE_POLICY_GLOB_H
#define SHACKLE_CORE_POLICY_GLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Pattern tokens after compilation (so the bit set stays small). */
#define SHK_GLOB_MAX_TOKENS 511
/* Elements of an argv pattern (one 64-bit state word). */
#define SHK_ARGV_MAX_ELEMS 63

typedef enum shk_glob_mode {
	SHK_GLOB_PATH, /* '*' and '?' stop at '/', '**' crosses it */
	SHK_GLOB_ARG,  /* '*', '**' and '?' match any byte */
} shk_glob_mode;

struct shk_glob {
	uint16_t *tok;
	size_t ntok;
	bool literal; /* no wildcard: compare bytes */
};

/*
 * Compile pattern[0..len). Returns 0, -ENOMEM, or -EINVAL with a static
 * message in *ret_why (trailing backslash, too many tokens).
 */
int shk_glob_compile(struct shk_glob *g, const char *pattern, size_t len, shk_glob_mode mode,
                     const char **ret_why);
void shk_glob_free(struct shk_glob *g);
bool shk_glob_match(const struct shk_glob *g, const char *s, size_t len);

enum shk_argv_kind { SHK_ARGV_ONE, SHK_ARGV_ANY, SHK_ARGV_GLOB };

struct shk_argv_elem {
	enum shk_argv_kind kind;
	struct shk_glob glob; /* SHK_ARGV_GLOB */
};

/* Does argv[0..argc) match elems[0..n)? n <= SHK_ARGV_MAX_ELEMS. */
bool shk_argv_match(const struct shk_argv_elem *elems, size_t n, const char *const *argv,
                    size_t argc);

#endif
