/* SPDX-License-Identifier: MIT */
/*
 * A file named by a literal path in an exec rule is known by inode and
 * content: a hard link, an fd, a memfd or a byte-identical copy of it is
 * matched as that path (kinds.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "judge/pipeline.h"

#define ALIAS_MAX_HASH (256LL << 20)

static int sha256_fd(int fd, uint8_t out[32])
{
	crypto_hash_sha256_state st;
	char buf[65536];
	ssize_t n;

	crypto_hash_sha256_init(&st);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crypto_hash_sha256_update(&st, (const unsigned char *)buf, (size_t)n);
	crypto_hash_sha256_final(&st, out);
	return n < 0 ? -errno : 0;
}

static bool literal(const char *path)
{
	return path && path[0] == '/' && !strpbrk(path, "*?[{");
}

int shk_pipeline_load_aliases(struct shk_pipeline *p)
{
	size_t n = shk_policy_exec_rule_count(p->policy);

	p->aliases = calloc(n ? n : 1, sizeof(*p->aliases));
	if (!p->aliases)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct shk_exec_alias *a = &p->aliases[p->naliases];
		shk_exec_rule_info info;
		struct stat st;
		int fd;

		if (shk_policy_exec_rule(p->policy, i, &info) < 0 || !literal(info.path))
			continue;
		fd = open(info.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue; /* nothing there: the path rule alone applies */
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
			snprintf(a->path, sizeof(a->path), "%s", info.path);
			a->dev = st.st_dev;
			a->ino = st.st_ino;
			a->size = st.st_size;
			a->has_sha = st.st_size <= ALIAS_MAX_HASH && sha256_fd(fd, a->sha256) == 0;
			p->naliases++;
		}
		close(fd);
	}
	return shk_pipeline_load_unix_aliases(p);
}

void shk_pipeline_free_aliases(struct shk_pipeline *p)
{
	free(p->aliases);
	p->aliases = NULL;
	p->naliases = 0;
}

/* The rule path this file is (same inode, or same size and content: then
 * *by_content). */
const char *shk_pipeline_alias_of(struct shk_pipeline *p, const struct shk_exec_file *f, bool *by_content)
{
	uint8_t sha[32];
	bool hashed = false;

	*by_content = false;
	for (size_t i = 0; i < p->naliases; i++) {
		struct shk_exec_alias *a = &p->aliases[i];
		if (a->dev == f->dev && a->ino == f->ino)
			return strcmp(a->path, f->path) ? a->path : NULL;
	}
	for (size_t i = 0; i < p->naliases; i++) {
		struct shk_exec_alias *a = &p->aliases[i];
		if (!a->has_sha || a->size != f->size || f->fd < 0)
			continue;
		if (!hashed) {
			char pp[64];
			snprintf(pp, sizeof(pp), "/proc/self/fd/%d", f->fd);
			int fd = open(pp, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
			if (fd < 0)
				return NULL;
			hashed = sha256_fd(fd, sha) == 0;
			close(fd);
			if (!hashed)
				return NULL;
		}
		if (memcmp(sha, a->sha256, 32) == 0) {
			*by_content = true;
			return a->path;
		}
	}
	return NULL;
}
