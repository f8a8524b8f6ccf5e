/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Layout shared by bpf/execverify.bpf.c and src/ebpf/execverify.c. */
#ifndef SHACKLE_BPF_EXECV_H
#define SHACKLE_BPF_EXECV_H

/* argv and environment strings together (a power of two: the program masks
 * lengths with it); a larger exec is verified at a ptrace exec stop */
#define SHK_EXECV_BYTES 16384
#define SHK_EXECV_WORDS (SHK_EXECV_BYTES / 8)
#define SHK_EXECV_MAX_APPROVALS 4096

/* Where the fields the check reads sit in this kernel's structures, from
 * its BTF (user space fills them in before the load: no CO-RE relocation,
 * so libbpf never parses the kernel's BTF on the loading thread). */
struct shk_execv_offsets {
	__u32 task_mm, task_fs;
	__u32 mm_arg_start, mm_arg_end, mm_env_start, mm_env_end;
	__u32 fs_pwd_dentry;   /* fs_struct.pwd.dentry */
	__u32 dentry_inode, inode_ino, inode_sb, sb_dev;
	__u32 bprm_file, file_inode;
	__u32 regs_cs;
};

/* One approved exec of one thread (the key: its global tid). Strings
 * zero-padded to the word after them. Devices in the kernel's encoding
 * (major << 20 | minor). */
struct shk_execv_appr {
	__u64 cookie;          /* echoed in the event: which approval */
	__u64 ino, cwd_ino;
	__u32 dev, cwd_dev;
	__u32 argv_len, env_len;
	__u8 bytes[SHK_EXECV_BYTES];
};

/* What failed (bits of shk_execv_ev.why); 0: the exec runs */
#define SHK_EXECV_EXE 1u
#define SHK_EXECV_CWD 2u
#define SHK_EXECV_ARGV 4u
#define SHK_EXECV_ENV 8u
#define SHK_EXECV_ABI 16u   /* not a 64-bit image */
#define SHK_EXECV_READ 32u  /* a kernel or user read failed */
#define SHK_EXECV_STRINGS 64u /* the bytes of argv or environment differ */

/* One per checked exec, in the ring buffer. */
struct shk_execv_ev {
	__u64 cookie;
	__u32 tid;             /* the thread that called exec */
	__u32 pid;             /* the process (its pid after the exec) */
	__u32 why;
	__u32 pad;
};

#endif
