/* SPDX-License-Identifier: MIT */
/*
 * Ed25519 key files.
 *
 *   PREFIX.key:  "shackle-ed25519-secret-v1\n" + 64 hex digits (the 32-byte seed) + "\n"
 *   PREFIX.pub:  "shackle-ed25519-public-v1\n" + 64 hex digits (the public key) + "\n"
 *
 * Only the seed is stored: the public half is derived again on load, so a
 * secret file cannot disagree with itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "audit/internal.h"
#include "util/linux.h"

#define SECRET_HEADER "shackle-ed25519-secret-v1\n"
#define PUBLIC_HEADER "shackle-ed25519-public-v1\n"
#define KEY_FILE_MAX 512

struct shk_key {
	uint8_t sk[crypto_sign_SECRETKEYBYTES]; /* seed || pk */
	uint8_t pk[crypto_sign_PUBLICKEYBYTES];
};

__attribute__((format(printf, 2, 3)))
static void key_err(shk_key_error *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
}

int shk_audit_sodium_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

static shk_key *key_alloc(void)
{
	shk_key *k;

	if (shk_audit_sodium_init() < 0)
		return NULL;
	k = sodium_malloc(sizeof(*k));
	if (k)
		memset(k, 0, sizeof(*k));
	return k;
}

void shk_key_free(shk_key *key)
{
	if (key)
		sodium_free(key); /* zeroes the memory */
}

int shk_key_generate(shk_key **ret_key)
{
	shk_key *k = key_alloc();

	if (!k)
		return -ENOMEM;
	crypto_sign_keypair(k->pk, k->sk);
	*ret_key = k;
	return 0;
}

const uint8_t *shk_key_public(const shk_key *key)
{
	return key->pk;
}

int shk_key_sign(const shk_key *key, const uint8_t *msg, size_t len, uint8_t ret_sig[64])
{
	return crypto_sign_detached(ret_sig, NULL, msg, len, key->sk) == 0 ? 0 : -EIO;
}

void shk_key_fingerprint(const uint8_t pk[SHK_ED25519_PUBLIC_LEN], char out[SHK_KEY_FINGERPRINT_LEN + 1])
{
	uint8_t d[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(d, pk, SHK_ED25519_PUBLIC_LEN);
	shk_audit_hex(d, SHK_KEY_FINGERPRINT_LEN / 2, out);
}

static int open_dir_of(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if ((size_t)snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path),
	                          path) >= sizeof(dir))
		return -ENAMETOOLONG;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int shk_audit_fsync_dir(const char *path)
{
	int fd = open_dir_of(path), r = 0;

	if (fd < 0)
		return fd;
	if (fsync(fd) < 0 && errno != EINVAL)
		r = -errno;
	close(fd);
	return r;
}

/*
 * keep NULL: synced (with its directory when sync_dir) and closed. keep
 * non-NULL: written, not synced, and the open descriptor is *keep.
 */
static int write_key_file(const char *path, mode_t mode, const char *header,
                          const uint8_t *bytes, bool sync_dir, int *keep, shk_key_error *err)
{
	char text[KEY_FILE_MAX];
	char hex[65];
	int fd, r;

	shk_audit_hex(bytes, 32, hex);
	snprintf(text, sizeof(text), "%s%s\n", header, hex);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0) {
		r = -errno;
		key_err(err, "%s: %s", path, r == -EEXIST ? "exists; refusing to overwrite" : strerror(-r));
		return r;
	}
	/* The umask may have widened nothing but could have narrowed: be exact. */
	r = fchmod(fd, mode) < 0 ? -errno : 0;
	if (r == 0)
		r = shk_write_all(fd, text, strlen(text));
	if (r == 0 && !keep && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && !keep && sync_dir)
		r = shk_audit_fsync_dir(path);
	sodium_memzero(text, sizeof(text));
	sodium_memzero(hex, sizeof(hex));
	if (r == 0 && keep) {
		*keep = fd;
		return 0;
	}
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0) {
		key_err(err, "%s: %s", path, strerror(-r));
		unlink(path);
	}
	return r;
}

