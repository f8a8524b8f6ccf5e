/* SPDX-License-Identifier: MIT */
/*
 * Evidence bundles: a directory, or a plain ustar archive of one. The
 * archive reader accepts only the names a bundle has (no paths outside the
 * extraction directory, no links, no devices), because a bundle comes from
 * whoever hands it over.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include <shackle/canon.h>

#include "audit/internal.h"
#include "util/linux.h"

#define TAR_BLOCK 512
#define COPY_CHUNK 65536

__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Copy src to a new file dst (O_EXCL), hashing what was copied. */
static int copy_file(const char *src, const char *dst, uint8_t ret_sha[32])
{
	crypto_hash_sha256_state st;
	char *buf = malloc(COPY_CHUNK);
	int in = -1, out = -1, r = 0;

	if (!buf)
		return -ENOMEM;
	crypto_hash_sha256_init(&st);
	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		r = -errno;
	if (r == 0) {
		out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (out < 0)
			r = -errno;
	}
	while (r == 0) {
		ssize_t n = read(in, buf, COPY_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = -errno;
		if (n <= 0)
			break;
		crypto_hash_sha256_update(&st, (uint8_t *)buf, (size_t)n);
		r = shk_write_all(out, buf, (size_t)n);
	}
	if (r == 0 && fsync(out) < 0)
		r = -errno;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) < 0 && r == 0)
		r = -errno;
	free(buf);
	if (r == 0)
		crypto_hash_sha256_final(&st, ret_sha);
	return r;
}

static int write_file(const char *path, const char *text, size_t len, uint8_t ret_sha[32])
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	int r;

	if (fd < 0)
		return -errno;
	r = shk_write_all(fd, text, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	crypto_hash_sha256(ret_sha, (const uint8_t *)text, len);
	return r;
}

static int add_file_entry(shk_val *arr, shk_doc *doc, const char *name, const uint8_t sha[32])
{
	shk_val *o = shk_object(doc);
	char hex[65];

	shk_audit_hex(sha, 32, hex);
	if (!o || shk_object_set_str(o, "path", shk_cstring(doc, name)) < 0 ||
	    shk_object_set_str(o, "sha256", shk_cstring(doc, hex)) < 0)
		return -ENOMEM;
	return shk_array_append(arr, o);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Build the bundle directory `dir` (which must not exist). */
static int export_dir(const char *dir, const char *const *logs, size_t nlogs, const char *pubkey_path,
                      const shk_val *policy, const char *report, size_t report_len,
                      char *err, size_t errlen)
{
	char path[PATH_MAX], name[300];
	uint8_t sha[32];
	shk_doc *doc = NULL;
	shk_val *man, *files;
	char *text = NULL;
	size_t tlen = 0;
	int r;

	if (mkdir(dir, 0750) < 0) {
		r = -errno;
		fail(err, errlen, "%s: %s", dir, r == -EEXIST ? "exists; refusing to overwrite" : strerror(-r));
		return r;
	}
	snprintf(path, sizeof(path), "%s/logs", dir);
	if (mkdir(path, 0750) < 0)
		return -errno;
	r = shk_doc_new(&doc);
	if (r < 0)
		return r;
	man = shk_object(doc);
	files = shk_array(doc);
	if (!man || !files) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; r == 0 && i < nlogs; i++) {
		snprintf(name, sizeof(name), "logs/%03zu-%.200s", i, base_name(logs[i]));
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		r = copy_file(logs[i], path, sha);
		if (r < 0)
			fail(err, errlen, "%s: %s", logs[i], strerror(-r));
		else
			r = add_file_entry(files, doc, name, sha);
	}
	if (r == 0) {
		snprintf(path, sizeof(path), "%s/key.pub", dir);
		r = copy_file(pubkey_path, path, sha);
		if (r < 0)
			fail(err, errlen, "%s: %s", pubkey_path, strerror(-r));
		else
			r = add_file_entry(files, doc, "key.pub", sha);
	}
	if (r == 0 && policy) {
		r = shk_canon_dump(policy, &text, &tlen);
		snprintf(path, sizeof(path), "%s/policy.json", dir);
		if (r == 0)
			r = write_file(path, text, tlen, sha);
		if (r == 0)
			r = add_file_entry(files, doc, "policy.json", sha);
		free(text);
		text = NULL;
	}
	if (r == 0) {
		snprintf(path, sizeof(path), "%s/report.json", dir);
		r = write_file(path, report, report_len, sha);
		if (r == 0)
			r = add_file_entry(files, doc, "report.json", sha);
	}
	if (r == 0 && (shk_object_set_str(man, "format", shk_cstring(doc, SHK_BUNDLE_FORMAT)) < 0 ||
	               shk_object_set_str(man, "files", files) < 0 ||
	               shk_object_set_str(man, "logs", shk_int(doc, (int64_t)nlogs)) < 0))
		r = -ENOMEM;
	if (r == 0)
		r = shk_canon_dump(man, &text, &tlen);
	if (r == 0) {
		snprintf(path, sizeof(path), "%s/manifest.json", dir);
		r = write_file(path, text, tlen, sha);
	}
out:
	free(text);
	shk_doc_free(doc);
	if (r < 0 && err && !*err)
		fail(err, errlen, "%s: %s", dir, strerror(-r));
	return r;
}

