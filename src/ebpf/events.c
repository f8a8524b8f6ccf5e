/* SPDX-License-Identifier: MIT */
/* Build facts and event decoding: compiled with and without the BPF toolchain. */
#include <string.h>
#include <sys/socket.h>

#include <shackle/ebpf.h>

#include "ebpf/internal.h"
#include "shk_bpf_config.h"

bool shk_ebpf_built(void)
{
	return SHK_HAVE_BPF;
}

const char *shk_ebpf_off_reason(void)
{
	return SHK_BPF_OFF_REASON;
}

void shk_ebpf_dest_to_bpf(const struct shk_ebpf_dest *d, struct shk_bpf_dest *ret_k)
{
	memset(ret_k, 0, sizeof(*ret_k));
	ret_k->cgroup_id = d->cgroup_id;
	ret_k->family = (uint16_t)d->family;
	ret_k->port = d->port;
	ret_k->proto = d->proto;
	ret_k->op = d->op;
	memcpy(ret_k->addr, d->addr, d->family == AF_INET ? 4 : 16);
}

static void dest_from_bpf(const struct shk_bpf_dest *k, struct shk_ebpf_dest *ret_d)
{
	memset(ret_d, 0, sizeof(*ret_d));
	ret_d->cgroup_id = k->cgroup_id;
	ret_d->family = k->family;
	ret_d->port = k->port;
	ret_d->proto = k->proto;
	ret_d->op = k->op;
	memcpy(ret_d->addr, k->addr, k->family == AF_INET ? 4 : 16);
}

/* Everything from the kernel is bounded and terminated here, never trusted. */
void shk_ebpf_event_decode(const struct shk_bpf_event *k, struct shk_ebpf_event *ret_ev)
{
	memset(ret_ev, 0, sizeof(*ret_ev));
	ret_ev->kind = (int)k->kind;
	ret_ev->verdict = (uint8_t)k->verdict;
	ret_ev->reason = (uint8_t)k->reason;
	ret_ev->rule = k->rule;
	ret_ev->tool_id = k->tool_id;
	ret_ev->pid = k->pid;
	ret_ev->tgid = k->tgid;
	ret_ev->lsm = k->hook == SHK_BPF_HOOK_LSM;
	ret_ev->cgroup_id = k->cgroup_id;
	memcpy(ret_ev->comm, k->comm, sizeof(ret_ev->comm) - 1);
	if (k->kind == SHK_BPF_EV_NET) {
		dest_from_bpf(&k->net.dest, &ret_ev->dest);
		ret_ev->sock_type = (int)k->net.sock_type;
		ret_ev->once_digest = k->net.once_digest;
	} else if (k->kind == SHK_BPF_EV_EXEC) {
		size_t n = k->exec.args_len;

		ret_ev->dev = k->exec.dev;
		ret_ev->ino = k->exec.ino;
		ret_ev->once_digest = k->exec.once_digest;
		memcpy(ret_ev->filename, k->exec.filename, sizeof(ret_ev->filename) - 1);
		if (n > sizeof(ret_ev->args) - 1) {
			n = sizeof(ret_ev->args) - 1;
			ret_ev->args_truncated = true;
		}
		memcpy(ret_ev->args, k->exec.args, n);
		ret_ev->args_len = n;
		ret_ev->args_truncated |= k->exec.args_truncated != 0;
	}
}

size_t shk_ebpf_event_argv(const struct shk_ebpf_event *ev, const char **ret_argv, size_t max)
{
	size_t argc = 0, i = 0;

	while (i < ev->args_len && argc < max) {
		size_t len = strnlen(ev->args + i, ev->args_len - i);

		/* The last string may be cut without its NUL: args[] is zeroed past it. */
		ret_argv[argc++] = ev->args + i;
		i += len + 1;
	}
	return argc;
}

const char *shk_ebpf_exec_path_name(int path)
{
	switch (path) {
	case SHK_EBPF_EXEC_TRACEPOINT: return "tracepoint";
	case SHK_EBPF_EXEC_LSM: return "lsm";
	default: return "none";
	}
}
