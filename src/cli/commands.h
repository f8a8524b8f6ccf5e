/* SPDX-License-Identifier: MIT */
/* Subcommands of `shackle`. Each lives in its own cmd_*.c, takes the argv
 * that starts at the subcommand's name, reports its own errors once, and
 * returns the process exit status (0 ok, 1 a negative verdict such as a
 * failed verification, 2 bad usage or bad input). */
#ifndef SHACKLE_CLI_COMMANDS_H
#define SHACKLE_CLI_COMMANDS_H

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

/* Print "shackle <cmd>: " + message + "\n" to stderr. */
__attribute__((format(printf, 2, 3)))
void shk_cli_error(const char *cmd, const char *fmt, ...);

#endif
