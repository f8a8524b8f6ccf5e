/* SPDX-License-Identifier: MIT */
/*
 * The offsets bpf/execverify.bpf.c reads, from the kernel's BTF, kept for
 * the rest of the boot in a file of root's (execv_offsets.h).
 *
 * Parsing /sys/kernel/btf/vmlinux costs about 55 ms of CPU (measured on a
 * 2-vCPU VM: reading ~6 MB out of kernfs, libbpf's copy of it, the page
 * faults of both buffers). It runs on a thread nobody waits for, but on two
 * vCPUs it takes that time from the agent: a session of 200 `git status`
 * paid ~0.3 ms per call. The offsets are a function of the running kernel
 * alone, and a kernel lives exactly as long as its boot id.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "ebpf/execv_offsets.h"
#include "util/linux.h"

#define BOOT_ID_LEN 36
#define CACHE_NAME "execv-offsets"

struct record {
	char magic[8];
	char boot[BOOT_ID_LEN];
	__u32 size;
	struct shk_execv_offsets o;
};

static const char magic[8] = "SHKXOFF1";

/* Byte offset of member name in the struct or union id, looking into
 * anonymous members (mm_struct keeps its fields in one); size its size. */
static int member(const struct btf *btf, __u32 id, const char *name, __u32 *ret_off, __u32 *ret_size)
{
	const struct btf_type *t = btf__type_by_id(btf, btf__resolve_type(btf, id));
	const struct btf_member *m;

	if (!t || !btf_is_composite(t))
		return -ENOENT;
	m = btf_members(t);
	for (__u16 i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);
		__u32 bits = btf_member_bit_offset(t, i), sub = 0;

		if (bits % 8)
			continue;
		if (n && strcmp(n, name) == 0) {
			long sz = btf__resolve_size(btf, m->type);
			if (sz <= 0)
				return -ENOENT;
			*ret_off = bits / 8;
			*ret_size = (__u32)sz;
			return 0;
		}
		if ((!n || !*n) && member(btf, m->type, name, &sub, ret_size) == 0) {
			*ret_off = bits / 8 + sub;
			return 0;
		}
	}
	return -ENOENT;
}

/* off of struct sname's member, which must be size bytes (0: any) */
static int field(const struct btf *btf, const char *sname, const char *mname, __u32 size, __u32 *off)
{
	__s32 id = btf__find_by_name_kind(btf, sname, BTF_KIND_STRUCT);
	__u32 sz = 0;

	if (id < 0 || member(btf, (__u32)id, mname, off, &sz) < 0)
		return -ENOENT;
	return size && sz != size ? -EPROTO : 0;
}

int shk_execv_offsets_parse(struct shk_execv_offsets *o)
{
	struct btf *btf = btf__load_vmlinux_btf();
	__u32 pwd = 0, dentry = 0;
	int r = 0;

	memset(o, 0, sizeof(*o));
	if (!btf)
		return errno ? -errno : -ENOENT;
	if (!r) r = field(btf, "task_struct", "mm", 8, &o->task_mm);
	if (!r) r = field(btf, "task_struct", "fs", 8, &o->task_fs);
	if (!r) r = field(btf, "mm_struct", "arg_start", 8, &o->mm_arg_start);
	if (!r) r = field(btf, "mm_struct", "arg_end", 8, &o->mm_arg_end);
	if (!r) r = field(btf, "mm_struct", "env_start", 8, &o->mm_env_start);
	if (!r) r = field(btf, "mm_struct", "env_end", 8, &o->mm_env_end);
	if (!r) r = field(btf, "fs_struct", "pwd", 0, &pwd);
	if (!r) r = field(btf, "path", "dentry", 8, &dentry);
	if (!r) r = field(btf, "dentry", "d_inode", 8, &o->dentry_inode);
	if (!r) r = field(btf, "inode", "i_ino", 8, &o->inode_ino);
	if (!r) r = field(btf, "inode", "i_sb", 8, &o->inode_sb);
	if (!r) r = field(btf, "super_block", "s_dev", 4, &o->sb_dev);
	if (!r) r = field(btf, "linux_binprm", "file", 8, &o->bprm_file);
	if (!r) r = field(btf, "file", "f_inode", 8, &o->file_inode);
	if (!r) r = field(btf, "pt_regs", "cs", 0, &o->regs_cs);
	o->fs_pwd_dentry = pwd + dentry;
	btf__free(btf);
	return r;
}

static int boot_id(char id[BOOT_ID_LEN])
{
	_cleanup_close_ int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	char buf[BOOT_ID_LEN + 1];

	if (fd < 0)
		return -errno;
	if (read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || buf[BOOT_ID_LEN] != '\n')
		return -EIO;
	memcpy(id, buf, BOOT_ID_LEN);
	return 0;
}

/* dir is ours alone: a directory we own that nobody else may enter. The
 * cache steers a kernel check: nobody but us may have written it. */
static bool private_dir(const char *dir)
{
	struct stat st;

	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 077);
}

static bool cache_read(const char *dir, const char boot[BOOT_ID_LEN], struct shk_execv_offsets *o)
{
	char p[4096];
	_cleanup_close_ int fd = -EBADF;
	struct record rec;
	struct stat st;

	if ((size_t)snprintf(p, sizeof(p), "%s/" CACHE_NAME, dir) >= sizeof(p) || !private_dir(dir))
		return false;
	if ((fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0 ||
	    !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
	    st.st_size != (off_t)sizeof(rec) || read(fd, &rec, sizeof(rec)) != (ssize_t)sizeof(rec))
		return false;
	if (memcmp(rec.magic, magic, sizeof(magic)) || memcmp(rec.boot, boot, BOOT_ID_LEN) ||
	    rec.size != sizeof(rec.o))
		return false;
	*o = rec.o;
	return true;
}

/* Best effort: a session that cannot keep them parses again. */
static void cache_write(const char *dir, const char boot[BOOT_ID_LEN], const struct shk_execv_offsets *o)
{
	struct record rec = { .size = sizeof(rec.o), .o = *o };
	char tmp[4096], p[4096];
	bool ok;
	int fd;

	memcpy(rec.magic, magic, sizeof(magic));
	memcpy(rec.boot, boot, BOOT_ID_LEN);
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/." CACHE_NAME ".XXXXXX", dir) >= sizeof(tmp) ||
	    (size_t)snprintf(p, sizeof(p), "%s/" CACHE_NAME, dir) >= sizeof(p))
		return;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return;
	if (!private_dir(dir) || (fd = mkostemp(tmp, O_CLOEXEC)) < 0)
		return;
	/* concurrent sessions each rename a whole record of their own */
	ok = write(fd, &rec, sizeof(rec)) == (ssize_t)sizeof(rec);
	if (close(fd) < 0 || !ok || rename(tmp, p) < 0)
		unlink(tmp);
}

int shk_execv_offsets_get(const char *dir, struct shk_execv_offsets *o, bool *ret_cached)
{
	char boot[BOOT_ID_LEN];
	bool have_boot = dir && boot_id(boot) == 0;
	bool cached = have_boot && cache_read(dir, boot, o);
	int r;

	if (ret_cached)
		*ret_cached = cached;
	if (cached)
		return 0;
	if ((r = shk_execv_offsets_parse(o)) < 0)
		return r;
	if (have_boot)
		cache_write(dir, boot, o);
	return 0;
}
