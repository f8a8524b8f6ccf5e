/* SPDX-License-Identifier: MIT */
/*
 * shackle/proplink.h — which kernel exec carries out which tool call the
 * model proposed (docs/gateway.md, "A proposal and the exec that carries it
 * out"). A link changes no action: it makes the exec a member of the
 * proposal's tool call (out of the repeat guard, docs/decide.md).
 *
 * A proposal names a command when its input has a member "command", else
 * "cmd", that is a string (a shell command line: Claude Code's Bash tool,
 * Codex CLI's exec_command) or a non-empty array of strings (an argv: Codex
 * CLI's shell tool, the Responses API's local_shell action). The field,
 * not the tool's name, is what is read: agents name their shell tools as
 * they like, and a link needs an exec that runs exactly that command.
 *
 * An exec carries out
 *   - an argv command when its argv is that array, element for element;
 *   - a command line when it is a shell (sh, bash, dash, zsh, ksh, mksh,
 *     ash by the canonical path's last component) run with -c and the
 *     command string is that line, or holds `eval WORD` where WORD, its
 *     shell quoting taken off, is that line (Claude Code 2.1 runs
 *     `bash -c "source SNAPSHOT ... && eval 'CMD' < /dev/null && pwd -P
 *     >| FILE"`).
 * Commands are compared by SHA-256, so a command of any length links.
 *
 * The ring holds the last SHK_PROPLINK_RING proposals allowed (at once or
 * on approval) that name a command, oldest first; an exec takes the oldest one it carries out
 * (each proposal links once). The ring is a plain value: the judge keeps
 * one under its lock, `shackle audit replay` rebuilds one from the log to
 * re-derive every link. All functions are pure: no allocation, no syscall.
 */
#ifndef SHACKLE_PROPLINK_H
#define SHACKLE_PROPLINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <shackle/json.h>

#define SHK_PROPLINK_RING 32
#define SHK_PROPLINK_TOOL_MAX 128  /* the tool's name as logged in a link, cut */
#define SHK_PROPLINK_CANDIDATES 8  /* commands one exec is tried as */

/* A command by digest: a command line and an argv never compare equal. */
typedef struct shk_proplink_cmd {
	uint8_t sha256[32];
} shk_proplink_cmd;

typedef struct shk_proplink_entry {
	int64_t seq;                   /* the proposal's decision entry */
	bool known;                    /* false: its command is not in the log (redacted) */
	shk_proplink_cmd cmd;
	char tool[SHK_PROPLINK_TOOL_MAX];
} shk_proplink_entry;

typedef struct shk_proplink_ring {
	shk_proplink_entry e[SHK_PROPLINK_RING]; /* oldest first */
	size_t n;
} shk_proplink_ring;

/* The command a proposal's input names: true with *ret filled, or false. */
bool shk_proplink_proposed(const shk_val *input, shk_proplink_cmd *ret);

/* Whether an input has a "command" or "cmd" member at all (replay: a
 * redacted proposal may name one whose value the log hides). */
bool shk_proplink_names_command(const shk_val *input);

/* The commands an exec of path (canonical) with argv carries out: its argv,
 * and for a shell run with -c the command string and every eval'd word of
 * it. Returns how many were written to out (at most max). */
size_t shk_proplink_exec_cmds(const char *path, const char *const *argv, size_t argc,
                              shk_proplink_cmd *out, size_t max);

/* Add a proposal (cmd NULL: not known); the oldest is dropped when full. */
void shk_proplink_add(shk_proplink_ring *r, int64_t seq, const char *tool, const shk_proplink_cmd *cmd);
/* The index of the oldest known entry whose command is one of cmds, or -1. */
int shk_proplink_find(const shk_proplink_ring *r, const shk_proplink_cmd *cmds, size_t n);
/* The index of the entry of that seq, or -1. */
int shk_proplink_index(const shk_proplink_ring *r, int64_t seq);
/* Take entry i out (into *ret, may be NULL). */
void shk_proplink_take(shk_proplink_ring *r, int i, shk_proplink_entry *ret);

#endif
