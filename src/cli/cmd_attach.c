/* SPDX-License-Identifier: MIT */
/*
 * `shackle attach --cgroup PATH --policy FILE [--audit LOG] [--key FILE]
 *                 [--session ID] [--exec] [--pin DIR] [--duration SECONDS]
 *                 [--fsync none|checkpoint|entry] [--control SOCKET]
 *                 [--non-interactive] [--resolve-every SECONDS]
 *                 [--gateway ADDR:PORT] [--sdk-socket PATH]`
 * `shackle detach --pin DIR`
 *
 * Options and what the operator sees; the engine is src/attach (attach.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shackle/ebpf.h>

#include "attach/attach.h"
#include "cli/commands.h"
#include "cli/display.h"

#ifndef SHACKLE_VERSION
#define SHACKLE_VERSION "unknown"
#endif

static const struct shk_usage attach_usage = { "attach",
	"usage: shackle attach --cgroup PATH --policy FILE [--audit LOG] [--key FILE]\n"
	"                      [--session ID] [--exec] [--pin DIR] [--duration SECONDS]\n"
	"                      [--fsync none|checkpoint|entry] [--control SOCKET]\n"
	"                      [--non-interactive] [--resolve-every SECONDS]\n"
	"                      [--gateway ADDR:PORT] [--sdk-socket PATH]\n\n"
	"Enforces the policy on every process of a cgroup v2 with eBPF programs and\n"
	"records each decision in a signed audit log, until Ctrl-C or --duration.\n"
	"Without --audit/--key the log and its key go where shackle-run puts them.\n"
	"--exec also judges execs (rules with literal paths only); --pin keeps the\n"
	"programs attached after exit (shackle detach --pin DIR removes them);\n"
	"--resolve-every re-resolves host rules; --control/--non-interactive as for\n"
	"shackle-run. A policy with \"models\" starts the model gateway on\n"
	"--gateway (default 127.0.0.1, any free port; the URL and key to give the\n"
	"workload are printed); --sdk-socket serves the SDK socket at PATH. Their\n"
	"calls are judged in the same session and log. docs/ebpf.md is the manual.\n" };

static const struct shk_usage detach_usage = { "detach",
	"usage: shackle detach --pin DIR\n\n"
	"Removes the eBPF programs and maps that `shackle attach --pin DIR` left\n"
	"pinned under DIR, and DIR. Nothing is removed unless DIR is on bpffs and\n"
	"holds only what attach pinned.\n" };

/* ADDR:PORT, ADDR or :PORT: one IPv4 address the workload can reach (the
 * kernel rule that lets it through names that address only; 0.0.0.0 would
 * name none), a port 0-65535 (0: any free one). */
static int parse_gateway(struct shk_attach_options *a, const char *arg)
{
	const char *colon = strrchr(arg, ':');
	char host[INET_ADDRSTRLEN] = "127.0.0.1", *end;
	struct in_addr in;
	unsigned long port = 0;
	size_t hl = colon ? (size_t)(colon - arg) : strlen(arg);

	if (colon) {
		errno = 0;
		port = strtoul(colon + 1, &end, 10);
	}
	if (hl >= sizeof(host) || (colon && (!colon[1] || colon[1] == '-' || errno || *end || port > 65535))) {
		shk_cli_error("attach", "--gateway: '%s' is not ADDR:PORT (an IPv4 address, a port 0-65535)", arg);
		return -EINVAL;
	}
	if (hl) {
		memcpy(host, arg, hl);
		host[hl] = 0;
	}
	if (inet_pton(AF_INET, host, &in) != 1 || in.s_addr == htonl(INADDR_ANY)) {
		shk_cli_error("attach", "--gateway: '%s' is not an IPv4 address of this host to listen on "
		              "(0.0.0.0 is refused: the workload's exemption names one address)", host);
		return -EINVAL;
	}
	a->gateway_addr = in.s_addr;
	a->gateway_port = (uint16_t)port;
	a->gateway_set = true;
	return 0;
}

