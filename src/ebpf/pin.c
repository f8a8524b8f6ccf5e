/* SPDX-License-Identifier: MIT */
/* Pinning the loaded object under bpffs so that it outlives the process, and
 * removing such pins (loader.h; shackle attach --pin, shackle detach). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <shackle/ebpf.h>

#include "ebpf/loader.h"
#include "ebpf/lsm.h"
#include "util/linux.h"
#include "shackle.skel.h"

/* Every name shk_ebpf_pin() creates: detach removes these and nothing else. */
#define SHK_PIN_MAPS(X) X(v4_rules) X(v6_rules) X(deny_dest) X(deny_tool) X(once_allow) \
	X(state) X(exec_rules) X(exec_once) X(target_cg) X(events) X(drops)
#define SHK_PIN_PROGS(X) SHK_LINKS(X) X(shk_exec) X(shk_lsm_exec)
#define NAME_OF(n) #n,
static const char *const pin_maps[] = { SHK_PIN_MAPS(NAME_OF) };
static const char *const pin_progs[] = { SHK_PIN_PROGS(NAME_OF) };
#undef NAME_OF

static int pin_one(const char *dir, const char *name, struct bpf_map *map, struct bpf_link *link)
{
	char p[4096];

	if (snprintf(p, sizeof(p), "%s/%s", dir, name) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	return map ? bpf_map__pin(map, p) : bpf_link__pin(link, p);
}

/* Unlink the names shk_ebpf_pin() may have made under dirfd, then the directory. */
static int remove_pins(int dirfd, const char *dir)
{
	char name[64];
	int r = 0;

	for (size_t i = 0; i < sizeof(pin_maps) / sizeof(*pin_maps); i++)
		if (unlinkat(dirfd, pin_maps[i], 0) < 0 && errno != ENOENT && r == 0)
			r = -errno;
	for (size_t i = 0; i < sizeof(pin_progs) / sizeof(*pin_progs); i++) {
		snprintf(name, sizeof(name), "link_%s", pin_progs[i]);
		if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT && r == 0)
			r = -errno;
	}
	if (rmdir(dir) < 0 && r == 0)
		r = -errno;
	return r;
}

int shk_ebpf_pin(shk_ebpf *e, const char *dir)
{
	_cleanup_close_ int dfd = -1;
	int r = 0;

	if (mkdir(dir, 0700) < 0)
		return -errno;
#define PIN_MAP(m) \
	if (r == 0)  \
		r = pin_one(dir, #m, e->skel->maps.m, NULL);
	SHK_PIN_MAPS(PIN_MAP)
#undef PIN_MAP
#define PIN_LINK(p)                 \
	if (r == 0 && e->skel->links.p) \
		r = pin_one(dir, "link_" #p, NULL, e->skel->links.p);
	SHK_LINKS(PIN_LINK)
	PIN_LINK(shk_exec)
#undef PIN_LINK
	if (r == 0 && e->lsm)
		r = shk_ebpf_lsm_pin(e->lsm, dir);
	if (r < 0) {
		/* dir is ours (mkdir above): everything in it is a pin just made. */
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd >= 0)
			(void)remove_pins(dfd, dir);
	}
	return r;
}

/* The kernel's name of an object (BPF_OBJ_NAME_LEN: cut at 15 bytes) is its source name. */
static bool kernel_name_is(const char *kname, const char *name)
{
	return strncmp(kname, name, BPF_OBJ_NAME_LEN - 1) == 0 &&
	       (strlen(name) >= BPF_OBJ_NAME_LEN - 1 || kname[strlen(name)] == '\0');
}

static bool in_table(const char *const *t, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i], name) == 0)
			return true;
	return false;
}

/*
 * Is dir/name an object shk_ebpf_pin() made? The name must be one of ours and
 * the pinned object must be a map of that name, or a link to a program of that
 * name: a foreign pin that happens to share a name is not touched.
 */
static bool is_our_pin(const char *dir, const char *name)
{
	struct bpf_map_info mi = { 0 };
	struct bpf_link_info li = { 0 };
	struct bpf_prog_info pi = { 0 };
	__u32 ml = sizeof(mi), ll = sizeof(li), pl = sizeof(pi);
	_cleanup_close_ int fd = -1, pfd = -1;
	bool link = strncmp(name, "link_", 5) == 0;
	char p[4096];

	if (link ? !in_table(pin_progs, sizeof(pin_progs) / sizeof(*pin_progs), name + 5)
		 : !in_table(pin_maps, sizeof(pin_maps) / sizeof(*pin_maps), name))
		return false;
	if (snprintf(p, sizeof(p), "%s/%s", dir, name) >= (int)sizeof(p))
		return false;
	fd = bpf_obj_get(p);
	if (fd < 0)
		return false;
	if (!link)
		return bpf_obj_get_info_by_fd(fd, &mi, &ml) == 0 && kernel_name_is(mi.name, name);
	if (bpf_obj_get_info_by_fd(fd, &li, &ll) < 0)
		return false;
	pfd = bpf_prog_get_fd_by_id(li.prog_id);
	return pfd >= 0 && bpf_obj_get_info_by_fd(pfd, &pi, &pl) == 0 &&
	       kernel_name_is(pi.name, name + 5);
}

/*
 * Everything is checked before anything is removed: a directory that is not
 * on bpffs, or holds one entry shackle did not pin, is left as it is.
 */
int shk_ebpf_unpin(const char *dir, char *ret_entry, size_t entry_len)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct statfs sfs;
	struct dirent *de;
	int fd, ours = 0;

	if (entry_len)
		ret_entry[0] = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		int e = -errno;

		close(fd);
		return e;
	}
	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	if (sfs.f_type != BPF_FS_MAGIC)
		return -EMEDIUMTYPE;
	while ((errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (!is_our_pin(dir, de->d_name)) {
			if (entry_len)
				snprintf(ret_entry, entry_len, "%s", de->d_name);
			return -EEXIST;
		}
		ours++;
	}
	if (errno)
		return -errno;
	if (!ours)
		return -ENODATA;
	return remove_pins(fd, dir);
}
