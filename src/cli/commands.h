/* SPDX-License-Identifier: MIT */
/* Subcommands of `shackle`. Each lives in its own cmd_*.c, takes the argv
 * that starts at the subcommand's name, reports its own errors once, and
 * returns the process exit status (0 ok, 1 a negative verdict such as a
 * failed verification, 2 bad usage or bad input). */
#ifndef SHACKLE_CLI_COMMANDS_H
#define SHACKLE_CLI_COMMANDS_H

#include <stdbool.h>

struct shk_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

int shk_cmd_conformance(int argc, char **argv);
int shk_cmd_policy(int argc, char **argv);
int shk_cmd_keygen(int argc, char **argv);
int shk_cmd_audit(int argc, char **argv);
int shk_cmd_doctor(int argc, char **argv);
int shk_cmd_attach(int argc, char **argv);
int shk_cmd_detach(int argc, char **argv);
/* cmd_hitl.c: operator commands for held calls */
int shk_cmd_pending(int argc, char **argv);
int shk_cmd_approve(int argc, char **argv);
int shk_cmd_reject(int argc, char **argv);
int shk_cmd_defer(int argc, char **argv);
int shk_cmd_escalate(int argc, char **argv);
int shk_cmd_modify(int argc, char **argv);
int shk_cmd_reset(int argc, char **argv);
int shk_cmd_watch(int argc, char **argv);

/*
 * A command's usage, written once and used both ways: `--help` prints all
 * of text on stdout (exit 0), a usage error prints its synopsis (text up to
 * the first blank line) on stderr (exit 2). text starts "usage: shackle ".
 */
struct shk_usage {
	const char *cmd;  /* "audit verify": as in "shackle audit verify: message" */
	const char *text;
};

/* "--help" or "-h". */
bool shk_cli_is_help(const char *arg);
/* The whole text on stdout; returns 0, the exit status. */
int shk_cli_help(const struct shk_usage *u);
/* The synopsis and where the rest is, on stderr; returns 2. */
int shk_cli_synopsis(const struct shk_usage *u);
/* "shackle CMD: message", then the synopsis, on stderr; returns 2. */
__attribute__((format(printf, 2, 3)))
int shk_cli_usage_error(const struct shk_usage *u, const char *fmt, ...);

/* A command with subcommands (audit, policy): the synopsis of each, as one
 * usage block, and where the rest is; on stderr when error (returns 2),
 * else on stdout (returns 0). */
int shk_cli_group_help(const char *cmd, const struct shk_usage *const subs[], size_t n, bool error);

/* Print "shackle <cmd>: " + message + "\n" to stderr. */
__attribute__((format(printf, 2, 3)))
void shk_cli_error(const char *cmd, const char *fmt, ...);

#endif