/* ---- ustar --------------------------------------------------------------- */

static void tar_header(uint8_t h[TAR_BLOCK], const char *name, uint64_t size, bool dir)
{
	unsigned sum = 0;

	memset(h, 0, TAR_BLOCK);
	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", dir ? 0750 : 0644);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
	snprintf((char *)h + 136, 12, "%011o", 0);
	memset(h + 148, ' ', 8);
	h[156] = dir ? '5' : '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	for (size_t i = 0; i < TAR_BLOCK; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
}

static int tar_add(int out, const char *dir, const char *name)
{
	char path[PATH_MAX];
	uint8_t h[TAR_BLOCK], *data = NULL;
	struct stat st;
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	tar_header(h, name, (uint64_t)st.st_size, false);
	r = shk_write_all(out, h, TAR_BLOCK);
	data = calloc(1, ((size_t)st.st_size + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK + 1);
	if (r == 0 && !data)
		r = -ENOMEM;
	if (r == 0 && st.st_size > 0) {
		size_t got = 0;

		while (got < (size_t)st.st_size) {
			ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
			if (n <= 0) {
				r = n < 0 ? -errno : -EIO;
				break;
			}
			got += (size_t)n;
		}
		if (r == 0)
			r = shk_write_all(out, data, ((size_t)st.st_size + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK);
	}
	free(data);
	close(fd);
	return r;
}

static int rm_tree(const char *dir, const shk_bundle *b);

static int export_tar(const char *out, const char *const *logs, size_t nlogs, const char *pubkey_path,
                      const shk_val *policy, const char *report, size_t report_len,
                      char *err, size_t errlen)
{
	char tmpl[] = "/tmp/shackle-export-XXXXXX";
	char dir[PATH_MAX], name[300];
	uint8_t h[TAR_BLOCK], zero[2 * TAR_BLOCK] = { 0 };
	int fd, r;

	if (!mkdtemp(tmpl))
		return -errno;
	snprintf(dir, sizeof(dir), "%s/b", tmpl);
	r = export_dir(dir, logs, nlogs, pubkey_path, policy, report, report_len, err, errlen);
	fd = r < 0 ? -1 : open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (r == 0 && fd < 0) {
		r = -errno;
		fail(err, errlen, "%s: %s", out, r == -EEXIST ? "exists; refusing to overwrite" : strerror(-r));
	}
	if (r == 0)
		r = tar_add(fd, dir, "manifest.json");
	if (r == 0) {
		tar_header(h, "logs/", 0, true);
		r = shk_write_all(fd, h, TAR_BLOCK);
	}
	for (size_t i = 0; r == 0 && i < nlogs; i++) {
		snprintf(name, sizeof(name), "logs/%03zu-%.200s", i, base_name(logs[i]));
		r = tar_add(fd, dir, name);
	}
	if (r == 0)
		r = tar_add(fd, dir, "key.pub");
	if (r == 0 && policy)
		r = tar_add(fd, dir, "policy.json");
	if (r == 0)
		r = tar_add(fd, dir, "report.json");
	if (r == 0)
		r = shk_write_all(fd, zero, sizeof(zero));
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0 && fd >= 0)
		unlink(out);
	rm_tree(tmpl, NULL);
	if (r < 0 && err && !*err)
		fail(err, errlen, "%s: %s", out, strerror(-r));
	return r;
}

int shk_bundle_export(const char *out, const char *const *logs, size_t nlogs, const char *pubkey_path,
                      const shk_val *policy, const char *report, size_t report_len,
                      char *err, size_t errlen)
{
	size_t ol = out ? strlen(out) : 0;

	if (err && errlen)
		*err = 0;
	if (!ol || !logs || !nlogs || nlogs > SHK_BUNDLE_MAX_LOGS || !pubkey_path || !report)
		return fail(err, errlen, "invalid arguments");
	if (shk_audit_sodium_init() < 0)
		return -EIO;
	if (ol > 4 && !strcmp(out + ol - 4, ".tar"))
		return export_tar(out, logs, nlogs, pubkey_path, policy, report, report_len, err, errlen);
	return export_dir(out, logs, nlogs, pubkey_path, policy, report, report_len, err, errlen);
}

/* ---- opening ------------------------------------------------------------- */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 ? -1 : 0;
}

