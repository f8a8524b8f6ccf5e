/* SPDX-License-Identifier: MIT */
/*
 * Windows onto a thread's memory (src/supervise/mem.c), read from this very
 * process (process_vm_readv and /proc/self/mem on oneself need no
 * privilege), each case both ways: strings that end right before an
 * unmapped page, strings and pointer arrays that cross windows and pages,
 * more strings than the windows hold, the kernel's bounds (E2BIG,
 * ENAMETOOLONG) and faults. Every result is compared with the bytes
 * written. Through /proc/PID/mem also: a process gone, one that exited
 * while the file was open and whose pid was then reused (root: a pid
 * namespace of the test's own), and that a read leaves a child's
 * copy-on-write pages shared where process_vm_readv copies them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "supervise/internal.h"
#include "supervise/mem.h"
#include "checkrun.h"

#define PG 4096

static struct shk_memwin w = { .fd = -1 };

/* the windows of this process: mode 0 process_vm_readv, 1 /proc/self/mem */
static void win_init(int mode)
{
	shk_memwin_close(&w);
	if (mode)
		ck_assert_int_eq(shk_memwin_open(&w, getpid()), 0);
	else
		shk_memwin_init(&w, getpid());
}

/* n pages, the last one unmapped: a hole right after the readable part */
static char *pages_with_hole(size_t n)
{
	char *p = mmap(NULL, n * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(p, MAP_FAILED);
	ck_assert_int_eq(munmap(p + (n - 1) * PG, PG), 0);
	memset(p, 'x', (n - 1) * PG);
	return p;
}

static uint64_t addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

START_TEST(str_ends_before_hole)
{
	char *p = pages_with_hole(3), buf[PATH_MAX];
	size_t len = 0;

	/* 100 bytes, the NUL is the last readable byte */
	p[2 * PG - 1] = 0;
	win_init(_i);
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(p + 2 * PG - 101), buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(len, 100);
	ck_assert_int_eq(memcmp(buf, p + 2 * PG - 101, 101), 0);
	/* no NUL before the hole: a fault, as the kernel's copy would be */
	p[2 * PG - 1] = 'y';
	win_init(_i);
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(p + 2 * PG - 101), buf, sizeof(buf), &len),
	                 -EFAULT);
	/* a string in the hole itself, and address 0 */
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(p + 2 * PG), buf, sizeof(buf), &len), -EFAULT);
	ck_assert_int_eq(shk_memwin_read_str(&w, 0, buf, sizeof(buf), &len), -EFAULT);
	munmap(p, 2 * PG);
}
END_TEST

START_TEST(str_bounds_and_window_crossing)
{
	size_t n = 2 * SHK_MEMWIN_PAGES + 2;
	char *p = pages_with_hole(n), buf[64], *big = malloc(3 * PG * SHK_MEMWIN_PAGES);
	size_t len = 0;

	ck_assert_ptr_nonnull(big);
	/* max - 1 bytes fit, max do not */
	p[63] = 0;
	win_init(_i);
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(p), buf, 64, &len), 0);
	ck_assert_uint_eq(len, 63);
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(p), buf, 63, &len), -ENAMETOOLONG);
	/* a string longer than one window: read across windows, whole */
	size_t slen = SHK_MEMWIN_PAGES * PG + 300;
	p[PG + 5 + slen] = 0;
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(p + PG + 5), big, 3 * PG * SHK_MEMWIN_PAGES, &len), 0);
	ck_assert_uint_eq(len, slen);
	ck_assert_int_eq(memcmp(big, p + PG + 5, slen + 1), 0);
	free(big);
	munmap(p, (n - 1) * PG);
}
END_TEST

/* argv with its pointers in one mapping and its strings spread over more
 * pages than the windows hold, some pointing back to earlier pages */
START_TEST(argv_many_pages)
{
	enum { N = 40, SPAN = 24 };
	char *strs = mmap(NULL, SPAN * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t *ptrs = malloc((N + 1) * sizeof(*ptrs));
	struct shk_argv a = { 0 };

	ck_assert_ptr_ne(strs, MAP_FAILED);
	ck_assert_ptr_nonnull(ptrs);
	for (int i = 0; i < N; i++) {
		/* pages 0, 7, 14, 21, 4, 11, ...: windows are evicted and re-read;
		 * every fifth string straddles a page boundary */
		char *s = strs + (size_t)((i * 7) % SPAN) * PG + (i % 5 == 0 ? PG - 3 : 17);
		snprintf(s, 32, "arg-%d-%s", i, i % 3 ? "x" : "longer-value");
		ptrs[i] = addr(s);
	}
	ptrs[N] = 0;
	win_init(_i);
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), 0);
	ck_assert_uint_eq(a.n, N);
	ck_assert_ptr_null(a.v[N]);
	for (int i = 0; i < N; i++)
		ck_assert_str_eq(a.v[i], (const char *)(uintptr_t)ptrs[i]);
	/* argv == NULL is an empty argv; a pointer into a hole faults */
	win_init(_i);
	ck_assert_int_eq(shk_memwin_read_argv(&w, 0, &a), 0);
	ck_assert_uint_eq(a.n, 0);
	munmap(strs + (SPAN - 1) * PG, PG);
	ptrs[3] = addr(strs + (SPAN - 1) * PG);
	win_init(_i);
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), -EFAULT);
	shk_argv_free(&a);
	free(ptrs);
	munmap(strs, (SPAN - 1) * PG);
}
END_TEST

