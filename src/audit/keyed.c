/* SPDX-License-Identifier: MIT */
/*
 * The digest of a call whose logged params are redacted: HMAC-SHA256 of the
 * canonical params under a random key of this process, which is never
 * written anywhere. The plain SHA-256 next to a redacted `--token=4821`
 * would give the secret away to anyone who hashes 10^4 guesses; the keyed
 * one still equals itself for equal params within the process, which is
 * all the repeat guard, HITL bindings and replay (which takes a redacted
 * entry's digest from the log) need. docs/audit.md, "Redacted params".
 */
#include <errno.h>
#include <pthread.h>
#include <sodium.h>

#include <shackle/audit.h>
#include <shackle/canon.h>
#include <shackle/redact.h>

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static uint8_t redact_key[crypto_auth_hmacsha256_KEYBYTES];
static bool redact_key_ok;

static void make_key(void)
{
	if (sodium_init() < 0)
		return;
	randombytes_buf(redact_key, sizeof(redact_key));
	redact_key_ok = true;
}

static int hmac_sink(void *ctx, const char *bytes, size_t len)
{
	return crypto_auth_hmacsha256_update(ctx, (const unsigned char *)bytes, len) == 0 ? 0 : -EIO;
}

static int keyed_digest(shk_toolcall *tc)
{
	crypto_auth_hmacsha256_state st;
	uint8_t mac[crypto_auth_hmacsha256_BYTES];
	int r;

	pthread_once(&key_once, make_key);
	if (!redact_key_ok)
		return -EIO;
	crypto_auth_hmacsha256_init(&st, redact_key, sizeof(redact_key));
	r = shk_canon_write(tc->params, hmac_sink, &st);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
	return r < 0 ? r : shk_toolcall_set_digest(tc, mac);
}

int shk_audit_prepare_call(const shk_policy *policy, shk_toolcall *tc)
{
	shk_redact_keys k = { 0 };
	int r = shk_toolcall_prepare(tc);

	if (r < 0 || !policy)
		return r;
	k.keys = shk_policy_redact_keys(policy, &k.n);
	if (shk_redact_needed(&k, tc->params) && (r = keyed_digest(tc)) < 0)
		return -EIO;
	return 0;
}
