/* SPDX-License-Identifier: MIT */
/* Agent-chosen strings as an operator's terminal may show them (display.c). */
#ifndef SHACKLE_CLI_DISPLAY_H
#define SHACKLE_CLI_DISPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <shackle/json.h>

/* s with every byte that is not printable ASCII (and the backslash) written
 * as \xNN (\\): no escape sequence, no bidi control, no line break. */
void shk_cli_put_text(FILE *f, const char *s);
/* The same into buf (cut at len - 1); returns buf. */
const char *shk_cli_text(const char *s, char *buf, size_t len);
/* A call's params as a person recognises them: argv quoted as a shell would
 * read it back, or "unix PATH", or "PROTO ADDR port N"; longer than max
 * bytes: cut there with a note of how much is missing. malloc'd; NULL on
 * ENOMEM. */
char *shk_cli_summary(const shk_val *params, size_t max);
/* One line on f for a held call's "pending" or "resolved" event (hitl.c):
 * what waits, the command that approves it and when it expires; later what
 * became of it. prog: "shackle-run", "shackle attach". retry: a release
 * lets the agent's retry pass once (attach). Other events: nothing. */
void shk_cli_held_notice(FILE *f, const char *prog, const shk_val *event, bool retry);

#endif
