/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 for the whole library (private). libsodium's portable SHA-256
 * costs several microseconds per kilobyte, and every tool call hashes its
 * params and its audit entry on the decision path; where the CPU has the SHA
 * extensions the block function uses them (about ten times faster),
 * everywhere else libsodium does the work. Pure computation: no syscalls,
 * no allocation. Both paths are checked against each other by test_audit.
 */
#ifndef SHACKLE_CORE_SHA256_H
#define SHACKLE_CORE_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

typedef struct shk_sha256 {
	bool ni;
	uint32_t h[8];
	uint8_t buf[64];
	size_t buffered;
	uint64_t total;
	crypto_hash_sha256_state sodium;
} shk_sha256;

void shk_sha256_init(shk_sha256 *s);
void shk_sha256_update(shk_sha256 *s, const void *data, size_t len);
void shk_sha256_final(shk_sha256 *s, uint8_t out[32]);
void shk_sha256_once(const void *data, size_t len, uint8_t out[32]);
bool shk_sha256_accelerated(void);
/* For tests and benchmarks: force the libsodium path (true) or detect (false). */
void shk_sha256_force_portable(bool portable);

#endif
