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

/* A network record carries an approval's digest in place of rule and tool. */
static void net_decode(const struct shk_bpf_net_event *k, struct shk_ebpf_event *ret_ev)
{
	ret_ev->kind = SHK_EBPF_EV_NET;
	ret_ev->verdict = k->verdict;
	ret_ev->reason = k->reason;
	ret_ev->rule = SHK_BPF_NO_RULE;
	ret_ev->tool_id = SHK_BPF_NO_TOOL;
	if (k->reason == SHK_BPF_R_ONCE) {
		ret_ev->once_digest = k->once_digest;
	} else {
		ret_ev->rule = k->rule;
		ret_ev->tool_id = k->tool_id;
	}
	ret_ev->pid = k->pid;
	ret_ev->tgid = k->tgid;
	ret_ev->cgroup_id = k->cgroup_id;
	ret_ev->dest.cgroup_id = k->cgroup_id;
	ret_ev->dest.family = k->family;
	ret_ev->dest.port = k->port;
	ret_ev->dest.proto = k->proto;
	ret_ev->dest.op = k->op;
	memcpy(ret_ev->dest.addr, k->addr, k->family == AF_INET ? 4 : 16);
	ret_ev->sock_type = k->sock_type;
}

static void exec_decode(const struct shk_bpf_event *k, struct shk_ebpf_event *ret_ev)
{
	size_t n = k->exec.args_len;

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

/*
 * Everything from the kernel is bounded and terminated here, never trusted.
 * k is a network record (SHK_BPF_NET_EVENT_SIZE bytes) when its kind says
 * so, else an exec record: the caller checked the size for its kind.
 */
void shk_ebpf_event_decode(const void *k, struct shk_ebpf_event *ret_ev)
{
	uint32_t kind;

	memset(ret_ev, 0, sizeof(*ret_ev));
	memcpy(&kind, k, sizeof(kind));
	if (kind == SHK_BPF_EV_NET)
		net_decode(k, ret_ev);
	else
		exec_decode(k, ret_ev);
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
