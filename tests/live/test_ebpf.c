/* SPDX-License-Identifier: MIT */
/*
 * Live test of the eBPF layer (root, cgroup v2, sock_addr hooks, raw
 * tracepoints). Every test creates its own cgroup below ours, runs forked
 * children inside it and only ever talks to 127.0.0.1 / ::ffff:127.0.0.1.
 */
#include "ebpf_live.h"

#define BPF_FS_MAGIC_ 0xcafe4a11

static int child_connects(void *arg)
{
	(void)arg;
	/* the records carry the caller's name, read from its task */
	prctl(PR_SET_NAME, "shk-conn-kid");
	if (try_connect(port_ok, false) != 0)
		return 1;
	if (try_connect(port_denied, false) != EPERM)
		return 2;
	if (try_connect(port_ok, true) != 0)
		return 3;
	if (try_connect(port_denied, true) != EPERM)
		return 4;
	return 0;
}

START_TEST(test_connect_policy)
{
	struct want deny = { .kind = SHK_EBPF_EV_NET, .verdict = SHK_EBPF_DENY,
			     .reason = SHK_EBPF_R_RULE, .port = port_denied,
			     .comm = "" }; /* network records carry no name */
	struct want allow = { .kind = SHK_EBPF_EV_NET, .verdict = SHK_EBPF_ALLOW,
			      .reason = SHK_EBPF_R_RULE, .port = port_ok, .comm = "" };
	struct shk_ebpf_stats st;
	int status;

	load(false, SHK_EBPF_ALLOW);
	/* Outside the cgroup nothing changes. */
	ck_assert_int_eq(try_connect(port_denied, false), 0);
	status = in_cgroup(child_connects, NULL);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	expect_event(&deny);
	ck_assert_uint_eq(deny.rule, 0);
	expect_event(&allow);
	ck_assert_uint_eq(allow.rule, 1);
	ck_assert_int_eq(shk_ebpf_stats(E, &st), 0);
	ck_assert_uint_eq(st.kernel_drops, 0);
	ck_assert_uint_ge(st.delivered, 4);
}
END_TEST

struct exec_arg {
	const char *path;
	const char *marker;
};

static int child_exec(void *arg)
{
	const struct exec_arg *x = arg;
	char *const argv[] = { (char *)x->path, "-c", "echo ran > \"$1\"", "sh",
			       (char *)x->marker, NULL };

	execv(argv[0], argv);
	return errno; /* EPERM: refused by the LSM hook */
}

/* A copy of /bin/sh (its own inode) at denied, and the marker names. */
static void denied_copy(char *denied, char *marker, char *marker_ok, size_t len)
{
	int fd = mkstemp(denied);

	ck_assert_int_ge(fd, 0);
	close(fd);
	ebpf_copy_file("/bin/sh", denied);
	snprintf(marker, len, "%s.marker", denied);
	snprintf(marker_ok, len, "%s.ok", denied);
}

START_TEST(test_exec_denied_is_killed)
{
	char denied[] = "/tmp/shk-test-sh-XXXXXX", marker[64], marker_ok[64];
	struct want w = { .kind = SHK_EBPF_EV_EXEC, .verdict = SHK_EBPF_DENY,
			  .reason = SHK_EBPF_R_RULE, .filename = denied };
	struct exec_arg bad = { denied, marker }, good = { "/bin/sh", marker_ok };
	const char *why;
	struct stat st;
	int status;

	denied_copy(denied, marker, marker_ok, sizeof(marker));
	load(true, SHK_EBPF_ALLOW);
	ck_assert_int_eq(shk_ebpf_exec_path(E, &why), SHK_EBPF_EXEC_TRACEPOINT);
	ck_assert_str_eq(why, "BPF LSM not requested");
	ck_assert_int_eq(shk_ebpf_set_exec_rule(E, denied, SHK_EBPF_DENY), 0);

	status = in_cgroup(child_exec, &bad);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x", status);
	ck_assert_int_eq(stat(marker, &st), -1); /* not one instruction of it ran */
	expect_event(&w);

	/* Another image in the cgroup runs. */
	status = in_cgroup(child_exec, &good);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	ck_assert_int_eq(stat(marker_ok, &st), 0);
	unlink(marker_ok);
	unlink(denied);
}
END_TEST

