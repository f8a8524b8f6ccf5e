/* SPDX-License-Identifier: MIT */
/*
 * Reading the agent's memory. Every read is a copy into the supervisor: what
 * is judged afterwards is the copy, never the agent's memory again.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "supervise/internal.h"

#define PAGE 4096u

int shk_mem_read(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (len == 0)
		return 0;
	if (addr == 0)
		return -EFAULT;
	n = process_vm_readv(tid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* Reads page by page: a string may end right before an unmapped page. */
int shk_mem_read_str(pid_t tid, uint64_t addr, char *buf, size_t max, size_t *ret_len)
{
	size_t got = 0;

	if (max == 0)
		return -EINVAL;
	while (got < max - 1) {
		size_t chunk = PAGE - ((addr + got) % PAGE);
		char *nul;
		int r;

		if (chunk > max - 1 - got)
			chunk = max - 1 - got;
		r = shk_mem_read(tid, addr + got, buf + got, chunk);
		if (r < 0)
			return r;
		nul = memchr(buf + got, 0, chunk);
		if (nul) {
			*ret_len = (size_t)(nul - buf);
			return 0;
		}
		got += chunk;
	}
	return -ENAMETOOLONG;
}

static int argv_push(struct shk_argv *a, size_t off)
{
	if (a->n + 1 >= a->vcap) {
		size_t cap = a->vcap ? a->vcap * 2 : 64;
		const char **v = realloc(a->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->v = v;
		a->vcap = cap;
	}
	a->v[a->n++] = (const char *)(uintptr_t)off; /* fixed up at the end */
	return 0;
}

static int argv_reserve(struct shk_argv *a, size_t need)
{
	if (a->len + need <= a->cap)
		return 0;
	size_t cap = a->cap ? a->cap : 4096;
	while (cap < a->len + need)
		cap *= 2;
	char *b = realloc(a->buf, cap);
	if (!b)
		return -ENOMEM;
	a->buf = b;
	a->cap = cap;
	return 0;
}

static int argv_add(pid_t tid, uint64_t ptr, struct shk_argv *a)
{
	size_t slen;
	int r;

	if (a->n >= SHK_SUP_MAX_ARGS)
		return -E2BIG;
	if ((r = argv_reserve(a, PAGE)) < 0)
		return r;
	r = shk_mem_read_str(tid, ptr, a->buf + a->len, a->cap - a->len, &slen);
	while (r == -ENAMETOOLONG && a->cap < 2 * SHK_SUP_MAX_ARGBYTES) {
		if ((r = argv_reserve(a, (a->cap - a->len) * 2)) < 0)
			return r;
		r = shk_mem_read_str(tid, ptr, a->buf + a->len, a->cap - a->len, &slen);
	}
	if (r < 0)
		return r == -ENAMETOOLONG ? -E2BIG : r;
	if ((r = argv_push(a, a->len)) < 0)
		return r;
	a->len += slen + 1;
	return a->len > SHK_SUP_MAX_ARGBYTES ? -E2BIG : 0;
}

/* argv: the pointer array up to NULL (read a page at a time), then each
 * string, bounded in count and total size (the caller denies with E2BIG). */
int shk_mem_read_argv(pid_t tid, uint64_t addr, struct shk_argv *a)
{
	uint64_t ptrs[64];
	uint64_t base = addr;
	int r;

	a->len = 0;
	a->n = 0;
	while (addr != 0) { /* Linux accepts argv == NULL as an empty argv */
		size_t cnt = (PAGE - (base % PAGE)) / 8;

		if (cnt == 0)
			cnt = 1; /* a misaligned pointer straddling two pages */
		if (cnt > 64)
			cnt = 64;
		if ((r = shk_mem_read(tid, base, ptrs, cnt * 8)) < 0)
			return r;
		for (size_t j = 0; j < cnt; j++) {
			if (ptrs[j] == 0)
				goto done;
			if ((r = argv_add(tid, ptrs[j], a)) < 0)
				return r;
		}
		base += cnt * 8;
	}
done:
	if ((r = argv_push(a, 0)) < 0)
		return r;
	a->n--;
	for (size_t i = 0; i < a->n; i++)
		a->v[i] = a->buf + (size_t)(uintptr_t)a->v[i];
	a->v[a->n] = NULL;
	return 0;
}

void shk_argv_free(struct shk_argv *a)
{
	free(a->buf);
	free(a->v);
	memset(a, 0, sizeof(*a));
}