/* a pointer array that ends right before a hole, and one that runs into it */
START_TEST(argv_pointers_before_hole)
{
	char *p = pages_with_hole(2);
	uint64_t *ptrs = (uint64_t *)(p + PG) - 3;
	static const char s0[] = "first", s1[] = "second";
	struct shk_argv a = { 0 };

	ptrs[0] = addr(s0);
	ptrs[1] = addr(s1);
	ptrs[2] = 0;
	win_init(_i);
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), 0);
	ck_assert_uint_eq(a.n, 2);
	ck_assert_str_eq(a.v[0], "first");
	ck_assert_str_eq(a.v[1], "second");
	ptrs[2] = addr(s0);
	win_init(_i);
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), -EFAULT);
	shk_argv_free(&a);
	munmap(p, PG);
}
END_TEST

START_TEST(argv_bounds)
{
	static const char s[] = "a";
	uint64_t *ptrs = malloc((SHK_SUP_MAX_ARGS + 2) * sizeof(*ptrs));
	size_t big = SHK_SUP_MAX_ARGBYTES / 2 + 10;
	char *b1 = malloc(big), *b2 = malloc(big);
	struct shk_argv a = { 0 };

	ck_assert_ptr_nonnull(ptrs);
	ck_assert_ptr_nonnull(b1);
	ck_assert_ptr_nonnull(b2);
	/* SHK_SUP_MAX_ARGS strings pass, one more is E2BIG */
	for (size_t i = 0; i <= SHK_SUP_MAX_ARGS; i++)
		ptrs[i] = addr(s);
	ptrs[SHK_SUP_MAX_ARGS] = 0;
	win_init(_i);
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), 0);
	ck_assert_uint_eq(a.n, SHK_SUP_MAX_ARGS);
	ptrs[SHK_SUP_MAX_ARGS] = addr(s);
	ptrs[SHK_SUP_MAX_ARGS + 1] = 0;
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), -E2BIG);
	/* two strings of half the byte bound each: E2BIG; one of them passes */
	memset(b1, 'p', big - 1);
	b1[big - 1] = 0;
	memcpy(b2, b1, big);
	ptrs[0] = addr(b1);
	ptrs[1] = 0;
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), 0);
	ck_assert_uint_eq(a.n, 1);
	ck_assert_uint_eq(strlen(a.v[0]), big - 1);
	ptrs[1] = addr(b2);
	ptrs[2] = 0;
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), -E2BIG);
	shk_argv_free(&a);
	free(b1);
	free(b2);
	free(ptrs);
}
END_TEST

/* A child that sets buf to tag, then waits for the end of *ret_fd's pipe;
 * returned once buf is set. -1 on failure. */
static pid_t waiter(char *buf, const char *tag, int *ret_fd)
{
	int p[2], q[2];
	pid_t c;
	char b;

	if (pipe(p) < 0 || pipe(q) < 0 || (c = fork()) < 0)
		return -1;
	if (c == 0) {
		close(p[1]);
		close(q[0]);
		strcpy(buf, tag);
		_exit(write(q[1], "", 1) != 1 || read(p[0], &b, 1) < 0);
	}
	close(p[0]);
	close(q[1]);
	if (read(q[0], &b, 1) != 1)
		c = -1;
	close(q[0]);
	*ret_fd = p[1];
	return c;
}

static char victim[3 * SHK_MEMWIN_PAGES * PG] __attribute__((aligned(PG)));

START_TEST(mem_gone)
{
	pid_t c = fork();
	char buf[16];
	size_t len;

	ck_assert_int_ge(c, 0);
	if (c == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(c, NULL, 0), c);
	ck_assert_int_eq(shk_memwin_open(&w, c), -ESRCH);
	ck_assert_int_eq(w.fd, -1);
	/* open, then the process exits (a zombie: /proc/PID is still there) */
	int fd;
	c = waiter(victim, "child", &fd);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(shk_memwin_open(&w, c), 0);
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(victim), buf, sizeof(buf), &len), 0);
	ck_assert_str_eq(buf, "child");
	close(fd);
	ck_assert_int_eq(waitid(P_PID, (id_t)c, NULL, WEXITED | WNOWAIT), 0);
	/* beyond the window read above */
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(victim + 2 * SHK_MEMWIN_PAGES * PG), buf,
	                                     sizeof(buf), &len), -ESRCH);
	shk_memwin_close(&w);
	ck_assert_int_eq(waitpid(c, NULL, 0), c);
}
END_TEST

