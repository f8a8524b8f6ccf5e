/* SPDX-License-Identifier: MIT */
/* The hooks in force, as audit counters (needs libshackle; both build configurations). */
#include <errno.h>

#include <shackle/ebpf.h>
#include <shackle/json.h>

int shk_ebpf_exec_counters(const shk_ebpf *e, shk_doc *doc, shk_val *counters)
{
	const char *why = "";
	int path = e ? shk_ebpf_exec_path(e, &why) : SHK_EBPF_EXEC_NONE;
	shk_val *v = shk_cstring(doc, shk_ebpf_exec_path_name(path));
	int r;

	if (!v)
		return -ENOMEM;
	r = shk_object_set_str(counters, "exec_hook", v);
	if (r == 0 && path == SHK_EBPF_EXEC_TRACEPOINT) {
		v = shk_cstring(doc, why);
		r = v ? shk_object_set_str(counters, "exec_lsm_unused", v) : -ENOMEM;
	}
	return r;
}
