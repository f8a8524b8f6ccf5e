/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy_glob.h"

/* Tokens 0..255 are literal bytes. */
enum {
	T_ANY1 = 256, /* one byte, not '/' */
	T_ANYC,       /* one byte */
	T_STAR,       /* any run of bytes without '/' */
	T_DSTAR,      /* any run of bytes */
	T_SKIP3,      /* consumes nothing: may skip the next 2 tokens (see below) */
};

/*
 * "**" + "/" at the start of a component means "no directory, or any
 * directories": it compiles to T_SKIP3 T_DSTAR '/', where T_SKIP3 has empty
 * edges to the T_DSTAR and past the '/'. So the pattern "/usr", "/", two stars,
 * "/git" matches /usr/git and /usr/a/b/git but not /usr/bin/legit.
 */

#define WORDS ((SHK_GLOB_MAX_TOKENS + 1 + 63) / 64)

static bool is_special(uint16_t t)
{
	return t >= 256;
}

int shk_glob_compile(struct shk_glob *g, const char *p, size_t len, shk_glob_mode mode,
                     const char **ret_why)
{
	uint16_t *tok;
	size_t n = 0;
	bool literal = true;

	*g = (struct shk_glob){ 0 };
	tok = calloc(len + 1, sizeof(*tok));
	if (!tok)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		uint16_t t;

		if (p[i] == '\\') {
			if (i + 1 == len) {
				free(tok);
				*ret_why = "ends with a lone backslash";
				return -EINVAL;
			}
			t = (unsigned char)p[++i];
		} else if (p[i] == '?') {
			t = mode == SHK_GLOB_PATH ? T_ANY1 : T_ANYC;
		} else if (p[i] == '*') {
			bool dbl = i + 1 < len && p[i + 1] == '*';
			bool at_start = i == 0 || p[i - 1] == '/';

			if (mode == SHK_GLOB_ARG) {
				t = T_DSTAR;
			} else if (!dbl) {
				t = T_STAR;
			} else if (at_start && i + 2 < len && p[i + 2] == '/') {
				if (n + 3 > SHK_GLOB_MAX_TOKENS)
					goto too_long;
				tok[n++] = T_SKIP3;
				tok[n++] = T_DSTAR;
				tok[n++] = '/';
				literal = false;
				i += 2;
				continue;
			} else {
				t = T_DSTAR;
				i++;
			}
			while (i + 1 < len && p[i + 1] == '*' && mode == SHK_GLOB_ARG)
				i++;
		} else {
			t = (unsigned char)p[i];
		}
		if (is_special(t))
			literal = false;
		/* Adjacent stars add nothing but states. */
		if (n > 0 && (t == T_DSTAR || t == T_STAR) && tok[n - 1] == t)
			continue;
		if (n == SHK_GLOB_MAX_TOKENS)
			goto too_long;
		tok[n++] = t;
	}
	g->tok = tok;
	g->ntok = n;
	g->literal = literal;
	return 0;
too_long:
	free(tok);
	*ret_why = "is too long (more than 511 pattern characters)";
	return -EINVAL;
}

void shk_glob_free(struct shk_glob *g)
{
	free(g->tok);
	*g = (struct shk_glob){ 0 };
}

static inline void set_bit(uint64_t *w, size_t i)
{
	w[i / 64] |= UINT64_C(1) << (i % 64);
}

static inline bool get_bit(const uint64_t *w, size_t i)
{
	return (w[i / 64] >> (i % 64)) & 1;
}

/* Follow the empty-match edges; they only lead forward, so one pass suffices. */
static void closure(const struct shk_glob *g, uint64_t *w)
{
	for (size_t p = 0; p < g->ntok; p++) {
		if (!get_bit(w, p))
			continue;
		if (g->tok[p] == T_STAR || g->tok[p] == T_DSTAR)
			set_bit(w, p + 1);
		else if (g->tok[p] == T_SKIP3) {
			set_bit(w, p + 1);
			set_bit(w, p + 3);
		}
	}
}

static void step(const struct shk_glob *g, const uint64_t *cur, uint64_t *next, unsigned char c,
                 size_t nwords)
{
	for (size_t k = 0; k < nwords; k++) {
		uint64_t bits = cur[k];

		while (bits) {
			size_t p = k * 64 + (size_t)__builtin_ctzll(bits);
			uint16_t t;

			bits &= bits - 1;
			if (p >= g->ntok)
				continue; /* the accepting state consumes nothing */
			t = g->tok[p];
			switch (t) {
			case T_ANY1:
				if (c != '/')
					set_bit(next, p + 1);
				break;
			case T_ANYC:
				set_bit(next, p + 1);
				break;
			case T_STAR:
				if (c != '/')
					set_bit(next, p);
				break;
			case T_DSTAR:
				set_bit(next, p);
				break;
			case T_SKIP3:
				break;
			default:
				if (c == t)
					set_bit(next, p + 1);
				break;
			}
		}
	}
}

bool shk_glob_match(const struct shk_glob *g, const char *s, size_t len)
{
	uint64_t a[WORDS] = { 0 }, b[WORDS];
	uint64_t *cur = a, *next = b;
	size_t nwords = g->ntok / 64 + 1;

	if (g->literal) {
		if (len != g->ntok)
			return false;
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)s[i] != g->tok[i])
				return false;
		return true;
	}
	set_bit(cur, 0);
	closure(g, cur);
	for (size_t i = 0; i < len; i++) {
		bool any = false;
		uint64_t *tmp;

		memset(next, 0, nwords * sizeof(*next));
		step(g, cur, next, (unsigned char)s[i], nwords);
		closure(g, next);
		for (size_t k = 0; k < nwords; k++)
			any |= next[k] != 0;
		if (!any)
			return false;
		tmp = cur;
		cur = next;
		next = tmp;
	}
	return get_bit(cur, g->ntok);
}

bool shk_argv_match(const struct shk_argv_elem *e, size_t n, const char *const *argv, size_t argc)
{
	uint64_t cur = 1, next;

	if (n > SHK_ARGV_MAX_ELEMS)
		return false;
	for (size_t p = 0; p < n; p++)
		if ((cur >> p & 1) && e[p].kind == SHK_ARGV_ANY)
			cur |= UINT64_C(1) << (p + 1);
	for (size_t i = 0; i < argc; i++) {
		size_t alen = strlen(argv[i]);

		next = 0;
		for (size_t p = 0; p < n; p++) {
			if (!(cur >> p & 1))
				continue;
			if (e[p].kind == SHK_ARGV_ANY)
				next |= UINT64_C(1) << p;
			else if (e[p].kind == SHK_ARGV_ONE || shk_glob_match(&e[p].glob, argv[i], alen))
				next |= UINT64_C(1) << (p + 1);
		}
		for (size_t p = 0; p < n; p++)
			if ((next >> p & 1) && e[p].kind == SHK_ARGV_ANY)
				next |= UINT64_C(1) << (p + 1);
		if (!next)
			return false;
		cur = next;
	}
	return cur >> n & 1;
}
