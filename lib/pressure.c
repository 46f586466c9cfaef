// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Pressure: a context's side of the module's tickets.
 *
 * A reactor: it knows fds and callbacks (struct nxq_pclient, internal.h),
 * not arenas.  Each arena's ledger (ledger.c) registers a client for its
 * holder's eventfd; this file never calls up into it except through the
 * client's handle() and report().
 *
 * Objects and lifetimes:
 *  - ctx->clist: the clients attached to the context; attached at arena
 *    creation, detached at destroy, both under ctx->plock.
 *  - ctx->epfd: an epoll fd over their fds (data.ptr = the client); it
 *    is what nxq_ctx_pressure_fd() returns, readable when some client's
 *    eventfd was signalled.  Clients are added and removed under plock, so
 *    an event the handler reads always names an attached client.
 *  - the thread (unless NXQ_CTX_NO_THREAD): polls epfd and ctx->stopfd,
 *    with the report interval as timeout; started by nxq__pressure_init(),
 *    stopped and joined by nxq__pressure_fini() (nxq_ctx_close()).
 *
 * ctx->plock is held for the whole of one handling pass: it serialises
 * the thread, nxq_ctx_handle_pressure() callers and arena attach/detach,
 * and it is what lets ledger.c run reclaim callbacks without the arena
 * lock.  The thread-local `handling` marks the thread that holds it, so
 * that calls which would wait for it (destroy, close, remove_reclaim)
 * from a callback are refused or done in place instead of deadlocking.
 *
 * Layer 1: calls only err.c, and its clients through their handle() and
 * report() (struct nxq_pclient).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "internal.h"

static __thread const struct nxq_ctx *handling;

int nxq__in_handler(const struct nxq_ctx *ctx)
{
	return ctx && handling == ctx;
}

void nxq__emit(struct nxq_ctx *ctx, const struct nxq_event *ev)
{
	if (ctx->on_event)
		ctx->on_event(ev, ctx->event_user);
}

/* One pass: the signalled clients, then periodic reports. */
static int handle_locked(struct nxq_ctx *ctx)
{
	struct epoll_event evs[32];
	int n, handled = 0;
	uint64_t now;

	handling = ctx;
	do {
		n = epoll_wait(ctx->epfd, evs, 32, 0);
		for (int i = 0; i < n; i++) {
			struct nxq_pclient *c = evs[i].data.ptr;
			uint64_t cnt;

			/* Drain first: a ticket opened after this signals again. */
			while (read(c->fd, &cnt, sizeof(cnt)) == sizeof(cnt))
				;
			handled += c->handle(c->arg);
		}
	} while (n == 32);
	now = nxq__now_ns();
	if (ctx->report_ns && now - ctx->last_report_ns >= ctx->report_ns) {
		for (int i = 0; i < ctx->nclist; i++)
			ctx->clist[i]->report(ctx->clist[i]->arg);
		ctx->last_report_ns = now;
	}
	handling = NULL;
	if (n < 0)
		return nxq__err(-errno, "nxquota: epoll_wait: %s", strerror(errno));
	return handled;
}

static void *pressure_thread(void *arg)
{
	struct nxq_ctx *ctx = arg;

	for (;;) {
		struct pollfd p[2] = { { .fd = ctx->stopfd, .events = POLLIN },
				       { .fd = ctx->epfd, .events = POLLIN } };
		int timeout = ctx->report_ns ? (int)((ctx->report_ns + 999999) / 1000000) : -1;

		if (poll(p, 2, timeout) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		pthread_mutex_lock(&ctx->plock);
		handle_locked(ctx);
		pthread_mutex_unlock(&ctx->plock);
	}
	return NULL;
}

int nxq__pressure_init(struct nxq_ctx *ctx)
{
	int r;

	pthread_mutex_init(&ctx->plock, NULL);
	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ctx->epfd < 0) {
		r = -errno;
		goto fail;
	}
	ctx->pressure = 1;
	ctx->last_report_ns = nxq__now_ns();
	if (ctx->flags & NXQ_CTX_NO_THREAD)
		return 0;
	ctx->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctx->stopfd < 0) {
		r = -errno;
		goto fail;
	}
	{
		sigset_t all, old;

		/* The thread takes no signals: they belong to the application. */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		r = -pthread_create(&ctx->thread, NULL, pressure_thread, ctx);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (r)
		goto fail;
	ctx->thread_started = 1;
	return 0;
fail:
	nxq__err(r, "nxquota: cannot set up pressure handling: %s", strerror(-r));
	nxq__pressure_fini(ctx);
	return r;
}

