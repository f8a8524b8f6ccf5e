/* SPDX-License-Identifier: MIT */
#ifndef SHACKLE_JUDGE_LOGFILES_H
#define SHACKLE_JUDGE_LOGFILES_H

#include <limits.h>
#include <stdbool.h>

#include <shackle/audit.h>

/*
 * The audit log of a run and its key, as shackle-run and shackle attach
 * take them (docs/audit.md, "Files of a run"): the log named, or
 * STATE/audit-SESSION.jsonl; the key named (shackle keygen), or LOG.key
 * beside the log — made with LOG.pub when the log is new, used again when
 * it is continued. err says what went wrong, for the CLI to print once.
 */
struct shk_logfiles {
	char log[PATH_MAX];
	char key[PATH_MAX];       /* the signing key's file */
	char pub[PATH_MAX];       /* LOG.pub when the key is kept beside the log, else "" */
	char state_dir[PATH_MAX]; /* the default directory when no log was named, else "" */
	bool beside;              /* the key is LOG.key */
	bool write_key, write_pub; /* to be written once the log exists */
	shk_key *signer;
	char err[PATH_MAX + 512];
};

/* The default directory of logs: /var/lib/shackle for root, else
 * $XDG_STATE_HOME/shackle or ~/.local/state/shackle; created 0700. */
int shk_state_dir(char *out, size_t len);

/* Paths and key: log and key may be NULL (the defaults). Creates nothing
 * but the state directory. */
int shk_logfiles_prepare(struct shk_logfiles *f, const char *log, const char *key,
                         const char *session_id);

/* Create or continue the log (always continued: running twice appends a
 * session) and then write the key files it needs. On failure nothing new
 * is left behind. */
int shk_logfiles_open(struct shk_logfiles *f, const shk_ledger_session *ls,
                      const shk_ledger_options *lo, shk_ledger **ret);

void shk_logfiles_free(struct shk_logfiles *f);

#endif