/* maj:min that /proc/self/mountinfo gives for the mount at dir */
static bool mountinfo_dev(const char *dir, unsigned *maj, unsigned *min)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mp[1024];
	bool found = false;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*u %*u %u:%u %*s %1023s", maj, min, mp) == 3 && !strcmp(mp, dir))
			found = true; /* the last one mounted there */
	fclose(f);
	return found;
}

/*
 * An overlay whose lower layer is on another file system (a tmpfs) reports
 * a per-layer pseudo device in stat(2) for the files of that layer, while
 * the exec hook sees the overlay superblock's device. A rule keyed by stat's
 * device never matched there and the denied program ran; the rule must
 * kill it.
 */
START_TEST(test_exec_rule_on_overlay)
{
	char base[] = "/tmp/shk-test-ovl-XXXXXX", lower[256], upper[256], work[256], merged[256];
	char image[300], marker[300], opts[1024];
	struct exec_arg bad = { image, marker };
	unsigned maj, min;
	struct stat st;
	int status;

	/* mounts of a namespace of this test's own: gone with it, even after a
	 * failed assertion */
	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(lower, sizeof(lower), "%s/lower", base);
	snprintf(upper, sizeof(upper), "%s/upper", base);
	snprintf(work, sizeof(work), "%s/work", base);
	snprintf(merged, sizeof(merged), "%s/merged", base);
	ck_assert_int_eq(mkdir(lower, 0755) | mkdir(upper, 0755) | mkdir(work, 0755) |
			 mkdir(merged, 0755), 0);
	ck_assert_int_eq(mount("shk-lower", lower, "tmpfs", 0, "size=16m"), 0);
	snprintf(image, sizeof(image), "%s/sh", lower);
	ebpf_copy_file("/bin/sh", image);
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work);
	ck_assert_int_eq(mount("shk-ovl", merged, "overlay", 0, opts), 0);
	snprintf(image, sizeof(image), "%s/sh", merged);
	snprintf(marker, sizeof(marker), "%s/ran", base);
	/* not vacuous: stat's device is not the superblock's here */
	ck_assert(mountinfo_dev(merged, &maj, &min));
	ck_assert_int_eq(stat(image, &st), 0);
	ck_assert_msg(major(st.st_dev) != maj || minor(st.st_dev) != min,
		      "stat reports the overlay's own device %u:%u: nothing to test", maj, min);

	load(true, SHK_EBPF_ALLOW);
	ck_assert_int_eq(shk_ebpf_set_exec_rule(E, image, SHK_EBPF_DENY), 0);
	status = in_cgroup(child_exec, &bad);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x", status);
	ck_assert_int_eq(stat(marker, &st), -1);

	ck_assert_int_eq(umount(merged), 0);
	ck_assert_int_eq(umount(lower), 0);
	/* the overlay leaves an empty work/work behind */
	snprintf(opts, sizeof(opts), "%s/work", work);
	ck_assert_int_eq(rmdir(opts) | rmdir(work) | rmdir(upper) | rmdir(merged) | rmdir(lower) |
			 rmdir(base), 0);
}
END_TEST

/*
 * The default (SHK_EBPF_LSM_AUTO) takes BPF LSM exactly when the probe says
 * it is usable, else the tracepoint, and says why. Where LSM loads, a denied
 * exec fails with EPERM and the caller lives on; elsewhere it is killed.
 * Whichever path this kernel gives is the one exercised.
 */