static int parse(struct shk_attach_options *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cgroup", required_argument, NULL, 'c' }, { "policy", required_argument, NULL, 'p' },
		{ "audit", required_argument, NULL, 'a' },  { "key", required_argument, NULL, 'k' },
		{ "session", required_argument, NULL, 's' }, { "exec", no_argument, NULL, 'x' },
		{ "pin", required_argument, NULL, 'P' },    { "duration", required_argument, NULL, 'd' },
		{ "fsync", required_argument, NULL, 'f' }, { "help", no_argument, NULL, 'h' },
		{ "control", required_argument, NULL, 'C' }, { "non-interactive", no_argument, NULL, 'n' },
		{ "resolve-every", required_argument, NULL, 'r' },
		{ "gateway", required_argument, NULL, 'g' }, { "sdk-socket", required_argument, NULL, 'S' },
		{ 0 },
	};
	char *end;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': a->cgroup = optarg; break;
		case 'p': a->policy_path = optarg; break;
		case 'a': a->audit_path = optarg; break;
		case 'k': a->key_path = optarg; break;
		case 's': a->session_id = optarg; break;
		case 'x': a->exec = true; break;
		case 'P': a->pin = optarg; break;
		case 'C': a->control = optarg; break;
		case 'n': a->non_interactive = true; break;
		case 'S': a->sdk_socket = optarg; break;
		case 'g':
			if (parse_gateway(a, optarg) < 0)
				return -EINVAL;
			break;
		case 'd':
		case 'r':
			errno = 0;
			*(c == 'd' ? &a->duration_s : &a->resolve_s) = strtol(optarg, &end, 10);
			if (errno || *end || (c == 'd' ? a->duration_s : a->resolve_s) <= 0) {
				shk_cli_error("attach", "--%s: '%s' is not a positive number of seconds",
					      c == 'd' ? "duration" : "resolve-every", optarg);
				return -EINVAL;
			}
			break;
		case 'f':
			if (shk_fsync_policy_parse(optarg, &a->fsync) < 0) {
				shk_cli_error("attach", "--fsync: '%s' is not none, checkpoint or entry",
					      optarg);
				return -EINVAL;
			}
			break;
		case 'h': return 1;
		default: return -EINVAL;
		}
	}
	if (optind != argc || !a->cgroup || !a->policy_path) {
		shk_cli_error("attach", "--cgroup and --policy are required");
		return -EINVAL;
	}
	return 0;
}

static void say(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "shackle attach: %s\n", line);
}

/* A held call and its outcome, on attach's stderr (docs/hitl.md). */
static void held_notice(void *ctx, const shk_val *event)
{
	(void)ctx;
	shk_cli_held_notice(stderr, "shackle attach", event, true);
}

int shk_cmd_attach(int argc, char **argv)
{
	struct shk_attach_options o = { .version = SHACKLE_VERSION,
	                                .io = { .say = say, .notice = held_notice, .text = shk_cli_text } };
	int r = parse(&o, argc, argv);

	if (r)
		return r > 0 ? shk_cli_help(&attach_usage) : shk_cli_synopsis(&attach_usage);
	return shk_attach_run(&o);
}

/* Why detach left dir alone, for a person (r from shk_ebpf_unpin). */
static const char *unpin_refusal(int r, const char *entry)
{
	static char buf[512];

	switch (r) {
	case -ENOTDIR:
		return "not a directory (a symbolic link is not followed)";
	case -EMEDIUMTYPE:
		return "not on a BPF file system (bpffs): shackle attach --pin never made it";
	case -ENODATA:
		return "holds no pins of shackle attach";
	case -EEXIST: {
		char name[300];

		snprintf(buf, sizeof(buf), "holds %s, which shackle attach did not pin",
			 shk_cli_text(entry, name, sizeof(name)));
		return buf;
	}
	default:
		return strerror(-r);
	}
}

int shk_cmd_detach(int argc, char **argv)
{
	char entry[256], dir[600];
	int r;

	if (argc >= 2 && shk_cli_is_help(argv[1]))
		return shk_cli_help(&detach_usage);
	if (argc != 3 || strcmp(argv[1], "--pin") != 0)
		return shk_cli_synopsis(&detach_usage);
	r = shk_ebpf_unpin(argv[2], entry, sizeof(entry));
	if (r == -ENOTDIR || r == -EMEDIUMTYPE || r == -ENODATA || r == -EEXIST) {
		shk_cli_error("detach", "%s: %s; nothing was removed",
			      shk_cli_text(argv[2], dir, sizeof(dir)), unpin_refusal(r, entry));
		return 1;
	}
	if (r < 0) {
		shk_cli_error("detach", "%s: %s", shk_cli_text(argv[2], dir, sizeof(dir)), unpin_refusal(r, entry));
		return 1;
	}
	return 0;
}
