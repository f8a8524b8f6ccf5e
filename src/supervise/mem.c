/* SPDX-License-Identifier: MIT */
/*
 * Reading the agent's memory. Every read is a copy into the supervisor: what
 * is judged afterwards is the copy, never the agent's memory again.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "supervise/internal.h"
#include "supervise/mem.h"

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

void shk_memwin_init(struct shk_memwin *w, pid_t tid)
{
	w->tid = tid;
	w->next = 0;
	for (size_t i = 0; i < SHK_MEMWIN_SLOTS; i++)
		w->slot[i].len = 0;
}

/* The slot holding addr, read on a miss. The kernel ends a read at the
 * first page that is not mapped and keeps the pages before it, so a string
 * that ends right before an unmapped page is still read; where it would
 * refuse the whole range instead (process_vm_readv(2) promises partial
 * transfers per iovec only), the page holding addr is read alone. */
static int win_at(struct shk_memwin *w, uint64_t addr, const char **ret_p, size_t *ret_avail)
{
	struct iovec local, remote;
	uint64_t base = addr - addr % PAGE;
	size_t k = 0;
	ssize_t n;
	unsigned i;

	for (i = 0; i < SHK_MEMWIN_SLOTS; i++)
		if (w->slot[i].len && addr >= w->slot[i].base && addr - w->slot[i].base < w->slot[i].len)
			goto hit;
	if (addr == 0)
		return -EFAULT;
	i = w->next;
	w->next = (w->next + 1) % SHK_MEMWIN_SLOTS;
	while (k < SHK_MEMWIN_PAGES && base + (k + 1) * PAGE - 1 > base)
		k++;
	local = (struct iovec){ w->slot[i].buf, k * PAGE };
	remote = (struct iovec){ (void *)(uintptr_t)base, k * PAGE };
	w->slot[i].len = 0;
	n = process_vm_readv(w->tid, &local, 1, &remote, 1, 0);
	if (n < 0 && errno == EFAULT && k > 1) {
		local.iov_len = remote.iov_len = PAGE;
		n = process_vm_readv(w->tid, &local, 1, &remote, 1, 0);
	}
	if (n < 0)
		return -errno;
	if ((uint64_t)n <= addr - base)
		return -EFAULT;
	w->slot[i].base = base;
	w->slot[i].len = (size_t)n;
hit:
	*ret_p = w->slot[i].buf + (addr - w->slot[i].base);
	*ret_avail = w->slot[i].len - (addr - w->slot[i].base);
	return 0;
}

/* len bytes at addr into buf; with to_nul, up to and with the first NUL
 * (the string's length in *ret_len, -ENAMETOOLONG when none is in len) */
static int win_copy(struct shk_memwin *w, uint64_t addr, char *buf, size_t len, bool to_nul,
                    size_t *ret_len)
{
	for (size_t got = 0; got < len;) {
		const char *p = NULL, *nul;
		size_t avail = 0;
		int r = win_at(w, addr + got, &p, &avail);

		if (r < 0)
			return r;
		if (avail > len - got)
			avail = len - got;
		nul = to_nul ? memchr(p, 0, avail) : NULL;
		memcpy(buf + got, p, nul ? (size_t)(nul - p) : avail);
		if (nul) {
			got += (size_t)(nul - p);
			buf[got] = 0;
			*ret_len = got;
			return 0;
		}
		got += avail;
	}
	*ret_len = len;
	return to_nul ? -ENAMETOOLONG : 0;
}

int shk_memwin_read(struct shk_memwin *w, uint64_t addr, void *buf, size_t len)
{
	size_t n;

	return win_copy(w, addr, buf, len, false, &n);
}

int shk_memwin_read_str(struct shk_memwin *w, uint64_t addr, char *buf, size_t max,
                        size_t *ret_len)
{
	if (max == 0)
		return -EINVAL;
	return win_copy(w, addr, buf, max, true, ret_len);
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

static int argv_add(struct shk_memwin *w, uint64_t ptr, struct shk_argv *a)
{
	size_t slen;
	int r;

	if (a->n >= SHK_SUP_MAX_ARGS)
		return -E2BIG;
	if ((r = argv_reserve(a, PAGE)) < 0)
		return r;
	r = shk_memwin_read_str(w, ptr, a->buf + a->len, a->cap - a->len, &slen);
	while (r == -ENAMETOOLONG && a->cap < 2 * SHK_SUP_MAX_ARGBYTES) {
		if ((r = argv_reserve(a, (a->cap - a->len) * 2)) < 0)
			return r;
		r = shk_memwin_read_str(w, ptr, a->buf + a->len, a->cap - a->len, &slen);
	}
	if (r < 0)
		return r == -ENAMETOOLONG ? -E2BIG : r;
	if ((r = argv_push(a, a->len)) < 0)
		return r;
	a->len += slen + 1;
	return a->len > SHK_SUP_MAX_ARGBYTES ? -E2BIG : 0;
}

int shk_memwin_read_argv(struct shk_memwin *w, uint64_t addr, struct shk_argv *a)
{
	int r;

	a->len = 0;
	a->n = 0;
	/* Linux accepts argv == NULL as an empty argv */
	for (uint64_t p = addr; p != 0; p += 8) {
		uint64_t ptr;

		if ((r = shk_memwin_read(w, p, &ptr, sizeof(ptr))) < 0)
			return r;
		if (ptr == 0)
			break;
		if ((r = argv_add(w, ptr, a)) < 0)
			return r;
	}
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