START_TEST(test_exec_path_auto)
{
	char denied[] = "/tmp/shk-test-sh-XXXXXX", marker[64], marker_ok[64], why[512];
	struct want w = { .kind = SHK_EBPF_EV_EXEC, .verdict = SHK_EBPF_DENY,
			  .reason = SHK_EBPF_R_RULE, .filename = denied };
	struct exec_arg bad = { denied, marker };
	int usable = shk_probe_bpf_lsm(why, sizeof(why));
	const char *got;
	struct stat st;
	int status;

	denied_copy(denied, marker, marker_ok, sizeof(marker));
	ck_assert_ptr_nonnull(strstr(why, "active LSMs: "));
	ck_assert_ptr_nonnull(strstr(why, "lockdown: "));
	load_lsm(true, SHK_EBPF_ALLOW, SHK_EBPF_LSM_AUTO);
	ck_assert_int_eq(shk_ebpf_set_exec_rule(E, denied, SHK_EBPF_DENY), 0);
	status = in_cgroup(child_exec, &bad);
	if (usable == 0) {
		ck_assert_int_eq(shk_ebpf_exec_path(E, &got), SHK_EBPF_EXEC_LSM);
		ck_assert_str_eq(got, "");
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == EPERM, "status %#x",
			      status);
		w.lsm = true;
	} else {
		/* An EPERM on load comes with the probe's diagnosis (tp_btf loads or not). */
		if (usable == -EPERM)
			ck_assert_ptr_nonnull(strstr(why, "a tp_btf program"));
		ck_assert_int_eq(shk_ebpf_exec_path(E, &got), SHK_EBPF_EXEC_TRACEPOINT);
		ck_assert_str_eq(got, why); /* the probe's own words, not a summary */
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x",
			      status);
	}
	ck_assert_int_eq(stat(marker, &st), -1);
	expect_event(&w);
	ck_assert_int_eq(shk_ebpf_detach(E), 0);
	ck_assert_int_eq(shk_ebpf_exec_path(E, NULL), SHK_EBPF_EXEC_NONE);
	unlink(denied);
}
END_TEST

static int child_connect_ok(void *arg)
{
	return try_connect(*(uint16_t *)arg, false);
}

START_TEST(test_stateful_and_once)
{
	struct shk_ebpf_dest d = { .cgroup_id = 0, .family = AF_INET, .port = port_ok,
				   .proto = IPPROTO_TCP, .op = SHK_EBPF_OP_CONNECT };
	struct want once = { .kind = SHK_EBPF_EV_NET, .verdict = SHK_EBPF_ALLOW,
			     .reason = SHK_EBPF_R_ONCE, .port = port_denied,
			     .digest = 0x5eed5eed12345678ull };
	int status;

	inet_pton(AF_INET, "127.0.0.1", d.addr);
	load(false, SHK_EBPF_ALLOW);

	/* decide() denied the destination: the kernel now refuses it. */
	ck_assert_int_eq(shk_ebpf_deny_dest(E, &d, 1), 0);
	status = in_cgroup(child_connect_ok, &port_ok);
	ck_assert_int_eq(WEXITSTATUS(status), EPERM);
	ck_assert_int_eq(shk_ebpf_undeny_dest(E, &d), 0);
	status = in_cgroup(child_connect_ok, &port_ok);
	ck_assert_int_eq(WEXITSTATUS(status), 0);

	/* Tool class denied: rule 1 carries tool 8. */
	ck_assert_int_eq(shk_ebpf_deny_tool(E, 8, true), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_ok)), EPERM);
	ck_assert_int_eq(shk_ebpf_deny_tool(E, 8, false), 0);

	/* Breaker open: everything is refused. */
	ck_assert_int_eq(shk_ebpf_set_breaker(E, true), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_ok)), EPERM);
	ck_assert_int_eq(shk_ebpf_set_breaker(E, false), 0);

	/* An approval lets exactly one retry of the denied destination through. */
	d.port = port_denied;
	ck_assert_int_eq(shk_ebpf_allow_once(E, &d, once.digest), 0);
	ck_assert_int_eq(shk_ebpf_allow_once(E, &d, once.digest), -EEXIST);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_denied)), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_denied)), EPERM);
	expect_event(&once);
	ck_assert_int_eq(once.found, 1);
}
END_TEST

/*
 * Entries keyed to the caller's own cgroup (not cgroup 0): the hook fetches
 * its cgroup id only when approvals or stateful denies wait, and must still
 * find these and report the id in both the record and its destination.
 */
