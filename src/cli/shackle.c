/* SPDX-License-Identifier: MIT */
/* `shackle`: the subcommand dispatcher. Commands report their own errors. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

#ifndef SHACKLE_VERSION
#define SHACKLE_VERSION "unknown"
#endif

/* Keep sorted by name; `shackle help` prints them in this order. */
static const struct shk_command commands[] = {
#ifdef SHK_HAVE_CMD_HITL
	{ "approve", shk_cmd_approve, "approve a call held for a human (shackle-run)" },
#endif
#ifdef SHK_HAVE_CMD_ATTACH
	{ "attach", shk_cmd_attach, "enforce a policy on a running cgroup with eBPF" },
#endif
#ifdef SHK_HAVE_CMD_AUDIT
	{ "audit", shk_cmd_audit, "verify, show, export or replay an audit log" },
#endif
#ifdef SHK_HAVE_CMD_CONFORMANCE
	{ "conformance", shk_cmd_conformance, "run SHACKLE conformance vector files" },
#endif
#ifdef SHK_HAVE_CMD_HITL
	{ "defer", shk_cmd_defer, "defer the decision on a held call (it stays held)" },
#endif
#ifdef SHK_HAVE_CMD_ATTACH
	{ "detach", shk_cmd_detach, "remove pinned eBPF enforcement (shackle attach --pin)" },
#endif
#ifdef SHK_HAVE_CMD_DOCTOR
	{ "doctor", shk_cmd_doctor, "probe kernel features and report the enforcement modes" },
#endif
#ifdef SHK_HAVE_CMD_HITL
	{ "escalate", shk_cmd_escalate, "escalate a held call (it stays held)" },
#endif
#ifdef SHK_HAVE_CMD_KEYGEN
	{ "keygen", shk_cmd_keygen, "create an Ed25519 audit signing key pair" },
#endif
#ifdef SHK_HAVE_CMD_HITL
	{ "modify", shk_cmd_modify, "release a held connect() to another destination" },
	{ "pending", shk_cmd_pending, "list calls that running sessions hold for a human" },
#endif
#ifdef SHK_HAVE_CMD_POLICY
	{ "policy", shk_cmd_policy, "check or explain a policy file" },
#endif
#ifdef SHK_HAVE_CMD_HITL
	{ "reject", shk_cmd_reject, "reject a call held for a human" },
	{ "reset", shk_cmd_reset, "close the tripped circuit breaker of a session" },
	{ "watch", shk_cmd_watch, "follow decisions and new held calls of a session" },
#endif
};

void shk_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "shackle %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: shackle COMMAND [ARGS...]\n"
	        "       shackle help [COMMAND [SUBCOMMAND]]\n"
	        "       shackle --version\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n`shackle help COMMAND` (or `shackle COMMAND --help`) describes a command;\n"
	        "man shackle has them all.\n");
}

static const struct shk_command *find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* `shackle help CMD [SUB]` is `shackle CMD [SUB] --help`: the command's
 * own text, so the two cannot differ. */
static int help(int argc, char **argv)
{
	const struct shk_command *c;
	char *av[4];

	if (argc < 3) {
		usage(stdout);
		return 0;
	}
	if (argc > 4 || !(c = find(argv[2]))) {
		fprintf(stderr, "shackle help: %s '%s'\n", argc > 4 ? "too many arguments after" : "unknown command",
		        argv[2]);
		usage(stderr);
		return 2;
	}
	av[0] = argv[2];
	av[1] = argc == 4 ? argv[3] : "--help";
	av[2] = argc == 4 ? "--help" : NULL;
	av[3] = NULL;
	return c->run(argc - 1, av);
}

int main(int argc, char **argv)
{
	const struct shk_command *c;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "help"))
		return help(argc, argv);
	if (shk_cli_is_help(argv[1])) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("shackle %s\n", SHACKLE_VERSION);
		return 0;
	}
	if ((c = find(argv[1])))
		return c->run(argc - 1, argv + 1);
	fprintf(stderr, "shackle: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
