/* SPDX-License-Identifier: MIT */
/*
 * shk-race: TOCTOU attacks on a supervisor that checks syscall arguments in
 * the agent's memory and then lets the kernel re-read them (CONTINUE).
 * A flipper (a thread, or with --process a forked process sharing the page)
 * rewrites the argument between an allowed and a forbidden value in a tight
 * loop while the main thread makes the call.
 *
 *   shk-race connect AHOST APORT FHOST FPORT ITER [--process]
 *       TCP connect on the shared sockaddr; after every success getpeername()
 *       says where the kernel really connected.
 *   shk-race udp AHOST APORT FHOST FPORT ITER [--process]
 *       UDP sendto on the shared sockaddr (the witness listener counts
 *       datagrams at the forbidden address).
 *   shk-race udpmsg AHOST APORT FHOST FPORT ITER [--process]
 *       a UDP socket connected to AHOST:APORT sends with sendmsg(); the
 *       shared msghdr flips between no address and FHOST:FPORT (a
 *       supervisor that lets an address-less sendmsg continue must still
 *       stop the datagram the flip addresses to FHOST).
 *   shk-race exec ALLOWED DENIED BREACH ITER [--process|--untraced]
 *       fork; the child execve()s the shared path with argv {name, BREACH}:
 *       DENIED is expected to be a binary that creates BREACH (touch).
 *       --untraced creates the child with clone(CLONE_UNTRACED), which a
 *       supervisor relying on ptrace auto-attach (PTRACE_O_TRACEFORK) does
 *       not follow: its exec-time check must not depend on that.
 *   shk-race exec-argv BINARY GOOD BAD ITER [--process]
 *       the path is fixed, argv[1] flips between GOOD and BAD: with BINARY =
 *       touch and a policy that denies BAD as an argument, BAD must never
 *       be created.
 *   shk-race exec-env GOOD BAD ITER [--process]
 *       envp is the one string that flips between GOOD and BAD (same
 *       length, e.g. XD_PRELOAD= and LD_PRELOAD=); the child execs
 *       /usr/bin/printenv NAME (NAME: BAD's name), which exits 0 only when
 *       BAD reached the program: with a policy that denies loader
 *       variables that is the breach.
 *
 *   shk-race exec-fd ALLOWED DENIED BREACH ITER
 *       fork; the child execveat()s fd 10 with AT_EMPTY_PATH while its
 *       second thread dup2()s ALLOWED and DENIED (two scripts with the same
 *       "#!" line; DENIED creates BREACH) onto fd 10 in turn: the
 *       interpreter reads /dev/fd/10, whatever it is when it opens it.
 *
 *   shk-race exec-ldso LOADER DIR BREACH ITER
 *       DIR/prog and DIR/other are symlinks to /usr/bin/true and
 *       /usr/bin/touch; another process exchanges them
 *       (renameat2(RENAME_EXCHANGE)) in a loop while a child runs
 *       LOADER DIR/prog BREACH: ld.so opens its program by name after the
 *       exec, so the name may lead to touch by then.
 *
 *   shk-race exec-valgrind VALGRIND DIR BREACH ITER
 *       the same, the child running VALGRIND --tool=none -q DIR/prog
 *       BREACH: valgrind opens its program by name long after the exec.
 *
 *   shk-race exec-script DIR ALLOWED DENIED BREACH ITER
 *       the same with DIR/prog and DIR/other leading to two scripts with
 *       the same "#!" line (DENIED creates BREACH), the child exec'ing
 *       DIR/prog itself: its interpreter opens the name after the exec.
 *
 * Prints one line "allowed=N denied=N breach=N other=N flips=N" (for exec:
 * "ran=N denied=N killed=N other=N flips=N breach=0|1") and exits 1 when a
 * breach was seen on the agent side, 0 otherwise.
 */
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hlp.h"

#define PATH_SZ 256

/* The page both sides see: the argument under attack and the flip control. */
struct shared {
	_Atomic int stop;
	_Atomic unsigned gen; /* exec mode: a flipper process stops when it moves */
	_Atomic unsigned long flips;
	union {
		struct sockaddr_storage ss;
		char path[PATH_SZ];
	} arg;
};

static struct shared *sh;
static union {
	struct sockaddr_storage ss;
	char path[PATH_SZ];
} good, bad;
static size_t arg_len;