START_TEST(test_stateful_by_cgroup)
{
	struct shk_ebpf_dest d = { .family = AF_INET, .port = port_ok, .proto = IPPROTO_TCP,
				   .op = SHK_EBPF_OP_CONNECT };
	struct want deny = { .kind = SHK_EBPF_EV_NET, .verdict = SHK_EBPF_DENY,
			     .reason = SHK_EBPF_R_STATEFUL, .port = port_ok };
	struct want once = { .kind = SHK_EBPF_EV_NET, .verdict = SHK_EBPF_ALLOW,
			     .reason = SHK_EBPF_R_ONCE, .port = port_denied,
			     .digest = 0x0cc0cc0c87654321ull };

	inet_pton(AF_INET, "127.0.0.1", d.addr);
	load(false, SHK_EBPF_ALLOW);
	d.cgroup_id = cg_id;

	ck_assert_int_eq(shk_ebpf_deny_dest(E, &d, 1), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_ok)), EPERM);
	expect_event(&deny);
	ck_assert_int_eq(shk_ebpf_undeny_dest(E, &d), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_ok)), 0);

	d.port = port_denied;
	ck_assert_int_eq(shk_ebpf_allow_once(E, &d, once.digest), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_denied)), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_denied)), EPERM);
	expect_event(&once);
	ck_assert_int_eq(once.found, 1);
	for (size_t k = 0; k < nseen; k++)
		if (seen[k].kind == SHK_EBPF_EV_NET)
			ck_assert_uint_eq(seen[k].dest.cgroup_id, cg_id);
}
END_TEST

/* child_exec's argv for x, as the kernel lays it out (NUL-separated). */
static size_t exec_args(const struct exec_arg *x, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%c-c%cecho ran > \"$1\"%csh%c%s", x->path, 0, 0, 0, 0,
			 x->marker);

	ck_assert_int_lt(n, (int)len);
	return (size_t)n + 1;
}

static bool ran(const char *marker)
{
	struct stat st;
	bool yes = stat(marker, &st) == 0;

	unlink(marker);
	return yes;
}

/* Two execs of the approved argv at once: the number that ran. */
static int racing_execs(struct exec_arg *x)
{
	int go[2], ok = 0;
	pid_t pid[2];
	char c;

	ck_assert_int_eq(pipe(go), 0);
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		ck_assert_int_ge(pid[i], 0);
		if (pid[i] == 0) {
			close(go[1]);
			if (shk_cgroup_enter(cg_path, getpid()) < 0 || read(go[0], &c, 1) != 0)
				_exit(100);
			_exit(child_exec(x));
		}
	}
	close(go[0]);
	close(go[1]); /* both read EOF: go */
	for (int i = 0; i < 2; i++) {
		int st;

		ck_assert_int_eq(waitpid(pid[i], &st, 0), pid[i]);
		ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	return ok;
}

/*
 * A single-use exec approval: bound to cgroup, image and argv bytes; another
 * argv is killed and leaves it; the approved argv runs once (of two racing
 * execs, one); the breaker wins over it; withdrawn, nothing runs.
 */
