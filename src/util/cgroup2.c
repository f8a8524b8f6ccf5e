/* SPDX-License-Identifier: MIT */
/*
 * Where cgroup v2 is: its mount (not always /sys/fs/cgroup; the first
 * cgroup2 line of /proc/self/mountinfo) and our own cgroup below it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/cgroup2.h"
#include "util/linux.h"

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
}

static int copy_out(const char *s, char *buf, size_t len)
{
	size_t n = strlen(s);

	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(buf, s, n + 1);
	return 0;
}

int shk_cgroup2_mount(char *buf, size_t len)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - ");
		char *save = NULL, *mnt = NULL, *tok;
		int field = 0;

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		*sep = 0;
		for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			if (++field == 5) {
				mnt = tok;
				break;
			}
		if (!mnt)
			continue;
		unescape_octal(mnt);
		return copy_out(mnt, buf, len);
	}
	return -ENOENT;
}

int shk_cgroup2_self(char *buf, size_t len)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
	_cleanup_free_ char *line = NULL;
	char mnt[4096];
	size_t cap = 0;
	ssize_t n;
	int r;

	if (!f)
		return -errno;
	r = shk_cgroup2_mount(mnt, sizeof(mnt));
	if (r < 0)
		return r;
	while ((n = getline(&line, &cap, f)) > 0) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		if (line[n - 1] == '\n')
			line[n - 1] = 0;
		if (snprintf(buf, len, "%s%s", mnt, strcmp(line + 3, "/") ? line + 3 : "") >= (int)len)
			return -ENAMETOOLONG;
		return 0;
	}
	return -ENOENT;
}
