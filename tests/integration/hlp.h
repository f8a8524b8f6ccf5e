/* SPDX-License-Identifier: MIT */
/*
 * Shared bits of the integration-test helper programs. These programs play
 * the untrusted agent: each one attacks one mechanism and prints what the
 * kernel answered (an errno name, "OK", or a counter line) so that the
 * scenario scripts can assert on it. They never decide pass/fail about the
 * supervisor themselves, except that a breach is also signalled by exit 1.
 */
#ifndef SHK_ITEST_HLP_H
#define SHK_ITEST_HLP_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#define HLP_USAGE 2
#define HLP_SETUP 3

static inline const char *hlp_errname(int e)
{
	const char *n;

	if (e == 0)
		return "OK";
	n = strerrorname_np(e);
	return n ? n : "E?";
}

__attribute__((noreturn, format(printf, 1, 2)))
static inline void hlp_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("helper: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(HLP_SETUP);
}

/* "1.2.3.4" or "::ffff:1.2.3.4" or "::1" plus a port into a sockaddr. */
static inline socklen_t hlp_sockaddr(const char *host, const char *port,
				     struct sockaddr_storage *ret_ss)
{
	char *end = NULL;
	unsigned long p = strtoul(port, &end, 10);

	if (!end || *end || p > 65535)
		hlp_die("bad port '%s'", port);
	memset(ret_ss, 0, sizeof(*ret_ss));
	if (strchr(host, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ret_ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((unsigned short)p);
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			hlp_die("bad IPv6 address '%s'", host);
		return sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ret_ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((unsigned short)p);
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			hlp_die("bad IPv4 address '%s'", host);
		return sizeof(*s4);
	}
}

/* Peer of a connected socket as "addr:port" (v4-mapped shown as v4). */
static inline const char *hlp_peer(int fd)
{
	static char buf[INET6_ADDRSTRLEN + 16];
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char a[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
		return "none";
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		port = ntohs(s4->sin_port);
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
			inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], a, sizeof(a));
		else
			inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		port = ntohs(s6->sin6_port);
	}
	snprintf(buf, sizeof(buf), "%s:%u", a, port);
	return buf;
}

#endif