START_TEST(test_exec_once)
{
	char img[] = "/tmp/shk-test-sh-XXXXXX", marker[64], other[64], args[512], args2[512], big[600];
	struct want w = { .kind = SHK_EBPF_EV_EXEC, .verdict = SHK_EBPF_ALLOW,
			  .reason = SHK_EBPF_R_ONCE, .filename = img, .digest = 0xe8ecull << 32 };
	struct exec_arg approved = { img, marker }, changed = { img, other };
	struct shk_ebpf_exec_key k = { .cgroup_id = 0 };
	struct stat st;
	size_t n, n2;

	denied_copy(img, marker, other, sizeof(marker));
	load(true, SHK_EBPF_ALLOW);
	ck_assert_int_eq(shk_ebpf_set_exec_rule(E, img, SHK_EBPF_HITL), 0);
	ck_assert_int_eq(stat(img, &st), 0);
	k.dev = ((uint64_t)major(st.st_dev) << 20) | minor(st.st_dev);
	k.ino = st.st_ino;
	n = exec_args(&approved, args, sizeof(args));
	memset(big, 'a', sizeof(big));
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args, n, w.digest), -EINVAL); /* cgroup 0 */
	k.cgroup_id = cg_id;
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args, 0, w.digest), -EINVAL);
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, big, 512, w.digest), -E2BIG);
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args, n, w.digest), 0);
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args, n, w.digest), -EEXIST);

	ck_assert_int_eq(WTERMSIG(in_cgroup(child_exec, &changed)), SIGKILL);
	ck_assert(!ran(other));
	ck_assert_int_eq(shk_ebpf_set_breaker(E, true), 0);
	ck_assert_int_eq(WTERMSIG(in_cgroup(child_exec, &approved)), SIGKILL);
	ck_assert(!ran(marker));
	ck_assert_int_eq(shk_ebpf_set_breaker(E, false), 0);
	ck_assert_int_eq(racing_execs(&approved), 1);
	ck_assert(ran(marker));
	expect_event(&w);
	ck_assert_int_eq(w.found, 1);
	ck_assert_int_eq(WTERMSIG(in_cgroup(child_exec, &approved)), SIGKILL);
	ck_assert_int_eq(shk_ebpf_revoke_exec_once(E, &k, args, n), -ENOENT); /* taken */

	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args, n, w.digest), 0);
	ck_assert_int_eq(shk_ebpf_revoke_exec_once(E, &k, args, n), 0);
	ck_assert_int_eq(WTERMSIG(in_cgroup(child_exec, &approved)), SIGKILL);
	ck_assert(!ran(marker));

	/* approvals of one image with different argv wait side by side, each
	 * lets its own argv run once */
	n2 = exec_args(&changed, args2, sizeof(args2));
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args, n, w.digest), 0);
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args2, n2, w.digest), 0);
	ck_assert_int_eq(in_cgroup(child_exec, &changed), 0);
	ck_assert(ran(other));
	ck_assert_int_eq(in_cgroup(child_exec, &approved), 0);
	ck_assert(ran(marker));
	ck_assert_int_eq(WTERMSIG(in_cgroup(child_exec, &changed)), SIGKILL);
	ck_assert(!ran(other));
	ck_assert_int_eq(shk_ebpf_revoke_exec_once(E, &k, args2, n2), -ENOENT);
	unlink(img);
}
END_TEST

static const enum bpf_attach_type hooks[] = {
	BPF_CGROUP_INET4_CONNECT, BPF_CGROUP_INET6_CONNECT, BPF_CGROUP_UDP4_SENDMSG,
	BPF_CGROUP_UDP6_SENDMSG, BPF_CGROUP_INET4_BIND, BPF_CGROUP_INET6_BIND,
	BPF_CGROUP_SETSOCKOPT, BPF_CGROUP_INET_EGRESS, BPF_CGROUP_INET_SOCK_CREATE,
	BPF_CGROUP_INET_INGRESS,
};

/* Raw BPF_PROG_QUERY: the test must not share the loader's view (libbpf). */
static uint32_t attached(void)
{
	uint32_t total = 0;

	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		uint32_t ids[16];
		union bpf_attr a;

		memset(&a, 0, sizeof(a));
		a.query.target_fd = (uint32_t)cg_fd;
		a.query.attach_type = hooks[i];
		a.query.prog_ids = (uint64_t)(uintptr_t)ids;
		a.query.prog_cnt = 16;
		ck_assert_int_eq(syscall(__NR_bpf, BPF_PROG_QUERY, &a, sizeof(a)), 0);
		total += a.query.prog_cnt;
	}
	return total;
}

START_TEST(test_detach_leaves_nothing)
{
	load(true, SHK_EBPF_ALLOW);
	ck_assert_uint_eq(attached(), 10);
	ck_assert_int_eq(shk_ebpf_detach(E), 0);
	ck_assert_uint_eq(attached(), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_denied)), 0);
	/* Freeing without detach detaches too. */
	shk_ebpf_free(E);
	E = NULL;
	load(false, SHK_EBPF_ALLOW);
	ck_assert_uint_eq(attached(), 10);
	shk_ebpf_free(E);
	E = NULL;
	ck_assert_uint_eq(attached(), 0);
}
END_TEST

#define RING_TEST_CALLS 120

