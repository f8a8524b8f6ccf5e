/* SPDX-License-Identifier: MIT */
/*
 * shk-escape: attempts to blind, bypass or outlive the supervisor. Each mode
 * prints "<ERRNAME>" (or "OK ...") for what the kernel answered; operations
 * that might get the process killed by the filter run in a forked child, and
 * then "killed:SIGNAME" is printed instead.
 *
 *   io_uring                     io_uring_setup()
 *   ptrace-parent                PTRACE_ATTACH and PTRACE_SEIZE on getppid()
 *   ptrace-pid PIDFILE           PTRACE_ATTACH on the pid written in PIDFILE
 *   seccomp-listener             seccomp(SET_MODE_FILTER, NEW_LISTENER)
 *   bpf | perf | vm-write        bpf(PROG_LOAD), perf_event_open,
 *                                process_vm_writev into the parent
 *   int80-connect HOST PORT      i386 connect (nr 362) via int $0x80
 *   int80-socketcall HOST PORT   i386 socketcall(SYS_CONNECT) via int $0x80
 *   int80-execve BINARY MARK     i386 execve (nr 11) via int $0x80
 *   x32-connect HOST PORT        x32 ABI connect (nr | 0x40000000)
 *   raw NAMEHOST HDRHOST PORT    SOCK_RAW/IPPROTO_RAW UDP datagram: the
 *                                sockaddr names NAMEHOST, the IP header
 *                                HDRHOST (where it really goes)
 *   packet HDRHOST PORT          AF_PACKET datagram on lo carrying a UDP
 *                                packet for HDRHOST
 *   kill-supervisor PIDFILE FHOST FPORT MARK LOG
 *                                SIGKILL the pid in PIDFILE, then keep trying
 *                                a forbidden connect and a forbidden exec
 *                                (touch MARK) for 3 s, logging to LOG
 *   persist FHOST FPORT MARK LOG SECONDS
 *                                the agent and a setsid double-forked
 *                                grandchild keep trying a forbidden connect
 *                                and exec for SECONDS, logging each answer
 *   doublefork PIDFILE RESULT FHOST FPORT
 *                                setsid + double fork; the grandchild writes
 *                                its pid, tries the forbidden connect, writes
 *                                the answer to RESULT and sleeps 30 s; the
 *                                caller returns once RESULT exists
 */
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <netpacket/packet.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hlp.h"
#include "shk-escape-tree.h"

#define I386_EXECVE 11
#define I386_SOCKETCALL 102
#define I386_CONNECT 362
#define SYS_CONNECT_CALL 3 /* socketcall() multiplexer index */
#define X32_BIT 0x40000000L

static void report(long rc)
{
	printf("%s\n", rc < 0 ? hlp_errname(errno) : "OK");
}

/* Run fn in a child so that a SIGSYS kill is observable, print its fate. */
static int in_child(void (*fn)(char **), char **argv)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		hlp_die("fork: %s", hlp_errname(errno));
	if (pid == 0) {
		fn(argv);
		_exit(0);
	}
	if (waitpid(pid, &st, 0) < 0)
		hlp_die("waitpid: %s", hlp_errname(errno));
	if (WIFSIGNALED(st))
		printf("killed:%s\n", sigabbrev_np(WTERMSIG(st)) ?: "?");
	return 0;
}

static long int80(long nr, long a, long b, long c)
{
	long ret;

	/* The compat entry zeroes r8-r11 for 64-bit callers. */
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(nr), "b"(a), "c"(b), "d"(c)
			 : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

/* i386 pointers must fit in 32 bits. */
static void *low_mem(void)
{
	void *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
		       -1, 0);

	if (p == MAP_FAILED)
		hlp_die("mmap(MAP_32BIT): %s", hlp_errname(errno));
	return p;
}

static void print_neg(long r)
{
	printf("%s\n", r < 0 ? hlp_errname((int)-r) : "OK");
}