/* Only ever called on a directory this file created under /tmp. */
static int rm_tree(const char *dir, const shk_bundle *b)
{
	(void)b;
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
}

static bool tar_name_ok(const char *n)
{
	static const char *const fixed[] = { "manifest.json", "key.pub", "policy.json", "report.json",
	                                     "logs/", "logs" };

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!strcmp(n, fixed[i]))
			return true;
	return !strncmp(n, "logs/", 5) && n[5] && n[5] != '.' && !strchr(n + 5, '/');
}

static int64_t octal(const uint8_t *p, size_t n)
{
	int64_t v = 0;
	size_t i = 0;

	while (i < n && p[i] == ' ')
		i++;
	for (; i < n && p[i] >= '0' && p[i] <= '7'; i++)
		v = v * 8 + (p[i] - '0');
	return (i < n && p[i] && p[i] != ' ') ? -1 : v;
}

static int tar_extract(int fd, const char *dir, char *err, size_t errlen)
{
	uint8_t h[TAR_BLOCK];
	char name[101], path[PATH_MAX];

	for (;;) {
		unsigned sum = 0;
		int64_t size, want;
		ssize_t n = read(fd, h, TAR_BLOCK);
		int out;

		if (n != TAR_BLOCK)
			return fail(err, errlen, "archive: truncated header");
		if (!memcmp(h, (uint8_t[TAR_BLOCK]){ 0 }, TAR_BLOCK))
			return 0;
		for (size_t i = 0; i < TAR_BLOCK; i++)
			sum += (i >= 148 && i < 156) ? ' ' : h[i];
		if (octal(h + 148, 8) != (int64_t)sum || memcmp(h + 257, "ustar", 5))
			return fail(err, errlen, "archive: bad header checksum or not ustar");
		memcpy(name, h, 100);
		name[100] = 0;
		size = octal(h + 124, 12);
		if (h[345] || !tar_name_ok(name) || size < 0)
			return fail(err, errlen, "archive: unexpected member '%s'", name);
		if (h[156] == '5') {
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			if (mkdir(path, 0750) < 0 && errno != EEXIST)
				return -errno;
			continue;
		}
		if (h[156] != '0' && h[156] != 0)
			return fail(err, errlen, "archive: member '%s' is not a regular file", name);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
		if (out < 0)
			return fail(err, errlen, "archive: %s: %s", name, strerror(errno));
		for (want = (size + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK; want > 0; want -= TAR_BLOCK) {
			int r = 0;

			if (read(fd, h, TAR_BLOCK) != TAR_BLOCK) {
				close(out);
				return fail(err, errlen, "archive: %s: truncated data", name);
			}
			r = shk_write_all(out, h, size < TAR_BLOCK ? (size_t)size : TAR_BLOCK);
			size -= size < TAR_BLOCK ? size : TAR_BLOCK;
			if (r < 0) {
				close(out);
				return r;
			}
		}
		close(out);
	}
}

static int sha_file(const char *path, uint8_t ret[32])
{
	crypto_hash_sha256_state st;
	char buf[8192];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	crypto_hash_sha256_init(&st);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crypto_hash_sha256_update(&st, (uint8_t *)buf, (size_t)n);
	close(fd);
	if (n < 0)
		return -errno;
	crypto_hash_sha256_final(&st, ret);
	return 0;
}

/* Every file under logs/ is one the manifest lists (and so one that is
 * verified): else a bundle with an extra, unverified log verifies
 * "intact" without naming it. */
static int only_listed_logs(shk_bundle *b, char *err, size_t errlen)
{
	char dir[PATH_MAX], full[PATH_MAX + 256];
	struct dirent *e;
	DIR *d;
	int r = 0;

	snprintf(dir, sizeof(dir), "%s/logs", b->dir);
	if (!(d = opendir(dir)))
		return fail(err, errlen, "%s: %s", dir, strerror(errno));
	while (r == 0 && (e = readdir(d))) {
		bool listed = false;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(full, sizeof(full), "%s/%s", dir, e->d_name);
		for (size_t i = 0; i < b->nlogs && !listed; i++)
			listed = !strcmp(b->logs[i], full);
		if (!listed)
			r = fail(err, errlen, "%s: logs/%s is not listed in the manifest", b->dir,
			         e->d_name);
	}
	closedir(d);
	return r;
}

static int read_manifest(shk_bundle *b, char *err, size_t errlen)
{
	char path[PATH_MAX];
	shk_doc *doc = NULL;
	shk_val *man = NULL;
	shk_parse_error perr;
	const shk_val *files;
	int r;

	snprintf(path, sizeof(path), "%s/manifest.json", b->dir);
	r = shk_doc_new(&doc);
	if (r < 0)
		return r;
	r = shk_json_load_file(doc, path, &man, &perr);
	if (r < 0) {
		fail(err, errlen, "%s:%d:%d: %s", path, perr.line, perr.column, perr.text);
		goto out;
	}
	files = shk_object_get(man, "files");
	if (!shk_val_str_eq(shk_object_get(man, "format"), SHK_BUNDLE_FORMAT) ||
	    shk_val_type(files) != SHK_ARRAY) {
		r = fail(err, errlen, "%s: not a %s manifest", path, SHK_BUNDLE_FORMAT);
		goto out;
	}
	for (size_t i = 0; r == 0 && i < shk_val_len(files); i++) {
		const shk_val *f = shk_array_at(files, i);
		const char *name = shk_val_str(shk_object_get(f, "path"), NULL);
		size_t hl = 0;
		const char *hex = shk_val_str(shk_object_get(f, "sha256"), &hl);
		uint8_t want[32], got[32];
		char fpath[PATH_MAX];

		if (!name || !tar_name_ok(name) || !shk_audit_unhex32(hex, hl, want)) {
			r = fail(err, errlen, "%s: bad file entry %zu", path, i);
			break;
		}
		snprintf(fpath, sizeof(fpath), "%s/%.200s", b->dir, name);
		if (!strncmp(name, "logs/", 5)) {
			if (b->nlogs == SHK_BUNDLE_MAX_LOGS || !(b->logs[b->nlogs] = strdup(fpath))) {
				r = -ENOMEM;
				break;
			}
			b->nlogs++;
		} else if (!strcmp(name, "policy.json")) {
			snprintf(b->policy, sizeof(b->policy), "%s", fpath);
		}
		r = sha_file(fpath, got);
		if (r < 0)
			fail(err, errlen, "%s: %s", fpath, strerror(-r));
		else if (memcmp(want, got, 32) && b->digest_mismatch < 0) {
			b->digest_mismatch = (long)i;
			snprintf(b->mismatch_name, sizeof(b->mismatch_name), "%s", name);
		}
	}
	if (r == 0 && b->nlogs == 0)
		r = fail(err, errlen, "%s: no logs listed", path);
	if (r == 0)
		r = only_listed_logs(b, err, errlen);
	snprintf(b->pubkey, sizeof(b->pubkey), "%s/key.pub", b->dir);
out:
	shk_doc_free(doc);
	return r;
}

int shk_bundle_open(const char *path, shk_bundle *b, char *err, size_t errlen)
{
	struct stat st;
	int r;

	memset(b, 0, sizeof(*b));
	b->digest_mismatch = -1;
	if (err && errlen)
		*err = 0;
	if (shk_audit_sodium_init() < 0)
		return -EIO;
	if (stat(path, &st) < 0) {
		r = -errno;
		fail(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(b->dir, sizeof(b->dir), "%s", path);
	} else {
		char tmpl[] = "/tmp/shackle-bundle-XXXXXX";
		int fd;

		if (!mkdtemp(tmpl))
			return -errno;
		snprintf(b->dir, sizeof(b->dir), "%s", tmpl);
		b->temp = true;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			r = -errno;
			fail(err, errlen, "%s: %s", path, strerror(-r));
		} else {
			r = tar_extract(fd, b->dir, err, errlen);
			close(fd);
		}
		if (r < 0) {
			shk_bundle_close(b);
			return r;
		}
	}
	r = read_manifest(b, err, errlen);
	if (r < 0)
		shk_bundle_close(b);
	return r;
}

void shk_bundle_close(shk_bundle *b)
{
	for (size_t i = 0; i < b->nlogs; i++)
		free(b->logs[i]);
	b->nlogs = 0;
	if (b->temp)
		rm_tree(b->dir, b);
	b->temp = false;
}
