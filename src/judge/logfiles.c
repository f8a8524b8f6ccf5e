/* SPDX-License-Identifier: MIT */
/*
 * The files of a run's audit log (logfiles.h): where the log goes, which key
 * signs it, and the order they are made in. A log is continued by the next
 * run given the same path, so its key must outlive the run: without --key
 * it is kept beside the log as LOG.key (0600, the invoking user's), and a
 * log found without the key that signed it is refused before anything is
 * written. The key files are written only once the log exists, so that a
 * log that cannot be made (a full disk, a device) leaves nothing behind.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "judge/logfiles.h"

__attribute__((format(printf, 3, 4)))
static int fail(struct shk_logfiles *f, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->err, sizeof(f->err), fmt, ap);
	va_end(ap);
	return r;
}

static int mkdirs(const char *path, mode_t mode)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(buf, mode) < 0 && errno != EEXIST ? -errno : 0;
}

int shk_state_dir(char *out, size_t len)
{
	const char *x = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	int n;

	if (geteuid() == 0)
		n = snprintf(out, len, "/var/lib/shackle");
	else if (x && x[0] == '/')
		n = snprintf(out, len, "%s/shackle", x);
	else if (home && home[0] == '/')
		n = snprintf(out, len, "%s/.local/state/shackle", home);
	else
		return -ENOENT;
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return mkdirs(out, 0700);
}

static const char *type_name(mode_t m)
{
	return S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : S_ISFIFO(m) ? "a FIFO"
	     : S_ISSOCK(m) ? "a socket" : S_ISDIR(m) ? "a directory" : S_ISLNK(m) ? "a symbolic link"
	     : "not a regular file";
}

static int set_paths(struct shk_logfiles *f, const char *log, const char *session_id)
{
	char dir[PATH_MAX];
	struct stat st;
	int r;

	if (log) {
		if ((size_t)snprintf(f->log, sizeof(f->log), "%s", log) >= sizeof(f->log))
			return fail(f, -ENAMETOOLONG, "%s: path too long", log);
	} else {
		if ((r = shk_state_dir(dir, sizeof(dir))) < 0)
			return fail(f, r, "cannot create the state directory (%s); give --audit LOG",
			            strerror(-r));
		snprintf(f->state_dir, sizeof(f->state_dir), "%s", dir);
		if ((size_t)snprintf(f->log, sizeof(f->log), "%.3800s/audit-%.100s.jsonl", dir,
		                     session_id) >= sizeof(f->log))
			return fail(f, -ENAMETOOLONG, "state directory path too long; give --audit LOG");
	}
	if (lstat(f->log, &st) == 0 && !S_ISREG(st.st_mode))
		return fail(f, -EINVAL, "%s: %s, not a file: the audit log must be a regular file",
		            f->log, type_name(st.st_mode));
	if ((size_t)snprintf(f->key, sizeof(f->key), "%s.key", f->log) >= sizeof(f->key) ||
	    (size_t)snprintf(f->pub, sizeof(f->pub), "%s.pub", f->log) >= sizeof(f->pub))
		return fail(f, -ENAMETOOLONG, "%s: path too long", f->log);
	return 0;
}

/* LOG.key is there: it must be ours and private, and LOG.pub its half. */
static int load_beside(struct shk_logfiles *f)
{
	uint8_t pk[SHK_ED25519_PUBLIC_LEN];
	shk_key_error ke;
	int r;

	if ((r = shk_key_load_owned(f->key, getuid(), &f->signer, &ke)) < 0)
		return fail(f, r, "%s", ke.text);
	r = shk_pubkey_load_file(f->pub, pk, &ke);
	if (r == -ENOENT) {
		f->write_pub = true;
		return 0;
	}
	if (r < 0)
		return fail(f, r, "%s", ke.text);
	if (memcmp(pk, shk_key_public(f->signer), sizeof(pk)) != 0)
		return fail(f, -EKEYREJECTED, "%s is not the public half of %s: which one signed %s? "
		            "Remove the wrong one", f->pub, f->key, f->log);
	return 0;
}

/* No LOG.key: a new log gets a new one; an existing log is refused here,
 * before anything is written (it was signed by a key kept elsewhere). */
