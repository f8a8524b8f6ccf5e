/* SPDX-License-Identifier: MIT */
#ifndef SHACKLE_SUPERVISE_MEM_H
#define SHACKLE_SUPERVISE_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct shk_argv;

/*
 * Windows onto one thread's memory, for one notification. An exec's path,
 * argv and envp (pointer arrays and strings) lie on a few pages: each window
 * is read with one process_vm_readv (which stops at the first unmapped page
 * and keeps what came before), and the strings are taken from the copies. That is one syscall instead of one per
 * string (~2.5 µs each; an environment has dozens). The copies are taken at
 * slightly different moments, as string-by-string reads were: what runs is
 * checked at the exec stop either way. Initialise per notification.
 * process_vm_readv pins the pages, which unshares a new child's pages still
 * shared copy-on-write with its parent; /proc/TID/mem would not, but costs
 * an open, a close and a GUP per page: dearer for the reader, with no gain
 * shown for the agent (docs/supervisor-performance.md).
 */
#define SHK_MEMWIN_PAGES 4
#define SHK_MEMWIN_SLOTS 2

struct shk_memwin {
	pid_t tid;
	unsigned next;          /* slot to replace next */
	struct {
		uint64_t base;  /* page-aligned */
		size_t len;     /* bytes read; 0: empty */
		char buf[SHK_MEMWIN_PAGES * 4096];
	} slot[SHK_MEMWIN_SLOTS];
};

void shk_memwin_init(struct shk_memwin *w, pid_t tid);
/* len bytes at addr, or -EFAULT (-errno) */
int shk_memwin_read(struct shk_memwin *w, uint64_t addr, void *buf, size_t len);
/* NUL-terminated string of at most max-1 bytes; -ENAMETOOLONG beyond. */
int shk_memwin_read_str(struct shk_memwin *w, uint64_t addr, char *buf, size_t max,
                        size_t *ret_len);
/* argv/envp: pointers up to NULL, then each string, bounded in count and
 * total size like the kernel (-E2BIG beyond SHK_SUP_MAX_ARGS/ARGBYTES). */
int shk_memwin_read_argv(struct shk_memwin *w, uint64_t addr, struct shk_argv *a);

#endif
