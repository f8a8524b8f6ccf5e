/* SPDX-License-Identifier: MIT */
/*
 * shk-netprobe: one network operation per run, the way an agent would do it,
 * printing the errno name the agent saw ("OK", "EPERM", ...) as the first
 * word on stdout, followed by details (peer=ADDR:PORT after a connect).
 *
 *   connect HOST PORT [--nonblock]   TCP connect (HOST may be ::ffff:a.b.c.d)
 *   udp HOST PORT                    UDP sendto with a destination
 *   udp-connect HOST PORT            UDP connect, then send() without address
 *   sendmsg HOST PORT                UDP sendmsg with msg_name
 *   sendmmsg HOST PORT HOST2 PORT2   two datagrams in one sendmmsg, each with
 *                                    its own msg_name (the second one is the
 *                                    one a lazy check would miss)
 *   fastopen HOST PORT               TCP sendto(MSG_FASTOPEN): connect+data
 *   tcp-send HOST PORT               connect, then send() data (fast path)
 *   unix PATH | unix-abstract NAME   AF_UNIX stream connect
 *   unix-dgram PATH                  AF_UNIX datagram sendto
 *   bind HOST PORT | listen HOST PORT
 *
 * Exit 0 when the operation ran (whatever the answer), 2 on bad usage,
 * 3 when setting up (socket(), ...) failed for an unrelated reason.
 */
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include "hlp.h"

static const char payload[] = "shk-probe";

static int tcp_socket(int family, int nonblock)
{
	int fd = socket(family, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0);

	if (fd < 0)
		hlp_die("socket: %s", hlp_errname(errno));
	return fd;
}

/* Wait for a non-blocking connect and return its final errno. */
static int finish_nonblock(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int err = 0;
	socklen_t len = sizeof(err);

	if (poll(&p, 1, 5000) != 1)
		return ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return errno;
	return err;
}

static int do_connect(const char *host, const char *port, int nonblock)
{
	struct sockaddr_storage ss;
	socklen_t len = hlp_sockaddr(host, port, &ss);
	int fd = tcp_socket(ss.ss_family, nonblock);
	int e = connect(fd, (struct sockaddr *)&ss, len) < 0 ? errno : 0;

	if (nonblock && e == EINPROGRESS) {
		int fin = finish_nonblock(fd);

		printf("%s first=EINPROGRESS peer=%s\n", hlp_errname(fin),
		       fin ? "none" : hlp_peer(fd));
	} else {
		printf("%s peer=%s\n", hlp_errname(e), e ? "none" : hlp_peer(fd));
	}
	close(fd);
	return 0;
}

static int udp_socket(int family)
{
	int fd = socket(family, SOCK_DGRAM, 0);

	if (fd < 0)
		hlp_die("socket: %s", hlp_errname(errno));
	return fd;
}

static int do_udp(const char *mode, const char *host, const char *port)
{
	struct sockaddr_storage ss;
	socklen_t len = hlp_sockaddr(host, port, &ss);
	int fd = udp_socket(ss.ss_family);
	ssize_t n;

	if (!strcmp(mode, "udp")) {
		n = sendto(fd, payload, sizeof(payload), 0, (struct sockaddr *)&ss, len);
	} else if (!strcmp(mode, "udp-connect")) {
		if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
			printf("%s stage=connect\n", hlp_errname(errno));
			return 0;
		}
		n = send(fd, payload, sizeof(payload), 0);
	} else {
		struct iovec iov = { .iov_base = (void *)payload, .iov_len = sizeof(payload) };
		struct msghdr mh = { .msg_name = &ss, .msg_namelen = len,
				     .msg_iov = &iov, .msg_iovlen = 1 };

		n = sendmsg(fd, &mh, 0);
	}
	printf("%s sent=%zd\n", hlp_errname(n < 0 ? errno : 0), n);
	close(fd);
	return 0;
}