static void int80_connect(char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len = hlp_sockaddr(argv[0], argv[1], &ss);
	char *mem = low_mem();
	int fd = socket(ss.ss_family, SOCK_STREAM, 0);
	uint32_t *args = (uint32_t *)(mem + 1024);

	memcpy(mem, &ss, len);
	/* argv[-1] is the mode name (in_child passes argv + 2). */
	if (!strcmp(argv[-1], "int80-socketcall")) {
		args[0] = (uint32_t)fd;
		args[1] = (uint32_t)(uintptr_t)mem;
		args[2] = len;
		print_neg(int80(I386_SOCKETCALL, SYS_CONNECT_CALL, (long)(uintptr_t)args, 0));
	} else {
		print_neg(int80(I386_CONNECT, fd, (long)(uintptr_t)mem, len));
	}
}

static void int80_execve(char **argv)
{
	char *mem = low_mem();
	uint32_t *av = (uint32_t *)(mem + 8192);
	size_t n0 = strlen(argv[0]) + 1, n1 = strlen(argv[1]) + 1;

	if (n0 + n1 > 8192)
		hlp_die("arguments too long");
	memcpy(mem, argv[0], n0);
	memcpy(mem + n0, argv[1], n1);
	av[0] = (uint32_t)(uintptr_t)mem;
	av[1] = (uint32_t)(uintptr_t)(mem + n0);
	av[2] = 0;
	av[3] = 0; /* empty envp */
	print_neg(int80(I386_EXECVE, (long)(uintptr_t)mem, (long)(uintptr_t)av,
			(long)(uintptr_t)(av + 3)));
}

static void x32_connect(char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len = hlp_sockaddr(argv[0], argv[1], &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM, 0);

	report(syscall(X32_BIT | SYS_connect, fd, &ss, len));
}

static uint16_t ip_csum(const void *p, size_t n)
{
	const uint16_t *w = p;
	uint32_t s = 0;

	for (; n > 1; n -= 2)
		s += *w++;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* IPv4 + UDP (checksum 0 = none) + payload, for HDRHOST:PORT. */
static size_t build_udp(unsigned char *pkt, const char *host, const char *port)
{
	struct sockaddr_storage ss;
	struct iphdr *ip = (struct iphdr *)pkt;
	struct udphdr *udp = (struct udphdr *)(pkt + sizeof(*ip));
	static const char data[] = "shk-raw";
	size_t len = sizeof(*ip) + sizeof(*udp) + sizeof(data);

	hlp_sockaddr(host, port, &ss);
	memset(pkt, 0, len);
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons((uint16_t)len);
	ip->saddr = htonl(INADDR_LOOPBACK);
	ip->daddr = ((struct sockaddr_in *)&ss)->sin_addr.s_addr;
	ip->check = ip_csum(ip, sizeof(*ip));
	udp->source = htons(40000);
	udp->dest = ((struct sockaddr_in *)&ss)->sin_port;
	udp->len = htons((uint16_t)(sizeof(*udp) + sizeof(data)));
	memcpy(pkt + sizeof(*ip) + sizeof(*udp), data, sizeof(data));
	return len;
}

static int do_raw(char **argv)
{
	unsigned char pkt[256];
	struct sockaddr_storage name;
	socklen_t nlen = hlp_sockaddr(argv[0], argv[2], &name);
	size_t len = build_udp(pkt, argv[1], argv[2]);
	int fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);

	if (fd < 0) {
		printf("%s stage=socket\n", hlp_errname(errno));
		return 0;
	}
	report(sendto(fd, pkt, len, 0, (struct sockaddr *)&name, nlen));
	return 0;
}

static int do_packet(char **argv)
{
	unsigned char pkt[256];
	size_t len = build_udp(pkt, argv[0], argv[1]);
	struct sockaddr_ll ll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP),
				  .sll_ifindex = (int)if_nametoindex("lo"), .sll_halen = ETH_ALEN };
	int fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));

	if (fd < 0) {
		printf("%s stage=socket\n", hlp_errname(errno));
		return 0;
	}
	report(sendto(fd, pkt, len, 0, (struct sockaddr *)&ll, sizeof(ll)));
	return 0;
}

