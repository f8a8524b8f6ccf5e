/* SPDX-License-Identifier: MIT */
/* A command's usage text serves both --help and the usage error (commands.h). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

bool shk_cli_is_help(const char *arg)
{
	return arg && (!strcmp(arg, "--help") || !strcmp(arg, "-h"));
}

int shk_cli_help(const struct shk_usage *u)
{
	fputs(u->text, stdout);
	return 0;
}

static size_t synopsis_len(const struct shk_usage *u)
{
	const char *end = strstr(u->text, "\n\n");

	return end ? (size_t)(end - u->text) + 1 : strlen(u->text);
}

int shk_cli_synopsis(const struct shk_usage *u)
{
	fprintf(stderr, "%.*s(`shackle help %s` says more)\n", (int)synopsis_len(u), u->text, u->cmd);
	return 2;
}

int shk_cli_usage_error(const struct shk_usage *u, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "shackle %s: ", u->cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return shk_cli_synopsis(u);
}

int shk_cli_group_help(const char *cmd, const struct shk_usage *const subs[], size_t n, bool error)
{
	FILE *f = error ? stderr : stdout;
	const char *prefix = "usage: ";

	for (size_t i = 0; i < n; i++) {
		const char *t = subs[i]->text;

		/* one block: "usage: " on the first line only */
		if (i && !strncmp(t, prefix, strlen(prefix)))
			fprintf(f, "%*s%.*s", (int)strlen(prefix), "", (int)(synopsis_len(subs[i]) - strlen(prefix)),
			        t + strlen(prefix));
		else
			fprintf(f, "%.*s", (int)synopsis_len(subs[i]), t);
	}
	fprintf(f, "\n`shackle help %s SUBCOMMAND` describes one.\n", cmd);
	return error ? 2 : 0;
}
