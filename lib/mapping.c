// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Mapping and handles (see arena.h for the objects): an arena grows by one
 * physical handle at a time, sized to the growth -- what the allocation
 * needs, and at least a quarter of what is mapped already (a power of two
 * from one granule up to grow_batch) -- so that growing by a GiB costs a
 * few handle creations and mappings, as one cudaMalloc of it would, rather
 * than one per granule.  Where the highest mapped bytes are free, a growth
 * maps only what the allocation is missing above them, as PyTorch's
 * expandable segments do (tail_need()).  A handle is unmapped only whole, when no byte of
 * it is in use or owned by a stream, so a ticket is answered within one
 * handle of what it asks.  Unmapped handles go to the pool (still
 * charged) while it has room, else back to the driver.
 *
 * Runs under arena->lock; nxq__release_idle() and nxq__grow_wait() drop it
 * (the device-wide wait and the module's wait), see their comments.
 *
 * Layer 3: calls err.c, block.c and charge.c; never ledger.c or arena.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

TAILQ_HEAD(segq, seg);

/* Who refused: the module, nxquotad, or the process-local cap. */
static const char *authority(const struct nxq_arena *a)
{
	const char *n = a->ctx->kops->name;

	if (!strcmp(n, "nxquota"))
		return "the module";
	if (!strcmp(n, "unmanaged"))
		return "the process-local cap";
	return n;
}

/* ---- the handle pool ---- */

static int pool_push(struct nxq_arena *a, uint64_t h, uint64_t size)
{
	if (a->npool == a->pool_alloc) {
		uint64_t n = a->pool_alloc ? a->pool_alloc * 2 : 16;
		struct pooled *p = realloc(a->pool, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		a->pool = p;
		a->pool_alloc = n;
	}
	a->pool[a->npool].handle = h;
	a->pool[a->npool].size = size;
	a->npool++;
	a->pool_bytes += size;
	return 0;
}

/* The smallest pooled handle of at least need bytes, or -1. */
static int64_t pool_fit(const struct nxq_arena *a, uint64_t need)
{
	int64_t best = -1;

	for (uint64_t i = 0; i < a->npool; i++)
		if (a->pool[i].size >= need &&
		    (best < 0 || a->pool[i].size < a->pool[best].size))
			best = (int64_t)i;
	return best;
}

static struct pooled pool_take(struct nxq_arena *a, uint64_t i)
{
	struct pooled p = a->pool[i];

	a->pool[i] = a->pool[--a->npool];
	a->pool_bytes -= p.size;
	return p;
}

/* Release pooled handles, newest first, towards want bytes; returns bytes released. */
uint64_t nxq__release_pool(struct nxq_arena *a, uint64_t want)
{
	uint64_t freed = 0;

	while (a->npool && freed < want) {
		struct pooled *p = &a->pool[a->npool - 1];

		if (a->be->release(a->bep, p->handle)) {
			a->kernel_errors++;
			break;
		}
		freed += p->size;
		a->pool_bytes -= p->size;
		a->npool--;
	}
	return freed;
}

/* ---- growth ---- */

static inline uint64_t slot_va(const struct nxq_arena *a, uint64_t s)
{
	return a->base + s * a->granule;
}

static int run_free(const struct nxq_arena *a, uint64_t s, uint64_t n)
{
	if (s + n > a->nslots)
		return 0;
	for (uint64_t i = 0; i < n; i++)
		if (a->slots[s + i])
			return 0;
	return 1;
}

/*
 * A run of n unmapped slots whose start address is align-aligned: right
 * after the highest segment if it fits there (growth is mostly at the
 * top), else the lowest.
 */
static int64_t find_run(const struct nxq_arena *a, uint64_t n, uint64_t align)
{
	struct seg *last = TAILQ_LAST(&a->segs, segq);
	uint64_t run = 0;

	if (last) {
		uint64_t s = (last->off + last->size) / a->granule;

		if (!(slot_va(a, s) & (align - 1)) && run_free(a, s, n))
			return (int64_t)s;
	}
	for (uint64_t s = 0; s < a->nslots; s++) {
		if (a->slots[s]) {
			run = 0;
			continue;
		}
		if (!run && (slot_va(a, s) & (align - 1)))
			continue;
		if (++run == n)
			return (int64_t)(s + 1 - n);
	}
	return -1;
}

static int refused(int r)
{
	return r == -EDQUOT || r == -ENOSPC;
}

/*
 * Map one handle of size bytes at slot s: the pooled handle ph (charged
 * already), or a new one charged here first.  pre bytes were charged
 * already (a waiting growth): they count against the charge, and what is
 * left over is uncharged.  All or nothing.
 */
static int map_seg(struct nxq_arena *a, uint64_t s, uint64_t size, const struct pooled *ph,
		   uint64_t pre)
{
	uint64_t need = ph ? 0 : size, h = ph ? ph->handle : 0, va = slot_va(a, s);
	struct seg *sg, *p;
	char why[200];
	int r, mapped = 0;

	if (need > pre) {
		r = nxq__k_charge(a, need - pre);
		if (r) {
			nxq__k_uncharge(a, pre);
			return nxq__err(r, "nxquota: %s: %s refused %llu bytes: %s",
					a->key, authority(a), (unsigned long long)(need - pre),
					strerror(-r));
		}
	} else if (pre > need) {
		nxq__k_uncharge(a, pre - need);
	}
	sg = calloc(1, sizeof(*sg));
	if (!sg || nxq__blk_reserve(a, 1)) {
		r = nxq__err(-ENOMEM, "nxquota: out of memory");
		goto undo;
	}
	if (!ph) {
		r = a->be->create(a->bep, size, &h);
		if (r) {
			snprintf(why, sizeof(why), "%s", nxq_errmsg());
			nxq__err(r, "nxquota: %s: %s handle of %llu bytes: %s", a->key, a->be->name,
				 (unsigned long long)size, why);
			goto undo;
		}
	}
	r = a->be->map(a->bep, va, size, h);
	if (r) {
		snprintf(why, sizeof(why), "%s", nxq_errmsg());
		nxq__err(r, "nxquota: %s: %s map of %llu bytes: %s", a->key, a->be->name,
			 (unsigned long long)size, why);
		goto undo_handle;
	}
	mapped = 1;
	r = a->be->set_access(a->bep, va, size);
	if (r) {
		snprintf(why, sizeof(why), "%s", nxq_errmsg());
		nxq__err(r, "nxquota: %s: %s set_access of %llu bytes: %s", a->key, a->be->name,
			 (unsigned long long)size, why);
		goto undo_handle;
	}
	sg->off = s * a->granule;
	sg->size = size;
	sg->handle = h;
	for (uint64_t i = 0; i < size / a->granule; i++)
		a->slots[s + i] = sg;
	TAILQ_FOREACH_REVERSE(p, &a->segs, segq, link)
		if (p->off < sg->off)
			break;
	if (p)
		TAILQ_INSERT_AFTER(&a->segs, p, sg, link);
	else
		TAILQ_INSERT_HEAD(&a->segs, sg, link);
	a->mapped += size;
	a->idle += size;
	a->grows++;
	nxq__insert_mapped(a, sg->off, size);	/* a spare block is reserved */
	return 0;

undo_handle:
	if (mapped)
		a->be->unmap(a->bep, va, size);
	if (ph)
		pool_push(a, ph->handle, ph->size);	/* back where it came from */
	else
		a->be->release(a->bep, h);
undo:
	free(sg);
	nxq__k_uncharge(a, need);
	return r;
}

/*
 * The handle a growth maps beyond what the allocation needs: a power of
 * two near a quarter of what is mapped, from a granule up to grow_batch
 * (handles grow with the arena, and a ticket is answered within one
 * handle, at most a quarter of what is mapped); never below grow_min.
 *
 * grow_batch only caps: below 4 * grow_batch mapped the quarter decides,
 * so growing an empty arena by 1 GiB in 16 MiB pieces creates about 20
 * handles whether grow_batch is 64 MiB or 1 GiB (tests/lib/test_cuda.c
 * counts them).  Growth at the cost of one mapping from the first byte
 * takes grow_min ($NXQ_GROW_MIN): the first growth maps that much.
 */
static uint64_t grow_target(const struct nxq_arena *a)
{
	uint64_t t = a->mapped / 4;

	if (t <= a->granule)
		t = a->granule;
	else
		t = 1ULL << (63 - __builtin_clzll(t));
	if (t > a->grow_batch)
		t = a->grow_batch;
	t = rdup(t, a->granule);
	return t < a->grow_min ? a->grow_min : t;
}

/*
 * Growth at the top, as expandable segments grow: when the highest mapped
 * bytes are a free block usable here (FREE, or OWNED by the allocating
 * stream st) and the VA right above is unmapped, an allocation that does
 * not fit anywhere starts in that block and only what is missing is
 * mapped, right above it.  Returns the bytes to map (granule-rounded) and
 * the slot to map them at in *slot, or 0 where there is no such tail.
 */
static uint64_t tail_need(const struct nxq_arena *a, const struct nxq_stream *st,
			  uint64_t size, uint64_t align, uint64_t *slot)
{
	struct seg *last = TAILQ_LAST(&a->segs, segq);
	struct blk *b = TAILQ_LAST(&a->addr, blk_tailq);
	uint64_t top, start, need;

	if (!last || !b)
		return 0;
	top = last->off + last->size;
	if (b->off + b->size != top ||
	    !(b->state == B_FREE || (b->state == B_OWNED && st && b->owner == st)))
		return 0;
	start = align_up(a->base + b->off, align) - a->base;
	if (start >= top)
		return 0;
	need = rdup(start + size - top, a->granule);
	*slot = top / a->granule;
	return run_free(a, *slot, need / a->granule) ? need : 0;
}

int nxq__grow(struct nxq_arena *a, struct nxq_stream *st, uint64_t size, uint64_t align)
{
	uint64_t g = a->granule, need = rdup(size, g), hs = grow_target(a), tn, ts = 0;
	uint64_t tries[2];
	int64_t i, s;
	int ntries = 0, r = -ENOMEM;

	tn = tail_need(a, st, size, align < QUANTUM ? QUANTUM : align, &ts);
	if (tn) {
		/* A pooled handle that covers what is missing, else a new one. */
		i = pool_fit(a, tn);
		if (i >= 0 && run_free(a, ts, a->pool[i].size / g)) {
			struct pooled ph = pool_take(a, (uint64_t)i);

			r = map_seg(a, ts, ph.size, &ph, 0);
			if (!r) {
				nxq__report_reclaimable(a);
				return 0;
			}
		}
		/*
		 * What is missing, at least one handle of grow_target() (and
		 * grow_min), not what the whole allocation needs: the block
		 * below holds the rest.  Refused: just what is missing.  (The
		 * PyTorch integration keeps grow_batch at 4 MiB so that this
		 * handle overshoots a peak by little: tests/lib/replay.c.)
		 */
		if (hs > tn && run_free(a, ts, hs / g))
			tries[ntries++] = hs;
		tries[ntries++] = tn;
		for (int t = 0; t < ntries; t++) {
			r = map_seg(a, ts, tries[t], NULL, 0);
			if (!r) {
				nxq__report_reclaimable(a);
				return 0;
			}
			if (!refused(r) && r != -ENOMEM)
				return r;
		}
		if (refused(r))
			return r;	/* a whole new block would be refused too */
		ntries = 0;
	}
	if (align < g)
		align = g;
	/* A pooled handle that holds the request: no charge, no creation. */
	i = pool_fit(a, need);
	if (i >= 0 && (s = find_run(a, a->pool[i].size / g, align)) >= 0) {
		struct pooled ph = pool_take(a, (uint64_t)i);

		r = map_seg(a, (uint64_t)s, ph.size, &ph, 0);
		if (!r) {
			nxq__report_reclaimable(a);
			return 0;
		}
	}
	if (hs > need)
		tries[ntries++] = hs;
	tries[ntries++] = need;
	for (int t = 0; t < ntries; t++) {
		s = find_run(a, tries[t] / g, align);
		if (s < 0) {
			r = nxq__err(-ENOMEM, "nxquota: %s: no free VA run of %llu bytes in the "
				     "%llu-byte range (raise va_size / NXQ_VA_SIZE)", a->key,
				     (unsigned long long)tries[t], (unsigned long long)a->va_size);
			continue;
		}
		r = map_seg(a, (uint64_t)s, tries[t], NULL, 0);
		if (!r) {
			nxq__report_reclaimable(a);
			return 0;
		}
		/* Refused or out of memory: retry with just what this allocation needs. */
		if (!refused(r) && r != -ENOMEM)
			break;
	}
	return r;
}

/*
 * A refused growth waits for a grant: the charge of what the allocation
 * needs with NXQ_CHARGE_WAIT, the arena lock dropped meanwhile (the
 * handler, other threads' frees and this process's other arenas must go
 * on); then maps with that charge.  Called and returns with the lock held.
 */
int nxq__grow_wait(struct nxq_arena *a, uint64_t size, uint64_t align)
{
	uint64_t g = a->granule, bytes = rdup(size, g), start, left, waited;
	int64_t s;
	int r;

	if (pool_fit(a, bytes) >= 0)
		return -ENOMEM;		/* the pool covers it: not a refusal to wait on */
	a->grow_waits++;
	a->charge_calls++;
	pthread_mutex_unlock(&a->lock);
	start = nxq__now_ns();
	left = a->grow_timeout_ns;
	for (;;) {
		r = a->ctx->kops->charge(a->ctx, a->holder, bytes, left, NULL);
		waited = nxq__now_ns() - start;
		if (r != -EINTR || waited >= a->grow_timeout_ns)
			break;
		left = a->grow_timeout_ns - waited;	/* a signal: wait the rest */
	}
	pthread_mutex_lock(&a->lock);
	if (r) {
		a->charge_denied++;
		if (r == -EINTR)
			r = -ETIMEDOUT;
		if (r == -ETIMEDOUT)
			return nxq__err(r, "nxquota: %s: waited %llu ms for %llu bytes and %s "
					"did not grant them (timed out: the holders asked released "
					"too little)", a->key,
					(unsigned long long)(waited / 1000000),
					(unsigned long long)bytes, authority(a));
		return nxq__err(r, "nxquota: %s: %s refused %llu bytes (waiting up to "
				"%llu ms): %s", a->key, authority(a), (unsigned long long)bytes,
				(unsigned long long)(a->grow_timeout_ns / 1000000), strerror(-r));
	}
	a->charged += bytes;
	if (align < g)
		align = g;
	s = find_run(a, bytes / g, align);
	if (s < 0) {
		nxq__k_uncharge(a, bytes);
		return nxq__err(-ENOMEM, "nxquota: %s: no free VA run of %llu bytes (raise "
				"va_size / NXQ_VA_SIZE)", a->key, (unsigned long long)bytes);
	}
	r = map_seg(a, (uint64_t)s, bytes, NULL, bytes);
	if (!r)
		nxq__report_reclaimable(a);
	return r;
}

/* ---- releasing whole handles ---- */

/*
 * Unmap idle segments, highest addresses first, until want bytes are
 * unmapped (at most one segment more).  Handles go to the pool while it
 * has room (to_pool), else are released.  Returns the bytes released (no
 * longer charged: the caller uncharges them in one call).
 *
 * Memory freed with nxq_free() may still be read by device work queued
 * before the free (as cudaFree, which synchronises): such segments are
 * unmapped only after the backend's quiesce (cuCtxSynchronize), which is
 * called with the arena lock dropped; segments freed plainly after it
 * started wait for the next pass.
 */
uint64_t nxq__release_idle(struct nxq_arena *a, uint64_t want, int to_pool)
{
	uint64_t freed = 0;
	struct seg *s, *prev;
	struct blk *b;

	if (!want || !a->idle)
		return 0;
	if (a->free_seq != a->quiesced_seq) {
		uint64_t seq = a->free_seq;
		int r;

		pthread_mutex_unlock(&a->lock);
		r = a->be->quiesce(a->bep);
		pthread_mutex_lock(&a->lock);
		if (r)
			a->kernel_errors++;
		else if (seq > a->quiesced_seq)
			a->quiesced_seq = seq;
	}
	b = TAILQ_LAST(&a->addr, blk_tailq);
	for (s = TAILQ_LAST(&a->segs, segq); s && want && a->idle; s = prev) {
		uint64_t lo = s->off, hi = s->off + s->size, end;

		prev = TAILQ_PREV(s, segq, link);
		if (s->busy || s->fseq > a->quiesced_seq)
			continue;
		while (b && b->off > lo)
			b = TAILQ_PREV(b, blk_tailq, alink);
		if (!b || b->state != B_FREE || b->off + b->size < hi)
			continue;	/* cannot happen: an idle segment lies in one FREE block */
		if (nxq__blk_reserve(a, 1))
			break;
		if (a->be->unmap(a->bep, a->base + lo, s->size)) {
			a->kernel_errors++;
			continue;
		}
		/* the FREE block loses [lo, hi) */
		end = b->off + b->size;
		nxq__free_remove(a, b);
		if (end > hi) {
			struct blk *t = nxq__blk_new(a);

			t->off = hi;
			t->size = end - hi;
			TAILQ_INSERT_AFTER(&a->addr, b, t, alink);
			nxq__free_insert(a, t, NULL);
		}
		if (lo > b->off) {
			b->size = lo - b->off;
			nxq__free_insert(a, b, NULL);
		} else {
			struct blk *bp = TAILQ_PREV(b, blk_tailq, alink);

			TAILQ_REMOVE(&a->addr, b, alink);
			nxq__blk_put(a, b);
			b = bp;
		}
		for (uint64_t i = lo / a->granule; i < hi / a->granule; i++)
			a->slots[i] = NULL;
		TAILQ_REMOVE(&a->segs, s, link);
		a->mapped -= s->size;
		a->idle -= s->size;
		if (to_pool && a->pool_bytes + s->size <= a->handle_pool &&
		    pool_push(a, s->handle, s->size) == 0) {
			/* still charged */
		} else if (a->be->release(a->bep, s->handle) == 0) {
			freed += s->size;
		} else {
			a->kernel_errors++;
			pool_push(a, s->handle, s->size);	/* keep it charged */
		}
		want = want > s->size ? want - s->size : 0;
		free(s);
	}
	return freed;
}

void nxq__enforce_retention(struct nxq_arena *a)
{
	if (a->idle <= a->retain_idle)
		return;
	nxq__k_uncharge(a, nxq__release_idle(a, a->idle - a->retain_idle, 1));
	nxq__report_reclaimable(a);
}

/* Destroy: every segment and pooled handle back to the driver. */
void nxq__unmap_all(struct nxq_arena *a)
{
	struct seg *s;

	while ((s = TAILQ_FIRST(&a->segs))) {
		TAILQ_REMOVE(&a->segs, s, link);
		a->be->unmap(a->bep, a->base + s->off, s->size);
		a->be->release(a->bep, s->handle);
		free(s);
	}
	while (a->npool)
		a->be->release(a->bep, a->pool[--a->npool].handle);
	a->pool_bytes = 0;
}