void nxq__pressure_fini(struct nxq_ctx *ctx)
{
	if (!ctx->pressure && ctx->epfd < 0)
		return;
	if (ctx->thread_started && nxq__forked(ctx)) {
		/* The parent's thread is not ours: never signal its stop fd. */
		ctx->thread_started = 0;
	} else if (ctx->thread_started) {
		uint64_t one = 1;

		if (write(ctx->stopfd, &one, sizeof(one)) != sizeof(one))
			abort();	/* an eventfd write of 1 cannot fail here */
		pthread_join(ctx->thread, NULL);
		ctx->thread_started = 0;
	}
	if (ctx->stopfd >= 0)
		close(ctx->stopfd);
	if (ctx->epfd >= 0)
		close(ctx->epfd);
	ctx->stopfd = ctx->epfd = -1;
	free(ctx->clist);
	ctx->clist = NULL;
	ctx->pressure = 0;
	pthread_mutex_destroy(&ctx->plock);
}

int nxq__pressure_attach(struct nxq_ctx *ctx, struct nxq_pclient *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	int r = 0;

	if (nxq__in_handler(ctx))
		return nxq__err(-EDEADLK, "nxquota: nxq_arena_create() from a reclaim callback "
				"or event hook");
	pthread_mutex_lock(&ctx->plock);
	if (ctx->nclist == ctx->clist_cap) {
		int n = ctx->clist_cap ? ctx->clist_cap * 2 : 8;
		struct nxq_pclient **l = realloc(ctx->clist, (size_t)n * sizeof(*l));

		if (!l) {
			r = nxq__err(-ENOMEM, "nxquota: out of memory");
			goto out;
		}
		ctx->clist = l;
		ctx->clist_cap = n;
	}
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, c->fd, &ev)) {
		r = nxq__err(-errno, "nxquota: epoll_ctl: %s", strerror(errno));
		goto out;
	}
	ctx->clist[ctx->nclist++] = c;
out:
	pthread_mutex_unlock(&ctx->plock);
	return r;
}

int nxq__pressure_detach(struct nxq_ctx *ctx, struct nxq_pclient *c)
{
	if (nxq__in_handler(ctx))
		return nxq__err(-EDEADLK, "nxquota: nxq_arena_destroy() from a reclaim callback "
				"or event hook");
	pthread_mutex_lock(&ctx->plock);
	epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	for (int i = 0; i < ctx->nclist; i++)
		if (ctx->clist[i] == c) {
			ctx->clist[i] = ctx->clist[--ctx->nclist];
			break;
		}
	pthread_mutex_unlock(&ctx->plock);
	return 0;
}

NXQ_API int nxq_ctx_pressure_fd(struct nxq_ctx *ctx)
{
	if (!ctx)
		return nxq__err(-EINVAL, "nxquota: NULL context");
	if (nxq__forked(ctx))
		return nxq__fork_err();
	if (!ctx->pressure)
		return nxq__err(-EOPNOTSUPP, "nxquota: no pressure tickets on this context (%s)",
				!ctx->managed ? "unmanaged" : "the module lacks NXQ_FEAT_TICKETS");
	return ctx->epfd;
}

NXQ_API int nxq_ctx_handle_pressure(struct nxq_ctx *ctx)
{
	int r;

	if (!ctx)
		return nxq__err(-EINVAL, "nxquota: NULL context");
	if (nxq__forked(ctx))
		return nxq__fork_err();
	if (!ctx->pressure)
		return 0;
	if (nxq__in_handler(ctx))
		return nxq__err(-EDEADLK, "nxquota: nxq_ctx_handle_pressure() from a reclaim "
				"callback or event hook");
	pthread_mutex_lock(&ctx->plock);
	r = handle_locked(ctx);
	pthread_mutex_unlock(&ctx->plock);
	return r;
}