/* The next fork gets pid (in our own pid namespace: nobody else forks). */
static int next_pid(pid_t pid)
{
	char b[32];
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	int n = snprintf(b, sizeof(b), "%d", (int)pid - 1);
	bool ok = fd >= 0 && write(fd, b, (size_t)n) == n;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

#define FAIL() (fprintf(stderr, "test_memwin.c:%d\n", __LINE__), 1)

/* In the namespace's init: 0, or 1 (the line printed). A file opened for
 * one process reads nothing once it has exited, even with its pid reused
 * by a process whose memory holds other bytes at the same address. */
static int reuse_in_namespace(void)
{
	char buf[16];
	size_t len;
	pid_t c, n;
	int fd, fd2, r = 0;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return FAIL();
	c = waiter(victim, "first", &fd);
	if (c <= 0 || shk_memwin_open(&w, c) < 0 ||
	    shk_memwin_read_str(&w, addr(victim), buf, sizeof(buf), &len) < 0 ||
	    strcmp(buf, "first") != 0)
		return FAIL();
	close(fd);
	if (waitpid(c, NULL, 0) != c || next_pid(c) < 0)
		return FAIL();
	if ((n = waiter(victim, "second", &fd2)) != c)
		r = FAIL();
	/* another page: the windows must read it */
	else if (shk_memwin_read_str(&w, addr(victim + 2 * SHK_MEMWIN_PAGES * PG), buf, sizeof(buf), &len) != -ESRCH)
		r = FAIL();
	shk_memwin_close(&w);
	/* opened anew, the pid's file is the new process's */
	if (!r && (shk_memwin_open(&w, n) < 0 ||
	           shk_memwin_read_str(&w, addr(victim), buf, sizeof(buf), &len) < 0 ||
	           strcmp(buf, "second") != 0))
		r = FAIL();
	shk_memwin_close(&w);
	close(fd2);
	waitpid(n, NULL, 0);
	return r;
}

/* The namespaces are made in a child: a process whose pid namespace's
 * init has exited cannot fork again. */
static int in_namespace(void)
{
	pid_t init;
	int st;

	if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0 || (init = fork()) < 0)
		return 250;
	if (init == 0)
		_exit(reuse_in_namespace());
	if (waitpid(init, &st, 0) != init)
		return 251;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 252;
}

START_TEST(mem_pid_reused)
{
	pid_t outer = fork();
	int st;

	ck_assert_int_ge(outer, 0);
	if (outer == 0)
		_exit(in_namespace());
	ck_assert_int_eq(waitpid(outer, &st, 0), outer);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	              "failed (status %#x; the line is on stderr)", st);
}
END_TEST

static long minflt(void)
{
	struct rusage ru;

	ck_assert_int_eq(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_minflt;
}

/* A child's pages still shared copy-on-write with us (its parent): a
 * read-only pin copies each one (a fault counted on the reading thread),
 * a read through /proc/PID/mem copies none. */
START_TEST(mem_keeps_cow_shared)
{
	static char shared[2 * SHK_MEMWIN_PAGES * PG] __attribute__((aligned(PG)));
	char buf[16];
	size_t len;
	long f0, mem, vm;
	pid_t c;
	int fd;

	for (size_t i = 0; i < sizeof(shared); i += PG)
		snprintf(shared + i, 16, "page %zu", i / PG);
	/* the child writes only victim: shared stays shared */
	c = waiter(victim, "x", &fd);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(shk_memwin_open(&w, c), 0);
	/* our own copy's pages fault in once, before counting */
	memset(w.slot, 1, sizeof(w.slot));
	f0 = minflt();
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(shared), buf, sizeof(buf), &len), 0);
	mem = minflt() - f0;
	ck_assert_str_eq(buf, "page 0");
	shk_memwin_close(&w);
	shk_memwin_init(&w, c);
	f0 = minflt();
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(shared + SHK_MEMWIN_PAGES * PG), buf,
	                                     sizeof(buf), &len), 0);
	vm = minflt() - f0;
	ck_assert_str_eq(buf, "page 4");
	ck_assert_msg(mem == 0 && vm >= SHK_MEMWIN_PAGES,
	              "minor faults: /proc/PID/mem %ld, process_vm_readv %ld", mem, vm);
	close(fd);
	ck_assert_int_eq(waitpid(c, NULL, 0), c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("memwin");
	TCase *tc = tcase_create("memwin");

	tcase_add_loop_test(tc, str_ends_before_hole, 0, 2);
	tcase_add_loop_test(tc, str_bounds_and_window_crossing, 0, 2);
	tcase_add_loop_test(tc, argv_many_pages, 0, 2);
	tcase_add_loop_test(tc, argv_pointers_before_hole, 0, 2);
	tcase_add_loop_test(tc, argv_bounds, 0, 2);
	tcase_add_test(tc, mem_gone);
	tcase_add_test(tc, mem_keeps_cow_shared);
	if (geteuid() == 0)
		tcase_add_test(tc, mem_pid_reused);
	else
		printf("# not root: the reused pid (a pid namespace of its own) is not tried\n");
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