static int child_connects_n(void *arg)
{
	int refused = 0;

	for (int i = 0; i < RING_TEST_CALLS; i++) {
		int r = try_connect(*(uint16_t *)arg, false);

		if (r == EPERM)
			refused++;
		else if (r != 0)
			return 100;
	}
	return refused;
}

/* A full ring refuses allowed calls rather than letting them pass unreported. */
START_TEST(test_full_ring_refuses_unreported_calls)
{
	struct shk_ebpf_opts o = { .net_default = SHK_EBPF_ALLOW, .report_allowed = true,
				   .ring_bytes = (uint32_t)sysconf(_SC_PAGESIZE) };
	struct shk_ebpf_stats st;
	uint64_t delivered;
	int refused;

	ck_assert_int_eq(shk_ebpf_open(&o, &E), 0);
	ck_assert_int_eq(shk_ebpf_attach(E, cg_fd), 0);
	/* Nobody consumes: a page holds 63 network records (64 bytes each with
	 * the ring's header, SHK_BPF_NET_EVENT_SIZE), the rest must be refused. */
	refused = WEXITSTATUS(in_cgroup(child_connects_n, &port_ok));
	ck_assert_int_ge(refused, RING_TEST_CALLS - 64);
	ck_assert_int_le(refused, RING_TEST_CALLS - 60);
	ck_assert_int_eq(shk_ebpf_stats(E, &st), 0);
	ck_assert_uint_eq(st.refused_unreported, (uint64_t)refused);
	while (shk_ebpf_poll(E, 0, on_event, NULL) > 0)
		;
	ck_assert_int_eq(shk_ebpf_stats(E, &st), 0);
	delivered = st.delivered;
	/* Every call that passed was reported. */
	ck_assert_uint_eq(delivered, (uint64_t)(RING_TEST_CALLS - refused));
}
END_TEST

START_TEST(test_pin_survives_and_unpins)
{
	char dir[128];

	snprintf(dir, sizeof(dir), "/sys/fs/bpf/shk-test-%d", (int)getpid());
	load(false, SHK_EBPF_ALLOW);
	ck_assert_int_eq(shk_ebpf_pin(E, dir), 0);
	shk_ebpf_free(E);
	E = NULL;
	ck_assert_uint_eq(attached(), 10); /* the pins hold the links */
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_denied)), EPERM);
	ck_assert_int_eq(shk_ebpf_unpin(dir, NULL, 0), 0);
	/* The last reference of an unpinned link is dropped from a kernel work queue. */
	for (int i = 0; i < 100 && attached(); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	ck_assert_uint_eq(attached(), 0);
}
END_TEST

/* A map of our own, pinned at path under a name shackle's pins do not have. */
static void pin_foreign_map(const char *path, const char *kname)
{
	union bpf_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 4;
	a.max_entries = 1;
	snprintf(a.map_name, sizeof(a.map_name), "%s", kname);
	fd = (int)syscall(__NR_bpf, BPF_MAP_CREATE, &a, sizeof(a));
	ck_assert_int_ge(fd, 0);
	memset(&a, 0, sizeof(a));
	a.pathname = (uint64_t)(uintptr_t)path;
	a.bpf_fd = (uint32_t)fd;
	ck_assert_int_eq(syscall(__NR_bpf, BPF_OBJ_PIN, &a, sizeof(a)), 0);
	close(fd);
}

static bool exists(const char *dir, const char *name)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

