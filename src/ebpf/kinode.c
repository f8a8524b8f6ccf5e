/* SPDX-License-Identifier: MIT */
/*
 * The device and inode number the kernel's exec hooks see for a file:
 * bprm->file->f_inode->i_ino and its superblock's s_dev. stat(2) does not
 * always report that device. A btrfs subvolume reports an anonymous device
 * of its own, and overlayfs over several file systems reports a per-layer
 * pseudo device for files of its lower layers. An exec rule keyed by stat's
 * device then never matches, and the denied program runs. The superblock's
 * device is the one /proc/self/mountinfo shows for the mount the file is on
 * (statx STATX_MNT_ID, Linux 5.8). The inode number is statx's: overlayfs
 * and btrfs give i_ino there.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ebpf/internal.h"
#include "util/linux.h"

/* maj:min of mount id in a mountinfo text ("ID PARENT MAJ:MIN ROOT ..."). */
static int mount_dev(FILE *f, uint64_t mnt_id, unsigned *ret_major, unsigned *ret_minor)
{
	char line[4096];

	while (fgets(line, sizeof(line), f)) {
		uint64_t id;
		unsigned maj, min;

		if (sscanf(line, "%" SCNu64 " %*u %u:%u", &id, &maj, &min) == 3 && id == mnt_id) {
			*ret_major = maj;
			*ret_minor = min;
			return 0;
		}
		/* a line longer than the buffer: skip the rest of it */
		while (!strchr(line, '\n') && fgets(line, sizeof(line), f))
			;
	}
	return -ENOENT;
}

int shk_ebpf_kernel_inode(const char *path, uint64_t *ret_dev, uint64_t *ret_ino)
{
	_cleanup_fclose_ FILE *f = NULL;
	struct statx sx;
	unsigned maj, min;
	int r;

	if (statx(AT_FDCWD, path, 0, STATX_TYPE | STATX_INO | STATX_MNT_ID, &sx) < 0)
		return -errno;
	if (!(sx.stx_mask & STATX_MNT_ID) || !(sx.stx_mask & STATX_INO))
		return -EOPNOTSUPP; /* before 5.8: no way to name the superblock */
	if (!S_ISREG(sx.stx_mode))
		return -EINVAL;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	if ((r = mount_dev(f, sx.stx_mnt_id, &maj, &min)) < 0)
		return r;
	/* The kernel's dev_t packs major << 20 | minor, unlike glibc's. */
	*ret_dev = ((uint64_t)maj << 20) | min;
	*ret_ino = sx.stx_ino;
	return 0;
}