static int key_paths(const char *prefix, char skp[4096], char pkp[4096], shk_key_error *err)
{
	if (!prefix || !*prefix) {
		key_err(err, "empty output prefix");
		return -EINVAL;
	}
	if (snprintf(skp, 4096, "%s.key", prefix) >= 4096 ||
	    snprintf(pkp, 4096, "%s.pub", prefix) >= 4096) {
		key_err(err, "output prefix too long");
		return -ENAMETOOLONG;
	}
	/* Refuse before creating anything if either exists. */
	if (access(pkp, F_OK) == 0) {
		key_err(err, "%s: exists; refusing to overwrite", pkp);
		return -EEXIST;
	}
	return 0;
}

int shk_key_write_files(const shk_key *key, const char *prefix, shk_key_error *err)
{
	char skp[4096], pkp[4096];
	int r = key_paths(prefix, skp, pkp, err);

	if (r < 0)
		return r;
	/* both in one directory: its entries are made durable by one sync */
	r = write_key_file(skp, 0600, SECRET_HEADER, key->sk, false, NULL, err);
	if (r < 0)
		return r;
	r = write_key_file(pkp, 0644, PUBLIC_HEADER, key->pk, false, NULL, err);
	if (r == 0 && (r = shk_audit_fsync_dir(pkp)) < 0) {
		key_err(err, "%s: %s", pkp, strerror(-r));
		unlink(pkp);
	}
	if (r < 0)
		unlink(skp);
	return r;
}

int shk_key_write_files_unsynced(const shk_key *key, const char *prefix, int ret_fds[3],
                                 shk_key_error *err)
{
	char skp[4096], pkp[4096];
	int fds[3] = { -1, -1, -1 };
	int r = key_paths(prefix, skp, pkp, err);

	if (r == 0)
		r = write_key_file(skp, 0600, SECRET_HEADER, key->sk, false, &fds[0], err);
	if (r < 0)
		return r;
	r = write_key_file(pkp, 0644, PUBLIC_HEADER, key->pk, false, &fds[1], err);
	if (r == 0 && (fds[2] = open_dir_of(pkp)) < 0) {
		r = fds[2];
		key_err(err, "%s: %s", pkp, strerror(-r));
		close(fds[1]);
		unlink(pkp);
	}
	if (r < 0) {
		close(fds[0]);
		unlink(skp);
		return r;
	}
	memcpy(ret_fds, fds, sizeof(fds));
	return 0;
}

int shk_pubkey_write_file(const shk_key *key, const char *path, shk_key_error *err)
{
	return write_key_file(path, 0644, PUBLIC_HEADER, key->pk, true, NULL, err);
}

/* Read at most KEY_FILE_MAX-1 bytes; a longer file is a wrong length. */
static int read_small(int fd, char *buf, size_t *ret_len)
{
	size_t len = 0;

	for (;;) {
		ssize_t n = read(fd, buf + len, KEY_FILE_MAX - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == KEY_FILE_MAX - 1)
			return -EFBIG;
	}
	buf[len] = 0;
	*ret_len = len;
	return 0;
}

/* header + 64 hex + optional "\n", nothing else. */
static int parse_key_text(const char *text, size_t len, const char *header, uint8_t ret[32],
                          const char *what, shk_key_error *err)
{
	size_t hl = strlen(header);
	size_t bin_len = 0;

	if (len < hl || memcmp(text, header, hl) != 0) {
		key_err(err, "%s: not a shackle key file (first line must be '%.*s')", what,
		        (int)hl - 1, header);
		return -EINVAL;
	}
	text += hl;
	len -= hl;
	if (len > 0 && text[len - 1] == '\n')
		len--;
	if (len != 64) {
		key_err(err, "%s: wrong key length: %zu hex digits, expected 64", what, len);
		return -EINVAL;
	}
	if (sodium_hex2bin(ret, 32, text, len, NULL, &bin_len, NULL) != 0 || bin_len != 32) {
		key_err(err, "%s: key is not 64 hex digits", what);
		return -EINVAL;
	}
	return 0;
}