/* Detach removes what attach pinned and nothing else: every decoy is left whole. */
START_TEST(test_unpin_touches_only_shackle_pins)
{
	char plain[] = "/tmp/shk-decoy-XXXXXX", bpfdir[128], pins[128], lnk[160], p[512], e[64];

	/* A directory of ordinary files, as the system's temporary directory is. */
	ck_assert_ptr_nonnull(mkdtemp(plain));
	snprintf(p, sizeof(p), "%s/v4_rules", plain);
	close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	snprintf(p, sizeof(p), "%s/notes.txt", plain);
	close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	ck_assert_int_eq(shk_ebpf_unpin(plain, e, sizeof(e)), -EMEDIUMTYPE);
	ck_assert(exists(plain, "v4_rules") && exists(plain, "notes.txt"));

	/* bpffs holding somebody else's pins, one of them under a name of ours. */
	snprintf(bpfdir, sizeof(bpfdir), "/sys/fs/bpf/shk-decoy-%d", (int)getpid());
	ck_assert_int_eq(mkdir(bpfdir, 0700), 0);
	ck_assert_int_eq(shk_ebpf_unpin(bpfdir, e, sizeof(e)), -ENODATA);
	snprintf(p, sizeof(p), "%s/v4_rules", bpfdir);
	pin_foreign_map(p, "not_ours");
	ck_assert_int_eq(shk_ebpf_unpin(bpfdir, e, sizeof(e)), -EEXIST);
	ck_assert_str_eq(e, "v4_rules");
	ck_assert(exists(bpfdir, "v4_rules"));

	/* shackle's pins with a foreign one beside them: all stay, enforcement too. */
	snprintf(pins, sizeof(pins), "/sys/fs/bpf/shk-pins-%d", (int)getpid());
	load(false, SHK_EBPF_ALLOW);
	ck_assert_int_eq(shk_ebpf_pin(E, pins), 0);
	shk_ebpf_free(E);
	E = NULL;
	snprintf(p, sizeof(p), "%s/theirs", pins);
	pin_foreign_map(p, "theirs");
	ck_assert_int_eq(shk_ebpf_unpin(pins, e, sizeof(e)), -EEXIST);
	ck_assert_str_eq(e, "theirs");
	ck_assert(exists(pins, "v4_rules") && exists(pins, "link_shk_connect4"));
	ck_assert_uint_eq(attached(), 10);

	/* Not through a symbolic link either. */
	snprintf(lnk, sizeof(lnk), "%s/link-to-pins", plain);
	ck_assert_int_eq(symlink(pins, lnk), 0);
	ck_assert_int_eq(shk_ebpf_unpin(lnk, e, sizeof(e)), -ENOTDIR);
	ck_assert(exists(pins, "v4_rules"));

	/* Without the stranger the directory is shackle's alone and goes. */
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(shk_ebpf_unpin(pins, e, sizeof(e)), 0);
	ck_assert_int_eq(access(pins, F_OK), -1);

	snprintf(p, sizeof(p), "%s/v4_rules", bpfdir);
	unlink(p);
	rmdir(bpfdir);
	unlink(lnk);
	snprintf(p, sizeof(p), "%s/v4_rules", plain);
	unlink(p);
	snprintf(p, sizeof(p), "%s/notes.txt", plain);
	unlink(p);
	rmdir(plain);
}
END_TEST

int main(void)
{
	struct statfs sfs;
	Suite *s;
	TCase *tc;

	ebpf_test_parent(parent, sizeof(parent), "ebpf");
	/* bpffs at its usual place, for the pinning test (systemd mounts it too). */
	if (statfs("/sys/fs/bpf", &sfs) < 0 || sfs.f_type != BPF_FS_MAGIC_)
		if (mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL) < 0) {
			shk_cgroup_remove(parent);
			shk_test_skip("cannot mount bpffs on /sys/fs/bpf: %s", strerror(errno));
		}

	s = suite_create("ebpf-live");
	tc = tcase_create("cgroup");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_connect_policy);
	tcase_add_test(tc, test_exec_denied_is_killed);
	tcase_add_test(tc, test_exec_rule_on_overlay);
	tcase_add_test(tc, test_exec_path_auto);
	tcase_add_test(tc, test_stateful_and_once);
	tcase_add_test(tc, test_stateful_by_cgroup);
	tcase_add_test(tc, test_exec_once);
	tcase_add_test(tc, test_detach_leaves_nothing);
	tcase_add_test(tc, test_pin_survives_and_unpins);
	tcase_add_test(tc, test_unpin_touches_only_shackle_pins);
	tcase_add_test(tc, test_full_ring_refuses_unreported_calls);
	suite_add_tcase(s, tc);
	/* Every test's cgroup lives below parent: removed after the run whatever a test did. */
	return ebpf_run_suite(s, parent);
}
