/* SPDX-License-Identifier: MIT */
/* `shackle keygen --out PREFIX`: an Ed25519 audit signing key pair. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <shackle/audit.h>

#include "cli/commands.h"

static const struct shk_usage keygen_usage = { "keygen",
	"usage: shackle keygen --out PREFIX\n\n"
	"Writes PREFIX.key (the secret key, mode 0600) and PREFIX.pub (the public key\n"
	"that `shackle audit verify --pubkey` takes). Existing files are never\n"
	"overwritten. Prints the key fingerprint.\n" };

int shk_cmd_keygen(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *prefix = NULL;
	char fp[SHK_KEY_FINGERPRINT_LEN + 1];
	shk_key_error err = { "" };
	shk_key *key = NULL;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			prefix = optarg;
			break;
		case 'h':
			return shk_cli_help(&keygen_usage);
		default:
			return shk_cli_synopsis(&keygen_usage);
		}
	}
	if (!prefix || optind != argc)
		return shk_cli_usage_error(&keygen_usage, "--out PREFIX is required and nothing else");
	r = shk_key_generate(&key);
	if (r < 0) {
		shk_cli_error("keygen", "cannot generate a key: %s", strerror(-r));
		return 1;
	}
	r = shk_key_write_files(key, prefix, &err);
	if (r < 0) {
		shk_cli_error("keygen", "%s", err.text);
		shk_key_free(key);
		return 1;
	}
	shk_key_fingerprint(shk_key_public(key), fp);
	printf("%s.key\n%s.pub\nfingerprint %s\n", prefix, prefix, fp);
	shk_key_free(key);
	return 0;
}