static int do_sendmmsg(char **argv)
{
	struct sockaddr_storage ss[2];
	struct iovec iov = { .iov_base = (void *)payload, .iov_len = sizeof(payload) };
	struct mmsghdr mm[2];
	int fd, n;

	memset(mm, 0, sizeof(mm));
	for (int i = 0; i < 2; i++) {
		mm[i].msg_hdr.msg_namelen = hlp_sockaddr(argv[2 * i], argv[2 * i + 1], &ss[i]);
		mm[i].msg_hdr.msg_name = &ss[i];
		mm[i].msg_hdr.msg_iov = &iov;
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	if (ss[0].ss_family != ss[1].ss_family)
		hlp_die("sendmmsg: both destinations must have the same family");
	fd = udp_socket(ss[0].ss_family);
	n = sendmmsg(fd, mm, 2, 0);
	printf("%s sent_msgs=%d\n", hlp_errname(n < 0 ? errno : 0), n);
	close(fd);
	return 0;
}

static int do_fastopen(const char *host, const char *port)
{
	struct sockaddr_storage ss;
	socklen_t len = hlp_sockaddr(host, port, &ss);
	int fd = tcp_socket(ss.ss_family, 0);
	ssize_t n = sendto(fd, payload, sizeof(payload), MSG_FASTOPEN,
			   (struct sockaddr *)&ss, len);

	printf("%s sent=%zd peer=%s\n", hlp_errname(n < 0 ? errno : 0), n,
	       n < 0 ? "none" : hlp_peer(fd));
	close(fd);
	return 0;
}

static int do_tcp_send(const char *host, const char *port)
{
	struct sockaddr_storage ss;
	socklen_t len = hlp_sockaddr(host, port, &ss);
	int fd = tcp_socket(ss.ss_family, 0);
	ssize_t n;

	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		printf("%s stage=connect\n", hlp_errname(errno));
		return 0;
	}
	n = send(fd, payload, sizeof(payload), 0);
	printf("%s sent=%zd\n", hlp_errname(n < 0 ? errno : 0), n);
	close(fd);
	return 0;
}

static int do_unix(const char *mode, const char *name)
{
	struct sockaddr_un su = { .sun_family = AF_UNIX };
	int dgram = !strcmp(mode, "unix-dgram");
	int abstract = !strcmp(mode, "unix-abstract");
	size_t n = strlen(name);
	socklen_t len;
	int fd, e;

	if (n + 1 >= sizeof(su.sun_path))
		hlp_die("unix name too long");
	memcpy(su.sun_path + abstract, name, n);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + abstract + n + !abstract);
	fd = socket(AF_UNIX, dgram ? SOCK_DGRAM : SOCK_STREAM, 0);
	if (fd < 0)
		hlp_die("socket: %s", hlp_errname(errno));
	if (dgram)
		e = sendto(fd, payload, sizeof(payload), 0, (struct sockaddr *)&su, len) < 0 ? errno : 0;
	else
		e = connect(fd, (struct sockaddr *)&su, len) < 0 ? errno : 0;
	printf("%s\n", hlp_errname(e));
	close(fd);
	return 0;
}

static int do_bind(const char *mode, const char *host, const char *port)
{
	struct sockaddr_storage ss;
	socklen_t len = hlp_sockaddr(host, port, &ss);
	int fd = tcp_socket(ss.ss_family, 0);
	int one = 1;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
		printf("%s stage=bind\n", hlp_errname(errno));
		return 0;
	}
	if (!strcmp(mode, "listen") && listen(fd, 4) < 0) {
		printf("%s stage=listen\n", hlp_errname(errno));
		return 0;
	}
	printf("OK\n");
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(m, "connect") && (argc == 4 || argc == 5))
		return do_connect(argv[2], argv[3], argc == 5 && !strcmp(argv[4], "--nonblock"));
	if ((!strcmp(m, "udp") || !strcmp(m, "udp-connect") || !strcmp(m, "sendmsg")) && argc == 4)
		return do_udp(m, argv[2], argv[3]);
	if (!strcmp(m, "sendmmsg") && argc == 6)
		return do_sendmmsg(argv + 2);
	if (!strcmp(m, "fastopen") && argc == 4)
		return do_fastopen(argv[2], argv[3]);
	if (!strcmp(m, "tcp-send") && argc == 4)
		return do_tcp_send(argv[2], argv[3]);
	if ((!strcmp(m, "unix") || !strcmp(m, "unix-abstract") || !strcmp(m, "unix-dgram")) && argc == 3)
		return do_unix(m, argv[2]);
	if ((!strcmp(m, "bind") || !strcmp(m, "listen")) && argc == 4)
		return do_bind(m, argv[2], argv[3]);
	fprintf(stderr, "usage: shk-netprobe connect|udp|udp-connect|sendmsg|fastopen|tcp-send|"
			"bind|listen HOST PORT [--nonblock]\n"
			"       shk-netprobe sendmmsg HOST PORT HOST2 PORT2\n"
			"       shk-netprobe unix|unix-abstract|unix-dgram NAME\n");
	return HLP_USAGE;
}
