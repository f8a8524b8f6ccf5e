/* SPDX-License-Identifier: MIT */
/* `shackle audit show` (audit_show.c), dispatched by cmd_audit.c. */
#ifndef SHACKLE_CLI_AUDIT_SHOW_H
#define SHACKLE_CLI_AUDIT_SHOW_H

#include "cli/commands.h"

extern const struct shk_usage shk_audit_show_usage;

/* argv starts at "show"; returns the exit status. */
int shk_audit_show(int argc, char **argv);

#endif
