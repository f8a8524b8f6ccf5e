/* SPDX-License-Identifier: MIT */
/* `shackle audit verify --shared` (audit_shared.c), dispatched by cmd_audit.c. */
#ifndef SHACKLE_CLI_AUDIT_SHARED_H
#define SHACKLE_CLI_AUDIT_SHARED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <shackle/audit.h>

/* Verify each of logs (one host's FILE[,ROTATED...] each) with keys[i], or
 * keys[0] for all when nkeys is 1, then check that the shared spend they
 * record adds up. Prints the result; returns the exit status. */
int shk_audit_verify_shared(const uint8_t (*keys)[SHK_ED25519_PUBLIC_LEN], size_t nkeys, char **logs,
			    size_t nlogs, bool live, bool json);

#endif