static void flip_loop(unsigned g)
{
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed) &&
	       atomic_load_explicit(&sh->gen, memory_order_relaxed) == g) {
		memcpy((void *)&sh->arg, &bad, arg_len);
		memcpy((void *)&sh->arg, &good, arg_len);
		atomic_fetch_add_explicit(&sh->flips, 1, memory_order_relaxed);
	}
}

static void *flip_thread(void *unused)
{
	(void)unused;
	flip_loop(atomic_load(&sh->gen));
	return NULL;
}

/* Start a flipper; returns the pid of a flipper process, 0 for a thread. */
static pid_t start_flipper(int process, pthread_t *ret_thread)
{
	atomic_store(&sh->stop, 0);
	if (process) {
		/* Read the generation before fork: the flipper may start late. */
		unsigned g = atomic_load(&sh->gen);
		pid_t pid = fork();

		if (pid < 0)
			hlp_die("fork: %s", hlp_errname(errno));
		if (pid == 0) {
			/* Never outlive the racer, whatever happens to it. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			flip_loop(g);
			_exit(0);
		}
		return pid;
	}
	if (pthread_create(ret_thread, NULL, flip_thread, NULL))
		hlp_die("pthread_create failed");
	return 0;
}

static void stop_flipper(pid_t pid, pthread_t thread)
{
	atomic_store(&sh->stop, 1);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	else
		pthread_join(thread, NULL);
}

static int same_addr(const char *peer, const char *host, const char *port)
{
	char want[128];

	/* hlp_peer prints v4-mapped as v4; compare against the forbidden host. */
	snprintf(want, sizeof(want), "%s:%s",
		 !strncmp(host, "::ffff:", 7) ? host + 7 : host, port);
	return !strcmp(peer, want);
}

static int race_udpmsg(char **argv, long iter, int process)
{
	static struct sockaddr_storage fbd;
	static char data[] = "race";
	static struct iovec iov = { data, 4 };
	socklen_t len = hlp_sockaddr(argv[0], argv[1], &good.ss);
	socklen_t flen = hlp_sockaddr(argv[2], argv[3], &fbd);
	struct msghdr none = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct msghdr addressed = { .msg_name = &fbd, .msg_namelen = flen, .msg_iov = &iov,
				    .msg_iovlen = 1 };
	long allowed = 0, denied = 0, other = 0;
	pthread_t th = 0;
	pid_t fp;
	int fd = socket(good.ss.ss_family, SOCK_DGRAM, 0);

	if (fd < 0 || len != flen)
		hlp_die("udpmsg: socket or mixed families");
	if (connect(fd, (struct sockaddr *)&good.ss, len) < 0)
		hlp_die("udpmsg: connect to the allowed address: %s", hlp_errname(errno));
	memcpy(&good, &none, sizeof(none));
	memcpy(&bad, &addressed, sizeof(addressed));
	arg_len = sizeof(struct msghdr);
	memcpy((void *)&sh->arg, &good, arg_len);
	fp = start_flipper(process, &th);
	for (long i = 0; i < iter; i++) {
		int e = sendmsg(fd, (struct msghdr *)&sh->arg, 0) < 0 ? errno : 0;

		if (e == 0)
			allowed++;
		else if (e == EPERM || e == EACCES)
			denied++;
		else
			other++;
	}
	stop_flipper(fp, th);
	close(fd);
	/* where the datagrams went is the witness listener's to say */
	printf("allowed=%ld denied=%ld breach=0 other=%ld flips=%lu\n", allowed, denied, other,
	       atomic_load(&sh->flips));
	return 0;
}

static int race_net(int udp, char **argv, long iter, int process)
{
	socklen_t len = hlp_sockaddr(argv[0], argv[1], &good.ss);
	socklen_t blen = hlp_sockaddr(argv[2], argv[3], &bad.ss);
	long allowed = 0, denied = 0, breach = 0, other = 0;
	pthread_t th = 0;
	pid_t fp;

	if (len != blen)
		hlp_die("both addresses must have the same family");
	arg_len = len;
	memcpy((void *)&sh->arg, &good, arg_len);
	fp = start_flipper(process, &th);
	for (long i = 0; i < iter; i++) {
		int fd = socket(good.ss.ss_family, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
		int e;

		if (fd < 0)
			hlp_die("socket: %s", hlp_errname(errno));
		if (udp)
			e = sendto(fd, "race", 4, 0, (struct sockaddr *)&sh->arg.ss, len) < 0 ? errno : 0;
		else
			e = connect(fd, (struct sockaddr *)&sh->arg.ss, len) < 0 ? errno : 0;
		if (e == 0 && !udp && same_addr(hlp_peer(fd), argv[2], argv[3]))
			breach++;
		else if (e == 0)
			allowed++;
		else if (e == EPERM || e == EACCES)
			denied++;
		else if (e == ECONNREFUSED)
			breach++; /* the allowed address has a listener: it went elsewhere */
		else
			other++;
		close(fd);
	}
	stop_flipper(fp, th);
	printf("allowed=%ld denied=%ld breach=%ld other=%ld flips=%lu\n", allowed, denied,
	       breach, other, atomic_load(&sh->flips));
	return breach ? 1 : 0;
}

static pid_t spawn(int untraced)
{
	if (!untraced)
		return fork();
	/* raw clone without CLONE_VM: returns twice like fork() */
	return (pid_t)syscall(SYS_clone, SIGCHLD | CLONE_UNTRACED, NULL, NULL, NULL, 0);
}

enum { MODE_PATH, MODE_ARGV, MODE_ENV };

/*
 * MODE_ENV: argv is GOOD BAD; /usr/bin/printenv NAME runs with envp {the
 * flipping string}: exit 0 (NAME was set) is a breach, 1 a clean run.
 * MODE_ARGV: argv is BINARY GOOD BAD; the path is fixed and argv[1] flips
 * between GOOD and BAD (a policy that judges arguments, e.g. "git push").
 * Otherwise argv is ALLOWED DENIED BREACH and the path flips.
 */
static int race_exec(char **argv, long iter, int process, int untraced, int mode)
{
	long ran = 0, denied = 0, killed = 0, other = 0, env_breach = 0;
	bool argv_mode = mode == MODE_ARGV;
	const char *breach_path = mode == MODE_ENV ? NULL : argv[2];
	const char *binary = argv_mode ? argv[0] : mode == MODE_ENV ? "/usr/bin/printenv" : NULL;
	char name[PATH_SZ];
	struct stat st;

	if (argv_mode)
		argv++;
	if (strlen(argv[0]) >= PATH_SZ || strlen(argv[1]) >= PATH_SZ)
		hlp_die("path too long");
	if (mode == MODE_ENV && (strlen(argv[0]) != strlen(argv[1]) || !strchr(argv[1], '=')))
		hlp_die("exec-env: GOOD and BAD must be NAME=VALUE of the same length");
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(argv[1], "="), argv[1]);
	strcpy(good.path, argv[0]);
	strcpy(bad.path, argv[1]);
	arg_len = PATH_SZ;
	for (long i = 0; i < iter; i++) {
		pid_t pid = spawn(untraced);
		int status;

		if (pid < 0)
			hlp_die("%s: %s", untraced ? "clone(CLONE_UNTRACED)" : "fork",
				hlp_errname(errno));
		if (pid == 0) {
			char *const av[] = { mode == MODE_ENV ? "printenv" : "racer-child",
					     argv_mode ? (char *)sh->arg.path :
					     mode == MODE_ENV ? name : (char *)breach_path, NULL };
			char *const env[] = { mode == MODE_ENV ? (char *)sh->arg.path : NULL, NULL };
			pthread_t th = 0;

			/* start_flipper() clears stop; the generation ends it. */
			unsigned long f0 = atomic_load(&sh->flips);

			memcpy((void *)&sh->arg, &good, arg_len);
			start_flipper(process, &th);
			while (atomic_load(&sh->flips) < f0 + 2)
				; /* the flipper is running: race for real */
			execve(binary ? binary : (const char *)sh->arg.path, av, env);
			_exit(errno == EPERM || errno == EACCES ? 10 : 11);
		}
		if (waitpid(pid, &status, 0) < 0)
			hlp_die("waitpid: %s", hlp_errname(errno));
		atomic_fetch_add(&sh->gen, 1);
		if (WIFSIGNALED(status))
			killed++;
		else if (mode == MODE_ENV && WEXITSTATUS(status) == 0)
			env_breach++; /* printenv found the variable */
		else if (WEXITSTATUS(status) == (mode == MODE_ENV ? 1 : 0))
			ran++;
		else if (WEXITSTATUS(status) == 10)
			denied++;
		else
			other++;
	}
	bool breach = mode == MODE_ENV ? env_breach > 0 : stat(breach_path, &st) == 0;

	printf("ran=%ld denied=%ld killed=%ld other=%ld flips=%lu breach=%d\n", ran, denied,
	       killed, other, atomic_load(&sh->flips), breach);
	return breach;
}

/* How the exec children of a race ended; printed as the exec line. */
struct tally {
	long ran, denied, killed, other;
};

/* Wait for an exec child: killed, exit 0 (ran), 10 (refused) or other. */
static void tally_child(struct tally *t, pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) < 0)
		hlp_die("waitpid: %s", hlp_errname(errno));
	if (WIFSIGNALED(status))
		t->killed++;
	else if (WEXITSTATUS(status) == 0)
		t->ran++;
	else if (WEXITSTATUS(status) == 10)
		t->denied++;
	else
		t->other++;
}

