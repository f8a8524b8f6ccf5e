/* SPDX-License-Identifier: MIT */
/*
 * The smallest BTF reader that answers one question: the type id of a kernel
 * function in /sys/kernel/btf/vmlinux (what fentry and LSM programs attach
 * to). Kept apart from libbpf so that `shackle doctor` works in builds
 * without the BPF toolchain.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/btf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ebpf/probe.h"
#include "util/linux.h"

/* Bytes that follow struct btf_type for each kind; -1: a kind we do not know. */
static long kind_extra(const struct btf_type *t)
{
	unsigned vlen = BTF_INFO_VLEN(t->info);

	switch (BTF_INFO_KIND(t->info)) {
	case BTF_KIND_INT:
		return 4;
	case BTF_KIND_PTR: case BTF_KIND_FWD: case BTF_KIND_TYPEDEF: case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST: case BTF_KIND_RESTRICT: case BTF_KIND_FUNC: case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return 0;
	case BTF_KIND_ARRAY:
		return sizeof(struct btf_array);
	case BTF_KIND_STRUCT: case BTF_KIND_UNION:
		return (long)vlen * (long)sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return (long)vlen * (long)sizeof(struct btf_enum);
	case BTF_KIND_FUNC_PROTO:
		return (long)vlen * (long)sizeof(struct btf_param);
	case BTF_KIND_VAR:
		return sizeof(struct btf_var);
	case BTF_KIND_DATASEC:
		return (long)vlen * (long)sizeof(struct btf_var_secinfo);
	case BTF_KIND_DECL_TAG:
		return sizeof(struct btf_decl_tag);
	case BTF_KIND_ENUM64:
		return (long)vlen * 12;
	default:
		return -1;
	}
}

static int read_all(const char *path, uint8_t **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	_cleanup_free_ uint8_t *buf = NULL;
	struct stat st;
	size_t got = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	/* sysfs reports the real size of the BTF blob. */
	if (st.st_size <= 0 || st.st_size > (64 << 20))
		return -EFBIG;
	buf = malloc((size_t)st.st_size);
	if (!buf)
		return -ENOMEM;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		got += (size_t)n;
	}
	*ret_buf = buf;
	buf = NULL;
	*ret_len = got;
	return 0;
}

int shk_btf_find_func(const char *name, uint32_t *ret_id)
{
	return shk_btf_find(name, BTF_KIND_FUNC, ret_id);
}

int shk_btf_find(const char *name, int kind, uint32_t *ret_id)
{
	_cleanup_free_ uint8_t *buf = NULL;
	const struct btf_header *h;
	const uint8_t *types, *end;
	const char *strs;
	size_t len = 0;
	uint32_t id = 1;
	int r;

	r = read_all("/sys/kernel/btf/vmlinux", &buf, &len);
	if (r < 0)
		return r;
	h = (const struct btf_header *)buf;
	if (len < sizeof(*h) || h->magic != BTF_MAGIC || h->hdr_len > len ||
	    (uint64_t)h->hdr_len + h->type_off + h->type_len > len ||
	    (uint64_t)h->hdr_len + h->str_off + h->str_len > len)
		return -EBADMSG;
	types = buf + h->hdr_len + h->type_off;
	end = types + h->type_len;
	strs = (const char *)buf + h->hdr_len + h->str_off;
	while (types + sizeof(struct btf_type) <= end) {
		const struct btf_type *t = (const struct btf_type *)types;
		long extra = kind_extra(t);

		if (extra < 0)
			return -EPROTO;
		if ((int)BTF_INFO_KIND(t->info) == kind && t->name_off < h->str_len &&
		    !strncmp(strs + t->name_off, name, h->str_len - t->name_off) &&
		    strlen(name) < h->str_len - t->name_off) {
			*ret_id = id;
			return 0;
		}
		types += sizeof(struct btf_type) + (size_t)extra;
		id++;
	}
	return -ENOENT;
}
