/* SPDX-License-Identifier: MIT */
/*
 * Host rules: resolved at start, then refreshed on a thread of their own so
 * that DNS never blocks the loop; the loop installs fresh addresses from its
 * tick (the only thread that matches).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "judge/pipeline.h"

static size_t resolve_one(const char *host, shk_net_addr *out, size_t max)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	size_t n = 0;

	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return 0;
	for (struct addrinfo *a = res; a && n < max; a = a->ai_next) {
		memset(&out[n], 0, sizeof(out[n]));
		if (a->ai_family == AF_INET) {
			out[n].family = SHK_NET_INET4;
			memcpy(out[n].addr, &((struct sockaddr_in *)a->ai_addr)->sin_addr, 4);
		} else if (a->ai_family == AF_INET6) {
			out[n].family = SHK_NET_INET6;
			memcpy(out[n].addr, &((struct sockaddr_in6 *)a->ai_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		n++;
	}
	freeaddrinfo(res);
	return n;
}

int shk_pipeline_resolve_hosts(struct shk_pipeline *p)
{
	size_t nrules = shk_policy_net_rule_count(p->policy);
	int unresolved = 0;

	for (size_t i = 0; i < nrules; i++) {
		shk_net_rule_info info;
		shk_net_addr addrs[32];
		size_t n;

		if (shk_policy_net_rule(p->policy, i, &info) < 0 || info.selector != SHK_NET_SEL_HOST)
			continue;
		n = resolve_one(info.host, addrs, 32);
		if (n == 0)
			unresolved++;
		/* a failed refresh clears the rule: allow-by-host fails closed */
		shk_policy_set_host_addrs(p->policy, i, addrs, n);
	}
	return unresolved;
}

/* ---- background resolution ------------------------------------------------ */

#define RESOLVE_MAX 32

struct shk_resolver {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop, ready;
	int64_t interval_ns;
	size_t n;
	struct {
		size_t rule;
		char *host;
		shk_net_addr addrs[RESOLVE_MAX];
		size_t naddrs;
	} *r;
};

static void *resolver_main(void *arg)
{
	struct shk_resolver *rs = arg;
	struct timespec ts;

	pthread_mutex_lock(&rs->mu);
	while (!rs->stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += rs->interval_ns / 1000000000LL;
		while (!rs->stop && pthread_cond_timedwait(&rs->cv, &rs->mu, &ts) != ETIMEDOUT)
			;
		if (rs->stop)
			break;
		pthread_mutex_unlock(&rs->mu);
		for (size_t i = 0; i < rs->n; i++) {
			shk_net_addr a[RESOLVE_MAX];
			size_t k = resolve_one(rs->r[i].host, a, RESOLVE_MAX);
			pthread_mutex_lock(&rs->mu);
			memcpy(rs->r[i].addrs, a, sizeof(a));
			rs->r[i].naddrs = k;
			pthread_mutex_unlock(&rs->mu);
		}
		pthread_mutex_lock(&rs->mu);
		rs->ready = true;
	}
	pthread_mutex_unlock(&rs->mu);
	/* Stopped: the loop has detached us and forgotten rs, which is ours now. */
	for (size_t i = 0; i < rs->n; i++)
		free(rs->r[i].host);
	free(rs->r);
	pthread_mutex_destroy(&rs->mu);
	pthread_cond_destroy(&rs->cv);
	free(rs);
	return NULL;
}

int shk_pipeline_resolver_start(struct shk_pipeline *p, int64_t interval_ns)
{
	size_t nrules = shk_policy_net_rule_count(p->policy);
	struct shk_resolver *rs = calloc(1, sizeof(*rs));
	sigset_t all, old;
	int r;

	if (!rs || !(rs->r = calloc(nrules ? nrules : 1, sizeof(*rs->r)))) {
		free(rs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nrules; i++) {
		shk_net_rule_info info;
		if (shk_policy_net_rule(p->policy, i, &info) < 0 || info.selector != SHK_NET_SEL_HOST)
			continue;
		rs->r[rs->n].rule = i;
		if (!(rs->r[rs->n].host = strdup(info.host))) {
			for (size_t j = 0; j < rs->n; j++)
				free(rs->r[j].host);
			free(rs->r);
			free(rs);
			return -ENOMEM;
		}
		rs->n++;
	}
	rs->interval_ns = interval_ns;
	pthread_mutex_init(&rs->mu, NULL);
	pthread_cond_init(&rs->cv, NULL);
	p->resolver = rs;
	if (rs->n == 0)
		return 0; /* nothing to refresh: no thread */
	/* born with every signal blocked: forwarded signals belong to the loop */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&rs->thread, NULL, resolver_main, rs);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		for (size_t i = 0; i < rs->n; i++)
			free(rs->r[i].host);
		rs->n = 0;
		return -r;
	}
	return 0;
}

void shk_pipeline_resolver_stop(struct shk_pipeline *p)
{
	struct shk_resolver *rs = p->resolver;

	if (!rs)
		return;
	if (rs->n) {
		/* Read before unlocking: once stopped, the thread frees rs. */
		pthread_t thread = rs->thread;

		pthread_mutex_lock(&rs->mu);
		rs->stop = true;
		pthread_cond_broadcast(&rs->cv);
		pthread_mutex_unlock(&rs->mu);
		/* a getaddrinfo in progress cannot be interrupted: let it be */
		pthread_detach(thread);
	} else {
		free(rs->r);
		pthread_mutex_destroy(&rs->mu);
		pthread_cond_destroy(&rs->cv);
		free(rs);
	}
	p->resolver = NULL;
}

/* On the loop thread (the only one that matches): install fresh results. */
void shk_pipeline_resolver_install(struct shk_pipeline *p)
{
	struct shk_resolver *rs = p->resolver;

	if (!rs || !rs->n || pthread_mutex_trylock(&rs->mu) != 0)
		return;
	if (rs->ready) {
		for (size_t i = 0; i < rs->n; i++)
			shk_policy_set_host_addrs(p->policy, rs->r[i].rule, rs->r[i].addrs, rs->r[i].naddrs);
		rs->ready = false;
	}
	pthread_mutex_unlock(&rs->mu);
}