static int tally_print(const struct tally *t, const char *breach_path)
{
	struct stat st;
	bool breach = stat(breach_path, &st) == 0;

	printf("ran=%ld denied=%ld killed=%ld other=%ld flips=%lu breach=%d\n", t->ran, t->denied,
	       t->killed, t->other, atomic_load(&sh->flips), breach);
	return breach;
}

#define EXEC_FD 10
static int fd_ok, fd_bad;

static void *dup_flipper(void *unused)
{
	(void)unused;
	for (;;) {
		dup2(fd_bad, EXEC_FD);
		dup2(fd_ok, EXEC_FD);
		atomic_fetch_add(&sh->flips, 1);
	}
	return NULL;
}

static int race_exec_fd(char **argv, long iter)
{
	struct tally t = { 0 };

	fd_ok = open(argv[0], O_RDONLY);
	fd_bad = open(argv[1], O_RDONLY);
	if (fd_ok < 0 || fd_bad < 0)
		hlp_die("open: %s", hlp_errname(errno));
	for (long i = 0; i < iter; i++) {
		pid_t pid = fork();

		if (pid < 0)
			hlp_die("fork: %s", hlp_errname(errno));
		if (pid == 0) {
			char *const av[] = { "racer-child", NULL }, *const env[] = { NULL };
			unsigned long f0 = atomic_load(&sh->flips);
			pthread_t th;

			dup2(fd_ok, EXEC_FD);
			pthread_create(&th, NULL, dup_flipper, NULL);
			while (atomic_load(&sh->flips) < f0 + 2)
				;
			syscall(SYS_execveat, EXEC_FD, "", av, env, AT_EMPTY_PATH);
			_exit(errno == EPERM || errno == EACCES ? 10 : 11);
		}
		tally_child(&t, pid);
	}
	return tally_print(&t, argv[2]);
}

