/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the policy loader and the policy globs.
 *
 * Input starting with byte 0x01: a differential test of the glob matcher.
 * Byte 1 picks path or argument mode; the rest is PATTERN 0x00 SUBJECT. The
 * NFA matcher of src/core/policy_glob.c must agree with the plain recursive
 * matcher below, written straight from docs/policy.md (small inputs only, as
 * the recursive one is exponential).
 *
 * Any other input is a policy text: loading must never crash or leak; a
 * failure must name a position inside the text (or none) and a message; a
 * success must survive matching a few exec and network calls.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <shackle/policy.h>

#include "core/policy_glob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define require(cond) do { if (!(cond)) abort(); } while (0)

/* Reference semantics: pattern p[i..plen) against s[0..slen). */
static bool ref(const char *p, size_t i, size_t plen, const char *s, size_t slen, bool path)
{
	if (i == plen)
		return slen == 0;
	if (p[i] == '\\')
		return slen && s[0] == p[i + 1] && ref(p, i + 2, plen, s + 1, slen - 1, path);
	if (p[i] == '?')
		return slen && (!path || s[0] != '/') && ref(p, i + 1, plen, s + 1, slen - 1, path);
	if (p[i] != '*')
		return slen && s[0] == p[i] && ref(p, i + 1, plen, s + 1, slen - 1, path);
	if (!path) {
		while (i < plen && p[i] == '*')
			i++;
		for (size_t k = 0; k <= slen; k++)
			if (ref(p, i, plen, s + k, slen - k, path))
				return true;
		return false;
	}
	if (i + 1 < plen && p[i + 1] == '*') {
		bool at_start = i == 0 || p[i - 1] == '/';

		if (at_start && i + 2 < plen && p[i + 2] == '/') {
			/* "**" + "/": nothing, or anything that ends with '/' */
			if (ref(p, i + 3, plen, s, slen, path))
				return true;
			for (size_t k = 1; k <= slen; k++)
				if (s[k - 1] == '/' && ref(p, i + 3, plen, s + k, slen - k, path))
					return true;
			return false;
		}
		for (size_t k = 0; k <= slen; k++)
			if (ref(p, i + 2, plen, s + k, slen - k, path))
				return true;
		return false;
	}
	for (size_t k = 0; k <= slen; k++) {
		if (ref(p, i + 1, plen, s + k, slen - k, path))
			return true;
		if (k < slen && s[k] == '/')
			break;
	}
	return false;
}

static void glob_differential(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 2, *s, *nul;
	size_t plen, slen, stars = 0;
	bool path;
	struct shk_glob g;
	const char *why = NULL;
	int r;

	if (size < 3)
		return;
	path = data[1] & 1;
	nul = memchr(p, 0, size - 2);
	if (!nul)
		return;
	plen = (size_t)(nul - p);
	s = nul + 1;
	slen = size - 2 - plen - 1;
	for (size_t i = 0; i < plen; i++)
		stars += p[i] == '*';
	if (plen > 16 || slen > 24 || stars > 5)
		return;
	r = shk_glob_compile(&g, p, plen, path ? SHK_GLOB_PATH : SHK_GLOB_ARG, &why);
	if (r == -EINVAL) {
		/* Only a trailing lone backslash is refused at these sizes. */
		size_t bs = 0;

		for (size_t i = plen; i > 0 && p[i - 1] == '\\'; i--)
			bs++;
		require(bs % 2 == 1);
		return;
	}
	require(r == 0);
	require(shk_glob_match(&g, s, slen) == ref(p, 0, plen, s, slen, path));
	shk_glob_free(&g);
}

static void exercise(shk_policy *p)
{
	static const char *const argv[] = { "git", "push", "origin", "main" };
	struct shk_net_dest d = { .family = SHK_NET_INET6, .port = 443,
				  .proto = SHK_NET_PROTO_TCP, .op = SHK_NET_OP_CONNECT };
	shk_net_addr a = { .family = SHK_NET_INET4, .addr = { 127, 0, 0, 1 } };
	shk_policy_match m;

	require(shk_policy_match_exec(p, "/usr/bin/git", argv, 4, &m) == 0);
	require(m.rule_index >= -1 && m.rule_index < (long)shk_policy_exec_rule_count(p));
	require(memchr(m.tool, 0, sizeof(m.tool)));
	d.addr[10] = d.addr[11] = 0xff;
	d.addr[12] = 127;
	d.addr[15] = 1;
	for (size_t i = 0; i < shk_policy_net_rule_count(p); i++) {
		shk_net_rule_info info;

		require(shk_policy_net_rule(p, i, &info) == 0);
		if (info.selector == SHK_NET_SEL_HOST)
			require(shk_policy_set_host_addrs(p, i, &a, 1) == 0);
	}
	for (unsigned op = SHK_NET_OP_CONNECT; op <= SHK_NET_OP_LISTEN; op <<= 1) {
		d.op = (shk_net_op)op;
		require(shk_policy_match_net(p, &d, &m) == 0);
		require(m.rule_index >= -1 && m.rule_index < (long)shk_policy_net_rule_count(p));
	}
	d = (struct shk_net_dest){ .family = SHK_NET_UNIX, .unix_name = "/run/x.sock",
				   .unix_len = 11, .op = SHK_NET_OP_CONNECT };
	require(shk_policy_match_net(p, &d, &m) == 0);
	require(strlen(shk_policy_digest_hex(p)) == 64);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shk_policy *p = NULL;
	shk_parse_error err;
	size_t lines = 1;
	int r;

	if (size > 0 && data[0] == 0x01) {
		glob_differential(data, size);
		return 0;
	}
	r = shk_policy_load_buffer((const char *)data, size, "fuzz.json", &p, &err);
	if (r < 0) {
		require(p == NULL);
		require(err.text[0] != 0);
		for (size_t i = 0; i < size; i++)
			lines += data[i] == '\n';
		require(err.line >= 0 && (size_t)err.line <= lines);
		require(err.column >= 0);
		return 0;
	}
	require(r == 0 && p != NULL);
	exercise(p);
	shk_policy_free(p);
	return 0;
}