static int do_io_uring(void)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	report(syscall(SYS_io_uring_setup, 8, &p));
	return 0;
}

static void ptrace_pid(pid_t pid)
{
	long r = ptrace(PTRACE_ATTACH, pid, NULL, NULL);

	printf("attach=%s ", r < 0 ? hlp_errname(errno) : "OK");
	if (r == 0) {
		/* leave the victim as we found it: wait for the attach stop */
		waitpid(pid, NULL, __WALL);
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		kill(pid, SIGCONT);
	}
	r = ptrace(PTRACE_SEIZE, pid, NULL, NULL);
	printf("seize=%s\n", r < 0 ? hlp_errname(errno) : "OK");
	if (r == 0)
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
}

static pid_t read_pidfile(const char *path)
{
	for (int i = 0; i < 100; i++) {
		FILE *f = fopen(path, "r");
		long pid = 0;

		if (f) {
			int ok = fscanf(f, "%ld", &pid) == 1;

			fclose(f);
			if (ok && pid > 1)
				return (pid_t)pid;
		}
		usleep(50000);
	}
	hlp_die("no pid in %s", path);
}

static int do_seccomp_listener(void)
{
	/* Notify only on a syscall this program never makes afterwards. */
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = f };

	report(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
	return 0;
}

static int do_bpf(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insn_cnt = 2;
	a.insns = (uint64_t)(uintptr_t)insns;
	a.license = (uint64_t)(uintptr_t)"GPL";
	report(syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a)));
	return 0;
}

static int do_perf(void)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	report(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
	return 0;
}

static int do_vm_write(void)
{
	static char local[8] = "shk", target[8];
	struct iovec l = { local, sizeof(local) }, r = { target, sizeof(target) };

	/* The address is ours, not the parent's: any answer but a refusal
	 * (EFAULT, OK) means the syscall reached the kernel. */
	report(syscall(SYS_process_vm_writev, getppid(), &l, 1, &r, 1, 0));
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(m, "io_uring") && argc == 2)
		return do_io_uring();
	if (!strcmp(m, "ptrace-parent") && argc == 2)
		return ptrace_pid(getppid()), 0;
	if (!strcmp(m, "ptrace-pid") && argc == 3)
		return ptrace_pid(read_pidfile(argv[2])), 0;
	if (!strcmp(m, "seccomp-listener") && argc == 2)
		return do_seccomp_listener();
	if (!strcmp(m, "bpf") && argc == 2)
		return do_bpf();
	if (!strcmp(m, "perf") && argc == 2)
		return do_perf();
	if (!strcmp(m, "vm-write") && argc == 2)
		return do_vm_write();
	if ((!strcmp(m, "int80-connect") || !strcmp(m, "int80-socketcall")) && argc == 4)
		return in_child(int80_connect, argv + 2);
	if (!strcmp(m, "int80-execve") && argc == 4)
		return in_child(int80_execve, argv + 2);
	if (!strcmp(m, "x32-connect") && argc == 4)
		return in_child(x32_connect, argv + 2);
	if (!strcmp(m, "raw") && argc == 5)
		return do_raw(argv + 2);
	if (!strcmp(m, "packet") && argc == 4)
		return do_packet(argv + 2);
	if (!strcmp(m, "kill-supervisor") && argc == 7)
		return do_kill_supervisor(argv + 2);
	if (!strcmp(m, "persist") && argc == 7)
		return do_persist(argv + 2);
	if (!strcmp(m, "doublefork") && argc == 6)
		return do_doublefork(argv + 2);
	fprintf(stderr, "shk-escape: bad mode or arguments (see the comment at the top of "
			"tests/integration/shk-escape.c)\n");
	return HLP_USAGE;
}
