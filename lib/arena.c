// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Arenas: the public entry points (see arena.h for the objects and the
 * files that implement them).
 *
 * Warm path: nxq_alloc(), nxq_alloc_async(), nxq_free() and
 * nxq_free_async() touch only the arena's structures: no system call, no
 * backend call.  A stream-ordered free is owned by its stream and reused
 * at once by the next allocation on that stream; other streams and plain
 * allocations get it once a fence recorded on the stream has completed.
 * Fences are recorded and polled only on a miss (before the arena grows),
 * on a trim, a report or a ticket, never per free.  Growth charges the
 * module once per handle before creating anything, and undoes everything
 * if any step fails.
 *
 * Fork: a context and its arenas belong to the process that opened the
 * context.  In a child every call on them fails with -ECHILD, except
 * nxq_arena_destroy() and nxq_ctx_close(), which free the child's copy of
 * the library's memory without any call to the module, the driver or the
 * pressure thread (the parent's holders, eventfds and thread are left
 * alone).
 *
 * Layer 5, the top: may call every file below it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "arena.h"

int nxq__arena_create_be(struct nxq_ctx *ctx, const struct nxq_arena_opts *opts,
			 const struct nxq_be_ops *be, struct nxq_arena **arenap)
{
	struct nxq_holder_reg reg = { .size = sizeof(reg), .eventfd = -1 };
	struct nxq_arena_opts o;
	struct nxq_be_cfg cfg = { 0 };
	struct nxq_arena *a;
	uint64_t va, batch, retain, pool, gran, wait_ms, gmin;
	char key[NXQ_DEVICE_KEY_MAX] = "";
	int r;

	if (!arenap || !ctx)
		return nxq__err(-EINVAL, "nxquota: NULL context or arenap");
	*arenap = NULL;
	r = nxq__read_arena_opts(opts, &o, &va, &batch, &retain, &pool, &gran, &wait_ms, &gmin);
	if (r)
		return r;
	if (wait_ms && ctx->managed && !(ctx->features & NXQ_FEAT_CHARGE_WAIT))
		return nxq__err(-EOPNOTSUPP, "nxquota: a grow timeout of %llu ms needs a module "
				"with NXQ_FEAT_CHARGE_WAIT (features 0x%llx); set it to 0",
				(unsigned long long)wait_ms, (unsigned long long)ctx->features);
	if (nxq__forked(ctx))
		return nxq__fork_err();
	if (nxq__in_handler(ctx))
		return nxq__err(-EDEADLK, "nxquota: nxq_arena_create() from a reclaim callback "
				"or event hook");
	if (!be) {
		int backend = o.backend;

		if (backend == NXQ_BACKEND_AUTO)
			backend = o.device_key && !strncmp(o.device_key, "GPU-", 4) ?
				  NXQ_BACKEND_CUDA : NXQ_BACKEND_HOST;
		be = backend == NXQ_BACKEND_CUDA ? &nxq__cuda_be_ops : &nxq__host_be_ops;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return nxq__err(-ENOMEM, "nxquota: out of memory");
	pthread_mutex_init(&a->lock, NULL);
	TAILQ_INIT(&a->segs);
	STAILQ_INIT(&a->cbs);
	a->ctx = ctx;
	a->be = be;
	a->evfd = -1;
	a->grow_timeout_ns = ctx->managed ? wait_ms * 1000000ULL : 0;
	cfg.cuda_device = o.cuda_device;
	cfg.granule = gran;
	r = be->open(&cfg, &a->bep, &a->granule, key);	/* sets the message */
	if (r)
		goto fail_free;
	if (!a->granule) {
		r = nxq__err(-EIO, "nxquota: %s backend reported a granule of 0", be->name);
		goto fail_close;
	}
	snprintf(a->key, sizeof(a->key), "%s", o.device_key ? o.device_key : key);
	a->va_size = rdup(va, a->granule);
	a->nslots = a->va_size / a->granule;
	a->grow_batch = rdup(batch, a->granule);
	a->grow_min = rdup(gmin, a->granule);
	a->retain_idle = retain;
	a->handle_pool = pool;
	a->slots = calloc(a->nslots, sizeof(*a->slots));
	if (!a->slots || nxq__blk_init(a)) {
		r = nxq__err(-ENOMEM, "nxquota: out of memory");
		goto fail_close;
	}
	r = be->reserve(a->bep, a->va_size, a->granule, &a->base);
	if (r) {
		nxq__err(r, "nxquota: %s: cannot reserve %llu bytes of VA", a->key,
			 (unsigned long long)a->va_size);
		goto fail_close;
	}
	if (ctx->pressure) {
		a->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (a->evfd < 0) {
			r = nxq__err(-errno, "nxquota: eventfd: %s", strerror(errno));
			goto fail_unreserve;
		}
	}
	memcpy(reg.device, a->key, sizeof(reg.device));
	reg.priority = o.priority;
	reg.eventfd = a->evfd;
	r = ctx->kops->holder_register(ctx, &reg);
	if (r) {
		nxq__err(r, "nxquota: cannot register a holder on device \"%s\": %s%s", a->key,
			 strerror(-r), r == -ENODEV ? " (register the device in "
			 "/sys/kernel/nxquota/devices/register)" : "");
		goto fail_unreserve;
	}
	a->holder = reg.holder_id;
	if (ctx->pressure) {
		r = nxq__ledger_attach(a);	/* sets the message */
		if (r) {
			ctx->kops->holder_unregister(ctx, a->holder);
			goto fail_unreserve;
		}
	}
	__atomic_add_fetch(&ctx->narenas, 1, __ATOMIC_ACQ_REL);
	*arenap = a;
	return 0;

fail_unreserve:
	if (a->evfd >= 0)
		close(a->evfd);
	be->unreserve(a->bep, a->base, a->va_size);
fail_close:
	be->close(a->bep);
fail_free:
	free(a->slots);
	nxq__blk_fini(a);
	pthread_mutex_destroy(&a->lock);
	free(a);
	return r;
}

NXQ_API int nxq_arena_create(struct nxq_ctx *ctx, const struct nxq_arena_opts *opts,
			     struct nxq_arena **arenap)
{
	return nxq__arena_create_be(ctx, opts, NULL, arenap);
}

static int norm_req(struct nxq_arena *a, uint64_t *size, uint64_t *align)
{
	if (!*size)
		return nxq__err(-EINVAL, "nxquota: size 0");
	if (*size > (1ULL << 62))
		return nxq__err(-ENOMEM, "nxquota: size too large");
	if (*align & (*align - 1))
		return nxq__err(-EINVAL, "nxquota: alignment %llu is not a power of two",
				(unsigned long long)*align);
	if (*align < QUANTUM)
		*align = QUANTUM;
	*size = align_up(*size, QUANTUM);
	if (*size > a->va_size || *align > a->va_size)
		return nxq__err(-ENOMEM, "nxquota: %llu bytes do not fit the VA range",
				(unsigned long long)*size);
	return 0;
}

/*
 * Nothing fits: completed stream frees first, then (for stream s) FREE
 * memory next to what s owns, then fences on the other streams polled;
 * then growth; a refused growth waits for stream frees, then for the
 * module's grant.  Returns a block that fits, or NULL with *rp set.
 */
static struct blk *slow_fit(struct nxq_arena *a, struct nxq_stream *s, uint64_t size,
			    uint64_t align, int *rp)
{
	struct blk *b = NULL;
	int r;

	if (!TAILQ_EMPTY(&a->pend)) {
		nxq__poll_pending(a, 1);
		if ((b = nxq__find_fit(a, s, size, align)))
			return b;
	}
	if (s) {
		nxq__absorb(a, s);
		if ((b = nxq__find_fit(a, s, size, align)))
			return b;
	}
	if (a->owned - (s ? s->bs.bytes : 0)) {
		/* other streams' frees: usable here once their work is done */
		nxq__fence_streams(a, s);
		nxq__poll_pending(a, 1);
		if ((b = nxq__find_fit(a, s, size, align)))
			return b;
	}
	/*
	 * Growing while streams own memory this allocation could not use:
	 * from now on each stream's frees are fenced as they add up (see
	 * nxq_free_async()), so that they come back to everyone soon after
	 * their work completed, not only at the next miss.
	 */
	if (a->owned - (s ? s->bs.bytes : 0) || !TAILQ_EMPTY(&a->pend))
		a->starved = 1;
	r = nxq__grow(a, s, size, align);
	if (r && (!TAILQ_EMPTY(&a->pend) || a->owned)) {
		/* Refused: wait for stream frees rather than fail. */
		nxq__fence_streams(a, NULL);
		nxq__poll_pending(a, 2);
		if ((b = nxq__find_fit(a, s, size, align)))
			return b;
		r = nxq__grow(a, s, size, align);
	}
	if (r && (r == -EDQUOT || r == -ENOSPC) && a->grow_timeout_ns &&
	    !nxq__in_handler(a->ctx)) {
		/* Still refused: wait for the module's grant (never on the
		 * pressure handler: it would stall every other ticket). */
		r = nxq__grow_wait(a, size, align);
		if (r && (b = nxq__find_fit(a, s, size, align)))
			return b;	/* freed by another thread meanwhile */
	}
	if (r) {
		*rp = r;
		return NULL;
	}
	if (s)
		nxq__absorb(a, s);	/* growth may have extended a block s owns */
	b = nxq__find_fit(a, s, size, align);
	if (!b)
		*rp = nxq__err(-EFAULT, "nxquota: internal error: no fit after growth");
	return b;
}

static int do_alloc(struct nxq_arena *a, size_t size_, size_t align_, int on_stream,
		    void *stream, void **ptrp)
{
	uint64_t size = size_, align = align_, off;
	struct nxq_stream *s = NULL;
	struct blk *b;
	int r;

	if (!a || !ptrp)
		return nxq__err(-EINVAL, "nxquota: NULL arena or ptrp");
	if (nxq__forked(a->ctx))
		return nxq__fork_err();
	r = norm_req(a, &size, &align);
	if (r)
		return r;
	pthread_mutex_lock(&a->lock);
	if (on_stream)
		s = nxq__stream_find(a, stream, 0);
	b = nxq__find_fit(a, s, size, align);
	if (!b) {
		if (on_stream && !s)
			s = nxq__stream_find(a, stream, 1);	/* NULL: out of memory */
		b = slow_fit(a, s, size, align, &r);
		if (!b)
			goto out;
	}
	r = nxq__take(a, b, size, align, &off);
	if (r) {
		r = nxq__err(r, "nxquota: out of memory");
		goto out;
	}
	a->allocs++;
	if (a->alloc_streams < 2) {		/* for nxq__absorb_freed() */
		if (on_stream && (!a->alloc_streams || a->alloc_stream == stream)) {
			a->alloc_stream = stream;
			a->alloc_streams = 1;
		} else {
			a->alloc_streams = 2;
		}
	}
	*ptrp = (void *)(uintptr_t)(a->base + off);
out:
	pthread_mutex_unlock(&a->lock);
	return r;
}

NXQ_API int nxq_alloc(struct nxq_arena *a, size_t size, size_t align, void **ptrp)
{
	return do_alloc(a, size, align, 0, NULL, ptrp);
}

NXQ_API int nxq_alloc_async(struct nxq_arena *a, size_t size, size_t align, void *stream,
			    void **ptrp)
{
	return do_alloc(a, size, align, 1, stream, ptrp);
}

static int bad_ptr(void *ptr)
{
	return nxq__err(-EINVAL, "nxquota: %p was not allocated by this arena or is already "
			"freed", ptr);
}

NXQ_API int nxq_free(struct nxq_arena *a, void *ptr)
{
	struct blk *b;

	if (!a)
		return nxq__err(-EINVAL, "nxquota: NULL arena");
	if (nxq__forked(a->ctx))
		return nxq__fork_err();
	if (!ptr)
		return 0;
	pthread_mutex_lock(&a->lock);
	b = nxq__take_used(a, ptr);
	if (!b) {
		pthread_mutex_unlock(&a->lock);
		return bad_ptr(ptr);
	}
	a->in_use -= b->size;
	a->frees++;
	a->free_seq++;
	nxq__seg_account(a, b->off, b->size, 2);
	nxq__coalesce(a, b, NULL);
	if (a->idle > a->retain_idle && !a->in_pressure)
		nxq__enforce_retention(a);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

NXQ_API int nxq_free_async(struct nxq_arena *a, void *ptr, void *stream)
{
	struct nxq_stream *s;
	struct blk *b;

	if (!a)
		return nxq__err(-EINVAL, "nxquota: NULL arena");
	if (nxq__forked(a->ctx))
		return nxq__fork_err();
	if (!ptr)
		return 0;
	pthread_mutex_lock(&a->lock);
	s = nxq__stream_find(a, stream, 1);
	if (!s) {
		pthread_mutex_unlock(&a->lock);
		return nxq__err(-ENOMEM, "nxquota: out of memory");
	}
	b = nxq__take_used(a, ptr);
	if (!b) {
		pthread_mutex_unlock(&a->lock);
		return bad_ptr(ptr);
	}
	a->in_use -= b->size;
	a->frees++;
	s->unfenced += b->size;
	nxq__coalesce(a, b, s);		/* owned by the stream: still busy */
	nxq__absorb_freed(a, b, s);
	/* others went short of memory this stream owned: fence it as it adds up */
	if (a->starved && s->unfenced >= (a->mapped / 64 > a->granule ? a->mapped / 64 : a->granule))
		nxq__fence_stream(a, s);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

NXQ_API int64_t nxq_arena_trim(struct nxq_arena *a, uint64_t target, unsigned int flags)
{
	uint64_t before, freed;

	if (!a)
		return nxq__err(-EINVAL, "nxquota: NULL arena");
	if (nxq__forked(a->ctx))
		return nxq__fork_err();
	if (flags & ~NXQ_TRIM_WAIT)
		return nxq__err(-EINVAL, "nxquota: unknown trim flags 0x%x", flags);
	pthread_mutex_lock(&a->lock);
	before = a->charged - a->owed;
	nxq__fence_streams(a, NULL);
	nxq__poll_pending(a, (flags & NXQ_TRIM_WAIT) ? 2 : 1);
	/* Retained handles first: they cost nothing to drop. */
	freed = before > target ? nxq__release_pool(a, before - target) : 0;
	if (before - freed > target)
		freed += nxq__release_idle(a, before - freed - target, 0);
	nxq__k_uncharge(a, freed);
	nxq__report_reclaimable(a);
	pthread_mutex_unlock(&a->lock);
	return (int64_t)freed;
}

NXQ_API int nxq_arena_report(struct nxq_arena *a)
{
	if (!a)
		return nxq__err(-EINVAL, "nxquota: NULL arena");
	if (nxq__forked(a->ctx))
		return nxq__fork_err();
	pthread_mutex_lock(&a->lock);
	nxq__fence_streams(a, NULL);
	nxq__poll_pending(a, 1);
	nxq__report_reclaimable(a);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

NXQ_API int nxq_arena_stats(struct nxq_arena *a, struct nxq_stats *st)
{
	struct nxq_stats s = { 0 };
	uint32_t size;

	if (!a || !st)
		return nxq__err(-EINVAL, "nxquota: NULL arena or stats");
	if (nxq__forked(a->ctx))
		return nxq__fork_err();
	size = st->size;
	if (size < NXQ_STATS_SIZE_VER0)
		return nxq__err(-EINVAL, "nxquota: nxq_stats.size %u is below %u", size,
				NXQ_STATS_SIZE_VER0);
	pthread_mutex_lock(&a->lock);
	s.size = size < sizeof(s) ? size : sizeof(s);
	s.flags = a->ctx->managed ? 0 : NXQ_STATS_UNMANAGED;
	s.granule = a->granule;
	s.va_size = a->va_size;
	s.mapped = a->mapped;
	s.in_use = a->in_use;
	s.pending = a->owned + a->fenced;
	s.free = a->free_bs.bytes;
	s.idle = a->idle;
	s.retained = a->pool_bytes;
	s.charged = a->charged;
	s.reclaimable = a->reported;
	s.unattributed = NXQ_UNKNOWN;
	s.charge_calls = a->charge_calls;
	s.uncharge_calls = a->uncharge_calls;
	s.charge_denied = a->charge_denied;
	s.grows = a->grows;
	s.allocs = a->allocs;
	s.frees = a->frees;
	s.grow_waits = a->grow_waits;
	s.tickets = a->tickets;
	s.answers = a->answers;
	s.answered_bytes = a->answered_bytes;
	s.reclaim_calls = a->reclaim_calls;
	s.stale_answers = a->stale_answers;
	s.reclaimable_reports = a->reports;
	pthread_mutex_unlock(&a->lock);
	memcpy(st, &s, s.size);
	st->size = size;
	if (size > sizeof(s))
		memset((char *)st + sizeof(s), 0, size - sizeof(s));
	return 0;
}

static void arena_free(struct nxq_arena *a)
{
	nxq__blk_fini(a);
	nxq__reclaim_fini(a);
	{
		struct seg *s;

		while ((s = TAILQ_FIRST(&a->segs))) {
			TAILQ_REMOVE(&a->segs, s, link);
			free(s);
		}
	}
	if (a->evfd >= 0)
		close(a->evfd);
	free(a->slots);
	free(a->pool);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

NXQ_API int nxq_arena_destroy(struct nxq_arena *a)
{
	if (!a)
		return 0;
	if (nxq__forked(a->ctx)) {
		/* The parent's arena: free our copy, touch nothing it owns. */
		__atomic_sub_fetch(&a->ctx->narenas, 1, __ATOMIC_ACQ_REL);
		arena_free(a);
		return 0;
	}
	if (a->ctx->pressure && nxq__ledger_detach(a))
		return -EDEADLK;	/* from a callback: message set */
	/* Queued device work may still use the memory: wait for it first,
	 * without the lock. */
	a->be->quiesce(a->bep);
	pthread_mutex_lock(&a->lock);
	nxq__fence_streams(a, NULL);
	nxq__poll_pending(a, 2);
	if (a->owned)
		a->be->quiesce(a->bep);	/* a stream could not be fenced */
	nxq__unmap_all(a);
	nxq__k_uncharge(a, a->charged);
	a->ctx->kops->holder_unregister(a->ctx, a->holder);
	a->be->unreserve(a->bep, a->base, a->va_size);
	a->be->close(a->bep);
	pthread_mutex_unlock(&a->lock);
	__atomic_sub_fetch(&a->ctx->narenas, 1, __ATOMIC_ACQ_REL);
	arena_free(a);
	return 0;
}