static int new_beside(struct shk_logfiles *f)
{
	char fp[SHK_KEY_FINGERPRINT_LEN + 1] = "?";
	struct stat st;
	int r;

	if (stat(f->log, &st) == 0 && st.st_size > 0) {
		shk_ledger_signer(f->log, fp);
		return fail(f, -ENOKEY, "%s: continuing it takes the key that signed it (fingerprint "
		            "%s), and %s is not there: give that key with --key FILE, or another "
		            "--audit LOG", f->log, fp, f->key);
	}
	if (lstat(f->pub, &st) == 0)
		return fail(f, -EEXIST, "%s exists but %s does not: give the key of that log with "
		            "--key FILE, or remove %s", f->pub, f->key, f->pub);
	if ((r = shk_key_generate(&f->signer)) < 0)
		return fail(f, r, "cannot generate a key: %s", strerror(-r));
	f->write_key = f->write_pub = true;
	return 0;
}

int shk_logfiles_prepare(struct shk_logfiles *f, const char *log, const char *key,
                         const char *session_id)
{
	struct stat st;
	shk_key_error ke;
	int r;

	*f = (struct shk_logfiles){ 0 };
	if ((r = set_paths(f, log, session_id)) < 0)
		return r;
	if (key) {
		f->pub[0] = 0;
		snprintf(f->key, sizeof(f->key), "%s", key);
		if ((r = shk_key_load_file(key, &f->signer, &ke)) < 0)
			return fail(f, r, "%s", ke.text);
		return 0;
	}
	f->beside = true;
	if (lstat(f->key, &st) == 0)
		return load_beside(f);
	if (errno != ENOENT)
		return fail(f, -errno, "%s: %s", f->key, strerror(errno));
	return new_beside(f);
}

static int open_failed(struct shk_logfiles *f, int r)
{
	char fp[SHK_KEY_FINGERPRINT_LEN + 1] = "?", mine[SHK_KEY_FINGERPRINT_LEN + 1];

	switch (r) {
	case -EKEYREJECTED:
		shk_ledger_signer(f->log, fp);
		shk_key_fingerprint(shk_key_public(f->signer), mine);
		return fail(f, r, "%s: its sessions are signed by key %s, %s is key %s: one log "
		            "takes one key (verify checks every session against it); give the key "
		            "that signed it, or another --audit LOG", f->log, fp, f->key, mine);
	case -EBUSY:
		return fail(f, r, "%s: in use by another running session; give another --audit LOG",
		            f->log);
	case -EBADMSG:
		return fail(f, r, "%s: its last line is cut short or not a ledger entry, so it is "
		            "not continued (shackle audit verify says more); give another --audit LOG",
		            f->log);
	default:
		return fail(f, r, "%s: cannot open the audit log: %s", f->log, strerror(-r));
	}
}

/*
 * LOG.key and LOG.pub, flushed to disk with their directory (the log's
 * too) by the ledger's sync thread while the run sets up: 1-26 ms of
 * waiting for the disk taken off the start. The ledger completes no sync of
 * the log before theirs, and a failure there denies the calls after it
 * (shk_ledger_sync_first). The files themselves are made here, before the
 * agent starts: its view masks them by path.
 */
static int write_keys(struct shk_logfiles *f, shk_ledger *l, shk_key_error *ke)
{
	int fds[3], r = shk_key_write_files_unsynced(f->signer, f->log, fds, ke);

	if (r < 0)
		return r;
	if ((r = shk_ledger_sync_first(l, fds, 3)) < 0) {
		snprintf(ke->text, sizeof(ke->text), "cannot flush the key files to disk: %s",
		         strerror(-r));
		unlink(f->key);
		unlink(f->pub);
	}
	return r;
}

int shk_logfiles_open(struct shk_logfiles *f, const shk_ledger_session *ls,
                      const shk_ledger_options *lo, shk_ledger **ret)
{
	shk_ledger_options o = lo ? *lo : (shk_ledger_options){ 0 };
	shk_key_error ke;
	int r;

	o.continue_existing = true;
	/* the key files are written beside it: their directory sync covers it
	 * (on the ledger's thread when LOG.key is new, write_keys) */
	o.caller_syncs_dir = f->write_key || f->write_pub;
	if ((r = shk_ledger_open(f->log, f->signer, ls, &o, ret)) < 0)
		return open_failed(f, r);
	r = 0;
	if (f->write_key)
		r = write_keys(f, *ret, &ke);
	else if (f->write_pub)
		r = shk_pubkey_write_file(f->signer, f->pub, &ke);
	if (r < 0) {
		shk_ledger_discard(*ret, f->log);
		*ret = NULL;
		return fail(f, r, "%s", ke.text);
	}
	return 0;
}

void shk_logfiles_free(struct shk_logfiles *f)
{
	shk_key_free(f->signer);
	f->signer = NULL;
}