static int load_secret(int fd, const char *what, shk_key **ret_key, shk_key_error *err)
{
	char text[KEY_FILE_MAX];
	uint8_t seed[32];
	struct stat st;
	size_t len = 0;
	shk_key *k;
	int r;

	if (fstat(fd, &st) < 0) {
		r = -errno;
		key_err(err, "%s: %s", what, strerror(-r));
		return r;
	}
	if (S_ISREG(st.st_mode) && (st.st_mode & 077)) {
		key_err(err, "%s: mode %04o lets group or others access the secret key; "
		        "chmod 600 it", what, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	r = read_small(fd, text, &len);
	if (r < 0) {
		key_err(err, "%s: %s", what, r == -EFBIG ? "wrong length: file too long" : strerror(-r));
		return r == -EFBIG ? -EINVAL : r;
	}
	r = parse_key_text(text, len, SECRET_HEADER, seed, what, err);
	sodium_memzero(text, sizeof(text));
	if (r < 0)
		return r;
	k = key_alloc();
	if (!k) {
		sodium_memzero(seed, sizeof(seed));
		return -ENOMEM;
	}
	crypto_sign_seed_keypair(k->pk, k->sk, seed);
	sodium_memzero(seed, sizeof(seed));
	*ret_key = k;
	return 0;
}

int shk_key_load_fd(int fd, shk_key **ret_key, shk_key_error *err)
{
	char what[32];

	snprintf(what, sizeof(what), "fd %d", fd);
	return load_secret(fd, what, ret_key, err);
}

int shk_key_load_file(const char *path, shk_key **ret_key, shk_key_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0) {
		r = -errno;
		key_err(err, "%s: %s", path, strerror(-r));
		return r;
	}
	r = load_secret(fd, path, ret_key, err);
	close(fd);
	return r;
}

int shk_key_load_owned(const char *path, uid_t owner, shk_key **ret_key, shk_key_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	int r;

	if (fd < 0) {
		r = -errno;
		key_err(err, "%s: %s", path, r == -ELOOP ? "a symbolic link; refusing it as a key"
		                                         : strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		key_err(err, "%s: %s", path, strerror(-r));
	} else if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		key_err(err, "%s: not a regular file; refusing it as a key", path);
	} else if (st.st_uid != owner) {
		/* whoever owns it may have put their own key there */
		r = -EPERM;
		key_err(err, "%s: owned by uid %u, not by uid %u who runs this; refusing a key "
		        "someone else controls", path, (unsigned)st.st_uid, (unsigned)owner);
	} else {
		r = load_secret(fd, path, ret_key, err);
	}
	close(fd);
	return r;
}

int shk_pubkey_load_file(const char *path, uint8_t ret_pk[SHK_ED25519_PUBLIC_LEN], shk_key_error *err)
{
	char text[KEY_FILE_MAX];
	size_t len = 0;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		key_err(err, "%s: %s", path, strerror(-r));
		return r;
	}
	r = read_small(fd, text, &len);
	close(fd);
	if (r < 0) {
		key_err(err, "%s: %s", path, r == -EFBIG ? "wrong length: file too long" : strerror(-r));
		return r == -EFBIG ? -EINVAL : r;
	}
	return parse_key_text(text, len, PUBLIC_HEADER, ret_pk, path, err);
}

int shk_key_dup(const shk_key *key, shk_key **ret_key)
{
	shk_key *k = key_alloc();

	if (!k)
		return -ENOMEM;
	memcpy(k, key, sizeof(*k));
	*ret_key = k;
	return 0;
}
