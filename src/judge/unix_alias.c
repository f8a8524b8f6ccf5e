/* SPDX-License-Identifier: MIT */
/*
 * Unix rules as the kernel names the socket. The supervisor judges a unix
 * socket by its canonical name (supervise/net.c: the directory resolved, symlinks
 * followed), so a rule written through a symlinked directory never matched:
 * {"unix": "/var/run/docker.sock", "action": "deny"} let the agent reach
 * /run/docker.sock on a system where /var/run -> /run.
 * At start each file-system unix rule that denies or holds gets an alias
 * with its literal directory resolved: the whole path for a literal rule
 * whose socket (or a symlink to one) exists, else the directory before the
 * first wildcard. Allow rules get none: a symlink the agent planted would
 * widen them. They must name the socket as the kernel does.
 * A directory that does not exist yet is left as written.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/pipeline.h"

#define GLOB_CHARS "*?[{\\"

/* dst = canonical directory (glob characters escaped) + rest; 0 or -errno */
static int join_escaped(char *dst, size_t len, const char *canon, const char *rest)
{
	size_t o = 0;

	for (const char *c = canon; *c; c++) {
		if (strchr(GLOB_CHARS, *c) && o + 1 < len)
			dst[o++] = '\\';
		if (o + 1 >= len)
			return -ENAMETOOLONG;
		dst[o++] = *c;
	}
	if (o + strlen(rest) + 1 > len)
		return -ENAMETOOLONG;
	strcpy(dst + o, rest);
	return 0;
}

/* The alias of one pattern into buf; -ENOENT: nothing to resolve. */
static int alias_of_pattern(const char *pat, char *buf, size_t len)
{
	char dir[PATH_MAX], canon[PATH_MAX];
	size_t wild = strcspn(pat, GLOB_CHARS);
	const char *slash;

	if (pat[wild] == 0 && realpath(pat, canon))
		return join_escaped(buf, len, canon, "");
	/* the last '/' before the first wildcard ends the literal directory */
	for (slash = pat + wild; slash > pat && *slash != '/'; slash--)
		;
	if (slash == pat || (size_t)(slash - pat) >= sizeof(dir))
		return -ENOENT; /* "/x*": the root needs no resolving */
	memcpy(dir, pat, (size_t)(slash - pat));
	dir[slash - pat] = 0;
	if (!realpath(dir, canon))
		return -errno;
	return join_escaped(buf, len, canon, slash);
}

int shk_pipeline_load_unix_aliases(struct shk_pipeline *p)
{
	size_t n = shk_policy_net_rule_count(p->policy);
	char alias[PATH_MAX + 64];

	for (size_t i = 0; i < n; i++) {
		shk_net_rule_info info;
		int r;

		/* only rules that restrict: an allow rule through a symlink the
		 * agent planted (or in a directory it can write) would let it
		 * reach another socket */
		if (shk_policy_net_rule(p->policy, i, &info) < 0 || !info.unix_pattern ||
		    info.unix_abstract || info.unix_pattern[0] != '/' || info.action == SHK_ACTION_ALLOW)
			continue;
		if (alias_of_pattern(info.unix_pattern, alias, sizeof(alias)) < 0 ||
		    strcmp(alias, info.unix_pattern) == 0)
			continue;
		if ((r = shk_policy_set_unix_alias(p->policy, i, alias)) < 0 && r != -EINVAL)
			return r;
	}
	return 0;
}