/* DIR/prog and DIR/other, symlinks to to_ok and to_bad, exchanged in a loop by
 * another process while children exec av (which names DIR/prog). */
static int race_exec_swap(const char *dir, const char *to_ok, const char *to_bad, char **av,
                          const char *breach, long iter)
{
	struct tally t = { 0 };
	char prog[PATH_SZ], alt[PATH_SZ];
	pid_t flipper;

	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(alt, sizeof(alt), "%s/other", dir);
	unlink(prog);
	unlink(alt);
	if (symlink(to_ok, prog) < 0 || symlink(to_bad, alt) < 0)
		hlp_die("symlink: %s", hlp_errname(errno));
	if ((flipper = fork()) == 0)
		for (;;)
			if (syscall(SYS_renameat2, AT_FDCWD, prog, AT_FDCWD, alt, RENAME_EXCHANGE) == 0)
				atomic_fetch_add(&sh->flips, 1);
	for (long i = 0; i < iter; i++) {
		pid_t pid = fork();

		if (pid < 0)
			hlp_die("fork: %s", hlp_errname(errno));
		if (pid == 0) {
			char *const env[] = { NULL };

			execve(av[0], av, env);
			_exit(errno == EPERM || errno == EACCES ? 10 : 11);
		}
		tally_child(&t, pid);
	}
	kill(flipper, SIGKILL);
	waitpid(flipper, NULL, 0);
	return tally_print(&t, breach);
}

