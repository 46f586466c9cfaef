// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The bottom layer of libnxquota: the calling thread's error message
 * (nxq__err(), nxq_errmsg()), the fork generation that marks a context
 * as the parent's in a child (nxq__forked(), nxq__fork_err()), the
 * monotonic clock, and a refused charge's fields (nxq__refusal_from()).
 * Every other file may call these.
 *
 * Layer 0: calls nothing else in lib/ (scripts/call-graph.sh checks).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static __thread char errbuf[256];

int nxq__err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	return err;
}

unsigned int nxq__fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_child(void)
{
	__atomic_add_fetch(&nxq__fork_gen, 1, __ATOMIC_RELAXED);
}

static void fork_register(void)
{
	pthread_atfork(NULL, NULL, fork_child);
}

void nxq__fork_register(void)
{
	pthread_once(&fork_once, fork_register);
}

int nxq__fork_err(void)
{
	return nxq__err(-ECHILD, "nxquota: this context belongs to the parent process: after "
			"fork() a child opens its own (see FORK in libnxquota(7)/nxq_ctx_open(3))");
}

NXQ_API const char *nxq_errmsg(void)
{
	return errbuf[0] ? errbuf : "no error";
}

uint64_t nxq__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * A refused charge's version-1 fields into *why (the path's NUL is not
 * taken on trust: an authority's bytes are checked, as from a socket).
 */
void nxq__refusal_from(struct nxq_refusal *why, const struct nxq_charge *c)
{
	why->reason = c->refused_reason;
	why->level = c->refused_level;
	why->id = c->refused_id;
	why->limit = c->refused_limit;
	why->min = c->refused_min;
	why->usage = c->refused_usage;
	if (c->path_len >= sizeof(why->path) || why->path[c->path_len] ||
	    strlen(why->path) != c->path_len)
		why->path[0] = 0;
}
