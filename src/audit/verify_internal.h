/* SPDX-License-Identifier: MIT */
/* Verification records shared by the reader and the chain walk. Private. */
#ifndef SHACKLE_AUDIT_VERIFY_INTERNAL_H
#define SHACKLE_AUDIT_VERIFY_INTERNAL_H

#include "audit/internal.h"

enum {
	K_OTHER = 0,
	K_SESSION_START,
	K_DECISION,
	K_POST_EXEC,
	K_HITL,
	K_BREAKER_TRIP,
	K_CHECKPOINT,
	K_SESSION_END,
	K_CONTINUE,
	K_REFUSAL,
	K_LAST = K_REFUSAL,
};

enum { R_OK = 0, R_TORN, R_MALFORMED, R_NONCANONICAL };
enum { SIG_NONE = 0, SIG_PRESENT, SIG_BAD_FORMAT };

struct vrec {
	uint32_t file;
	uint64_t line;
	uint8_t state, sig_state;
	int kind;
	int64_t seq;
	bool hash_ok, has_link;
	uint8_t prev[32], hash[32], calc[32], link[32], sig[64];
	char fingerprint[SHK_KEY_FINGERPRINT_LEN + 1];
	char *session;
};

struct vread {
	struct vrec *recs;
	size_t n, cap;
	uint32_t file;
};

int shk_audit_kind(const shk_val *kind);
int shk_audit_vread_file(struct vread *rd, const char *path, uint32_t file);
void shk_audit_vread_free(struct vread *rd);

#endif