static int race_exec_ldso(char **argv, long iter)
{
	char prog[PATH_SZ];
	char *av[] = { argv[0], prog, argv[2], NULL };

	snprintf(prog, sizeof(prog), "%s/prog", argv[1]);
	return race_exec_swap(argv[1], "/usr/bin/true", "/usr/bin/touch", av, argv[2], iter);
}

/* A userland loader (valgrind) opens its program by name long after the
 * exec stop: LOADER --tool=none -q DIR/prog BREACH. */
static int race_exec_valgrind(char **argv, long iter)
{
	char prog[PATH_SZ], tool[] = "--tool=none", quiet[] = "-q";
	char *av[] = { argv[0], tool, quiet, prog, argv[2], NULL };

	snprintf(prog, sizeof(prog), "%s/prog", argv[1]);
	return race_exec_swap(argv[1], "/usr/bin/true", "/usr/bin/touch", av, argv[2], iter);
}

static int race_exec_script(char **argv, long iter)
{
	char prog[PATH_SZ];
	char *av[] = { prog, NULL };

	snprintf(prog, sizeof(prog), "%s/prog", argv[0]);
	return race_exec_swap(argv[0], argv[1], argv[2], av, argv[3], iter);
}

int main(int argc, char **argv)
{
	int process = argc > 1 && !strcmp(argv[argc - 1], "--process");
	int untraced = argc > 1 && !strcmp(argv[argc - 1], "--untraced");
	int nargs = argc - process - untraced;
	long iter;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (nargs < 2 || (strncmp(argv[1], "exec", 4) && nargs != 7) ||
	    ((!strcmp(argv[1], "exec") || !strcmp(argv[1], "exec-fd") ||
	      !strcmp(argv[1], "exec-ldso") || !strcmp(argv[1], "exec-valgrind")) && nargs != 6) || (!strcmp(argv[1], "exec-argv") && nargs != 6) ||
	    (!strcmp(argv[1], "exec-env") && nargs != 5) ||
	    (!strcmp(argv[1], "exec-script") && nargs != 7)) {
		fprintf(stderr, "usage: shk-race connect|udp|udpmsg AHOST APORT FHOST FPORT ITER [--process]\n"
				"       shk-race exec ALLOWED DENIED BREACH ITER [--process|--untraced]\n"
				"       shk-race exec-fd ALLOWED DENIED BREACH ITER\n"
				"       shk-race exec-ldso LOADER DIR BREACH ITER\n"
				"       shk-race exec-valgrind VALGRIND DIR BREACH ITER\n"
				"       shk-race exec-script DIR ALLOWED DENIED BREACH ITER\n"
				"       shk-race exec-argv BINARY GOOD BAD ITER [--process]\n"
				"       shk-race exec-env GOOD BAD ITER [--process]\n");
		return HLP_USAGE;
	}
	iter = strtol(argv[nargs - 1], NULL, 10);
	if (iter <= 0)
		hlp_die("bad iteration count");
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		hlp_die("mmap: %s", hlp_errname(errno));
	if (!strcmp(argv[1], "exec"))
		return race_exec(argv + 2, iter, process, untraced, MODE_PATH);
	if (!strcmp(argv[1], "exec-ldso"))
		return race_exec_ldso(argv + 2, iter);
	if (!strcmp(argv[1], "exec-valgrind"))
		return race_exec_valgrind(argv + 2, iter);
	if (!strcmp(argv[1], "exec-script"))
		return race_exec_script(argv + 2, iter);
	if (!strcmp(argv[1], "exec-fd"))
		return race_exec_fd(argv + 2, iter);
	if (!strcmp(argv[1], "exec-argv"))
		return race_exec(argv + 2, iter, process, untraced, MODE_ARGV);
	if (!strcmp(argv[1], "exec-env"))
		return race_exec(argv + 2, iter, process, untraced, MODE_ENV);
	if (!strcmp(argv[1], "udpmsg"))
		return race_udpmsg(argv + 2, iter, process);
	if (!strcmp(argv[1], "connect") || !strcmp(argv[1], "udp"))
		return race_net(!strcmp(argv[1], "udp"), argv + 2, iter, process);
	fprintf(stderr, "shk-race: unknown mode '%s'\n", argv[1]);
	return HLP_USAGE;
}
