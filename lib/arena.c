// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Arenas: one reserved VA range on one device, grown by whole granules.
 *
 * Objects and lifetimes (all fields protected by arena->lock):
 *  - slots[]: one per granule of the VA range; mapped or not, and the
 *    physical handle mapped there.
 *  - blocks (struct blk): cover mapped memory only, kept in address order;
 *    each is FREE (in a size bin), USED (in the pointer hash) or PENDING
 *    (freed on a stream, in the FIFO, with a fence).  Adjacent FREE blocks
 *    are always merged; blocks on either side of an unmapped hole never are.
 *  - pool[]: unmapped physical handles, still charged, reused by growth.
 *  - cbs: reclaim callbacks, appended under the lock; removed under the
 *    context's plock too (or only marked dead when the remover is the
 *    pressure handler itself), so the handler may walk them while it
 *    drops the arena lock to call them.
 *  - evfd: the holder's eventfd (managed contexts with tickets), owned
 *    by the arena, watched through the context's epoll fd (pressure.c).
 *
 * Invariants: mapped = in_use + pending + free;
 *             charged = mapped + granule * npool + owed (what the module
 *             has charged; owed is what a ticket handler released and has
 *             not answered yet, 0 outside handling).
 *
 * Warm path: nxq_alloc()/nxq_free() touch only these structures (no system
 * call, no backend call).  Growth charges the module once per batch before
 * creating anything, and undoes everything if any step fails.  A growth
 * that waits for a grant (grow_timeout) drops the lock while it waits.
 *
 * Pressure: a ticket is handled by the context's handler (pressure.c,
 * holding ctx->plock): retained handles, then idle granules, then the
 * callbacks (lock dropped around each), then trimming what they made idle;
 * in_pressure defers retention meanwhile so that everything released is
 * counted in the one answer.  Only FREE blocks are ever unmapped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "internal.h"

#define QSHIFT		8		/* 256-byte quantum and minimum alignment */
#define QUANTUM		(1ULL << QSHIFT)
#define NBINS		192
#define SPARE_SLAB	256

enum { B_FREE = 1, B_USED, B_PENDING };

struct blk {
	uint64_t off, size;		/* relative to arena->base */
	struct blk *aprev, *anext;	/* address order */
	struct blk *fprev, *fnext;	/* size bin, pending FIFO, or spare list */
	struct blk *hnext;		/* pointer hash (USED) */
	void *fence;			/* PENDING */
	uint32_t state, bin;
};

struct reclaim_node {
	nxq_reclaim_fn fn;
	void *user;
	int dead;
	struct reclaim_node *next;
};

struct slot {
	uint64_t handle;
	int mapped;
};

/* Block structs come from slabs, freed with the arena. */
struct slab_node {
	struct blk *slab;
	struct slab_node *next;
};

struct nxq_arena {
	pthread_mutex_t lock;
	struct nxq_ctx *ctx;
	const struct nxq_be_ops *be;
	void *bep;
	uint64_t holder;
	char key[NXQ_DEVICE_KEY_MAX];

	uint64_t base, va_size, granule, nslots;
	uint64_t grow_batch, retain_idle, handle_pool;

	struct slot *slots;
	uint64_t *pool;
	uint64_t npool, pool_alloc;

	struct blk *ahead, *atail;
	struct blk *bins[NBINS];
	uint64_t binmap[NBINS / 64];
	struct blk **htab;
	uint64_t hmask, hcount;
	struct blk *pend_head, *pend_tail;
	struct blk *spare;
	struct slab_node *slabs;

	uint64_t mapped, in_use, pending, free_bytes, idle, charged, reported;
	uint64_t charge_calls, uncharge_calls, charge_denied, grows, allocs, frees;
	uint64_t kernel_errors;

	int evfd;			/* -1 without tickets */
	uint64_t grow_timeout_ns;
	int in_pressure;		/* handler releasing: defer retention */
	uint64_t owed;			/* released, not yet answered */
	uint64_t last_gen;
	struct reclaim_node *cbs;
	uint64_t grow_waits, tickets, answers, answered_bytes, reclaim_calls;
	uint64_t stale_answers, reports, reclaim_errors;
};

/* ---- small helpers ---- */

static inline uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }
static inline uint64_t align_dn(uint64_t x, uint64_t a) { return x & ~(a - 1); }
static inline uint64_t rdup(uint64_t x, uint64_t m) { return (x + m - 1) / m * m; }
static inline uint64_t rddn(uint64_t x, uint64_t m) { return x / m * m; }

static uint64_t full_granules(const struct nxq_arena *a, uint64_t off, uint64_t size)
{
	uint64_t gs = rdup(off, a->granule), ge = rddn(off + size, a->granule);

	return ge > gs ? (ge - gs) / a->granule : 0;
}

static unsigned int bin_of(uint64_t bytes)
{
	uint64_t q = bytes >> QSHIFT;
	unsigned int lg;

	if (q < 4)
		return (unsigned int)q;
	lg = 63 - __builtin_clzll(q);
	return lg * 4 + (unsigned int)((q >> (lg - 2)) & 3);
}

static struct blk *blk_new(struct nxq_arena *a)
{
	struct blk *b = a->spare;

	if (!b) {
		struct slab_node *n = malloc(sizeof(*n));
		struct blk *slab = calloc(SPARE_SLAB, sizeof(*slab));

		if (!n || !slab) {
			free(n);
			free(slab);
			return NULL;
		}
		n->slab = slab;
		n->next = a->slabs;
		a->slabs = n;
		for (int i = 0; i < SPARE_SLAB; i++) {
			slab[i].fnext = a->spare;
			a->spare = &slab[i];
		}
		b = a->spare;
	}
	a->spare = b->fnext;
	memset(b, 0, sizeof(*b));
	return b;
}

static void blk_put(struct nxq_arena *a, struct blk *b)
{
	b->state = 0;
	b->fnext = a->spare;
	a->spare = b;
}

/* ---- address list ---- */

static void addr_insert_after(struct nxq_arena *a, struct blk *pos, struct blk *b)
{
	b->aprev = pos;
	b->anext = pos ? pos->anext : a->ahead;
	if (b->anext)
		b->anext->aprev = b;
	else
		a->atail = b;
	if (pos)
		pos->anext = b;
	else
		a->ahead = b;
}

static void addr_remove(struct nxq_arena *a, struct blk *b)
{
	if (b->aprev)
		b->aprev->anext = b->anext;
	else
		a->ahead = b->anext;
	if (b->anext)
		b->anext->aprev = b->aprev;
	else
		a->atail = b->aprev;
	b->aprev = b->anext = NULL;
}

/* ---- free bins ---- */

static void free_insert(struct nxq_arena *a, struct blk *b)
{
	unsigned int i = bin_of(b->size);

	b->state = B_FREE;
	b->bin = i;
	b->fprev = NULL;
	b->fnext = a->bins[i];
	if (b->fnext)
		b->fnext->fprev = b;
	a->bins[i] = b;
	a->binmap[i / 64] |= 1ULL << (i % 64);
	a->free_bytes += b->size;
	a->idle += full_granules(a, b->off, b->size) * a->granule;
}

static void free_remove(struct nxq_arena *a, struct blk *b)
{
	unsigned int i = b->bin;

	if (b->fprev)
		b->fprev->fnext = b->fnext;
	else
		a->bins[i] = b->fnext;
	if (b->fnext)
		b->fnext->fprev = b->fprev;
	if (!a->bins[i])
		a->binmap[i / 64] &= ~(1ULL << (i % 64));
	b->fprev = b->fnext = NULL;
	b->state = 0;
	a->free_bytes -= b->size;
	a->idle -= full_granules(a, b->off, b->size) * a->granule;
}

/* Make b FREE, merging with contiguous FREE neighbours. */
static void free_coalesce(struct nxq_arena *a, struct blk *b)
{
	struct blk *p = b->aprev, *n = b->anext;

	if (p && p->state == B_FREE && p->off + p->size == b->off) {
		free_remove(a, p);
		b->off = p->off;
		b->size += p->size;
		addr_remove(a, p);
		blk_put(a, p);
	}
	if (n && n->state == B_FREE && b->off + b->size == n->off) {
		free_remove(a, n);
		b->size += n->size;
		addr_remove(a, n);
		blk_put(a, n);
	}
	free_insert(a, b);
}

static int next_bin(const struct nxq_arena *a, unsigned int from)
{
	for (unsigned int w = from / 64; w < NBINS / 64; w++) {
		uint64_t m = a->binmap[w];

		if (w == from / 64)
			m &= ~0ULL << (from % 64);
		if (m)
			return (int)(w * 64 + __builtin_ctzll(m));
	}
	return -1;
}

static inline int fits(const struct nxq_arena *a, const struct blk *b, uint64_t size,
		       uint64_t align)
{
	uint64_t start = align_up(a->base + b->off, align) - a->base;

	return start + size <= b->off + b->size;
}

/* Best fit: the smallest FREE block that holds size at align. */
static struct blk *find_fit(struct nxq_arena *a, uint64_t size, uint64_t align)
{
	for (int i = next_bin(a, bin_of(size)); i >= 0; i = next_bin(a, (unsigned int)i + 1)) {
		struct blk *best = NULL;

		for (struct blk *b = a->bins[i]; b; b = b->fnext) {
			if (b->size < size || (best && b->size >= best->size))
				continue;
			if (!fits(a, b, size, align))
				continue;
			best = b;
			if (b->size == size)
				break;
		}
		if (best)
			return best;
	}
	return NULL;
}

/* ---- pointer hash (USED blocks) ---- */

static inline uint64_t hslot(const struct nxq_arena *a, uint64_t off)
{
	return ((off >> QSHIFT) * 0x9E3779B97F4A7C15ULL >> 20) & a->hmask;
}

static int hash_grow(struct nxq_arena *a)
{
	uint64_t n = (a->hmask + 1) * 2;
	struct blk **t = calloc(n, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (uint64_t i = 0; i <= a->hmask; i++) {
		struct blk *b = a->htab[i], *nx;

		for (; b; b = nx) {
			uint64_t h = ((b->off >> QSHIFT) * 0x9E3779B97F4A7C15ULL >> 20) & (n - 1);

			nx = b->hnext;
			b->hnext = t[h];
			t[h] = b;
		}
	}
	free(a->htab);
	a->htab = t;
	a->hmask = n - 1;
	return 0;
}

static void hash_insert(struct nxq_arena *a, struct blk *b)
{
	uint64_t h = hslot(a, b->off);

	b->hnext = a->htab[h];
	a->htab[h] = b;
	a->hcount++;
}

static struct blk *hash_take(struct nxq_arena *a, uint64_t off)
{
	struct blk **pp = &a->htab[hslot(a, off)];

	for (; *pp; pp = &(*pp)->hnext) {
		struct blk *b = *pp;

		if (b->off == off) {
			*pp = b->hnext;
			b->hnext = NULL;
			a->hcount--;
			return b;
		}
	}
	return NULL;
}

/* ---- kernel calls ---- */

static int k_charge(struct nxq_arena *a, uint64_t bytes)
{
	int r;

	a->charge_calls++;
	r = a->ctx->kops->charge(a->ctx, a->holder, bytes, 0);
	if (r) {
		a->charge_denied++;
		return r;
	}
	a->charged += bytes;
	return 0;
}

static void k_uncharge(struct nxq_arena *a, uint64_t bytes)
{
	int r;

	if (!bytes)
		return;
	a->uncharge_calls++;
	r = a->ctx->kops->uncharge(a->ctx, a->holder, bytes);
	if (r)
		a->kernel_errors++;	/* the module kept it; nothing else to do */
	a->charged -= bytes;
}

static void report_reclaimable(struct nxq_arena *a)
{
	uint64_t v = a->idle + a->npool * a->granule;

	if (v > a->charged)
		v = a->charged;
	if (v == a->reported)
		return;
	a->reports++;
	if (a->ctx->kops->set_reclaimable(a->ctx, a->holder, v) == 0)
		a->reported = v;
	else
		a->kernel_errors++;
}

/* ---- pool of unmapped handles ---- */

static int pool_push(struct nxq_arena *a, uint64_t h)
{
	if (a->npool == a->pool_alloc) {
		uint64_t n = a->pool_alloc ? a->pool_alloc * 2 : 16;
		uint64_t *p = realloc(a->pool, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		a->pool = p;
		a->pool_alloc = n;
	}
	a->pool[a->npool++] = h;
	return 0;
}

/* ---- growth ---- */

static inline uint64_t slot_va(const struct nxq_arena *a, uint64_t s)
{
	return a->base + s * a->granule;
}

/* Lowest run of n unmapped slots whose start address is align-aligned. */
static int64_t find_run(const struct nxq_arena *a, uint64_t n, uint64_t align)
{
	uint64_t run = 0;

	for (uint64_t s = 0; s < a->nslots; s++) {
		if (a->slots[s].mapped) {
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

/* Insert the FREE block [off, off+size) of freshly mapped memory. */
static int insert_mapped(struct nxq_arena *a, uint64_t off, uint64_t size)
{
	struct blk *b = blk_new(a), *pos = NULL;

	if (!b)
		return -ENOMEM;
	b->off = off;
	b->size = size;
	for (struct blk *p = a->atail; p; p = p->aprev)
		if (p->off < off) {
			pos = p;
			break;
		}
	addr_insert_after(a, pos, b);
	free_coalesce(a, b);
	return 0;
}

/*
 * Map n granules at slot s: handles from the pool first, then one charge
 * for the rest, then create, map, set access.  All or nothing.  pre bytes
 * were charged already (a waiting growth): they count against the charge,
 * and what the pool made unnecessary is uncharged; on failure they are
 * uncharged too.
 */
static int map_run(struct nxq_arena *a, uint64_t s, uint64_t n, uint64_t pre)
{
	uint64_t g = a->granule, from_pool = n < a->npool ? n : a->npool;
	uint64_t need = n - from_pool, got = 0, mapped = 0, i;
	int r = 0;

	if (need * g > pre) {
		r = k_charge(a, need * g - pre);
		if (r) {
			k_uncharge(a, pre);
			return nxq__err(r, "nxquota: %s: the module refused %llu bytes: %s",
					a->key, (unsigned long long)(need * g - pre),
					strerror(-r));
		}
	} else if (pre > need * g) {
		k_uncharge(a, pre - need * g);
	}
	/* A spare block for insert_mapped, taken now so it cannot fail later. */
	{
		struct blk *spare = blk_new(a);

		if (!spare) {
			r = -ENOMEM;
			goto undo;
		}
		blk_put(a, spare);
	}
	for (i = 0; i < n; i++) {
		uint64_t h;

		if (i < from_pool) {
			h = a->pool[--a->npool];
		} else {
			r = a->be->create(a->bep, g, &h);
			if (r) {
				nxq__err(r, "nxquota: %s: %s create of %llu bytes failed", a->key,
					 a->be->name, (unsigned long long)g);
				goto undo;
			}
		}
		a->slots[s + i].handle = h;
		got++;
		r = a->be->map(a->bep, slot_va(a, s + i), g, h);
		if (r) {
			nxq__err(r, "nxquota: %s: %s map failed", a->key, a->be->name);
			goto undo;
		}
		mapped++;
	}
	r = a->be->set_access(a->bep, slot_va(a, s), n * g);
	if (r) {
		nxq__err(r, "nxquota: %s: %s set_access failed", a->key, a->be->name);
		goto undo;
	}
	for (i = 0; i < n; i++)
		a->slots[s + i].mapped = 1;
	a->mapped += n * g;
	a->grows++;
	insert_mapped(a, s * g, n * g);		/* cannot fail: spare taken above */
	return 0;

undo:
	for (i = mapped; i-- > 0;)
		a->be->unmap(a->bep, slot_va(a, s + i), g);
	for (i = got; i-- > 0;) {
		uint64_t h = a->slots[s + i].handle;

		if (i < from_pool)
			pool_push(a, h);	/* back where it came from: room exists */
		else
			a->be->release(a->bep, h);
	}
	if (need)
		k_uncharge(a, need * g);
	return r;
}

static int grow(struct nxq_arena *a, uint64_t size, uint64_t align)
{
	uint64_t g = a->granule;
	uint64_t n_need = rdup(size, g) / g;
	uint64_t n_batch = a->grow_batch / g;
	uint64_t tries[2];
	int ntries = 0, r = -ENOMEM;

	if (align < g)
		align = g;
	if (n_batch > n_need)
		tries[ntries++] = n_batch;
	tries[ntries++] = n_need;
	for (int t = 0; t < ntries; t++) {
		int64_t s = find_run(a, tries[t], align);

		if (s < 0) {
			r = nxq__err(-ENOMEM, "nxquota: %s: no free VA run of %llu bytes in the "
				     "%llu-byte range (raise va_size / NXQ_VA_SIZE)", a->key,
				     (unsigned long long)(tries[t] * g),
				     (unsigned long long)a->va_size);
			continue;
		}
		r = map_run(a, (uint64_t)s, tries[t], 0);
		if (!r) {
			report_reclaimable(a);
			return 0;
		}
		/* A refused batch: retry with just what this allocation needs. */
		if (r != -EDQUOT && r != -ENOSPC && r != -ENOMEM)
			break;
	}
	return r;
}

static int refused(int r)
{
	return r == -EDQUOT || r == -ENOSPC;
}

/*
 * A refused growth waits for a grant: the charge of what the allocation
 * needs (beyond pooled handles) with NXQ_CHARGE_WAIT, the arena lock
 * dropped meanwhile (the handler, other threads' frees and this process's
 * other arenas must go on); then maps with that charge.  Called and
 * returns with the lock held.
 */
static int grow_wait(struct nxq_arena *a, uint64_t size, uint64_t align)
{
	uint64_t g = a->granule, n = rdup(size, g) / g, pooled = n < a->npool ? n : a->npool;
	uint64_t bytes = (n - pooled) * g, start, left, waited;
	int64_t s;
	int r;

	if (!bytes)
		return -ENOMEM;		/* the pool covers it: not a refusal to wait on */
	a->grow_waits++;
	a->charge_calls++;
	pthread_mutex_unlock(&a->lock);
	start = nxq__now_ns();
	left = a->grow_timeout_ns;
	for (;;) {
		r = a->ctx->kops->charge(a->ctx, a->holder, bytes, left);
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
			return nxq__err(r, "nxquota: %s: waited %llu ms for %llu bytes and the module "
					"did not grant them (timed out: the holders asked released "
					"too little)", a->key,
					(unsigned long long)(waited / 1000000),
					(unsigned long long)bytes);
		return nxq__err(r, "nxquota: %s: the module refused %llu bytes (waiting up to "
				"%llu ms): %s", a->key, (unsigned long long)bytes,
				(unsigned long long)(a->grow_timeout_ns / 1000000), strerror(-r));
	}
	a->charged += bytes;
	if (align < g)
		align = g;
	s = find_run(a, n, align);
	if (s < 0) {
		k_uncharge(a, bytes);
		return nxq__err(-ENOMEM, "nxquota: %s: no free VA run of %llu bytes (raise "
				"va_size / NXQ_VA_SIZE)", a->key, (unsigned long long)(n * g));
	}
	r = map_run(a, (uint64_t)s, n, bytes);
	if (!r)
		report_reclaimable(a);
	return r;
}

/* ---- releasing granules ---- */

/*
 * Unmap up to want granules that lie wholly in FREE blocks, highest
 * addresses first.  Handles go to the pool while it has room (to_pool),
 * else are released.  Returns the bytes no longer charged (the caller
 * uncharges them in one call).
 */
static uint64_t release_granules(struct nxq_arena *a, uint64_t want, int to_pool)
{
	uint64_t g = a->granule, freed = 0;
	struct blk *b, *prev;

	if (!want || !a->idle)
		return 0;
	/* Synchronously freed memory may still be read by queued device work. */
	if (a->be->quiesce(a->bep)) {
		a->kernel_errors++;
		return 0;
	}
	for (b = a->atail; b && want; b = prev) {
		uint64_t gs, ge, lo, end, s;

		prev = b->aprev;
		if (b->state != B_FREE || !full_granules(a, b->off, b->size))
			continue;
		gs = rdup(b->off, g);
		ge = rddn(b->off + b->size, g);
		end = b->off + b->size;
		lo = ge;
		while (lo > gs && want) {
			s = (lo - g) / g;
			if (a->be->unmap(a->bep, slot_va(a, s), g))
				break;
			a->slots[s].mapped = 0;
			if (to_pool && (a->npool + 1) * g <= a->handle_pool &&
			    pool_push(a, a->slots[s].handle) == 0) {
				/* still charged */
			} else if (a->be->release(a->bep, a->slots[s].handle) == 0) {
				freed += g;
			} else {
				pool_push(a, a->slots[s].handle);	/* keep it charged */
			}
			lo -= g;
			want--;
		}
		if (lo == ge)
			continue;
		/* b becomes [b->off, lo); a new block for [ge, end). */
		free_remove(a, b);
		a->mapped -= ge - lo;
		if (end > ge) {
			struct blk *t = blk_new(a);

			if (t) {
				t->off = ge;
				t->size = end - ge;
				addr_insert_after(a, b, t);
				free_insert(a, t);
			} else {
				/* cannot happen in practice; account it as lost */
				a->mapped -= end - ge;
			}
		}
		if (lo > b->off) {
			b->size = lo - b->off;
			free_insert(a, b);
		} else {
			addr_remove(a, b);
			blk_put(a, b);
		}
	}
	return freed;
}

static void enforce_retention(struct nxq_arena *a)
{
	uint64_t over;

	if (a->idle <= a->retain_idle)
		return;
	over = a->idle - a->retain_idle;
	k_uncharge(a, release_granules(a, rdup(over, a->granule) / a->granule, 1));
	report_reclaimable(a);
}

/* ---- pending (stream-ordered) frees ---- */

static void pending_complete(struct nxq_arena *a, struct blk *b)
{
	if (b->fprev)
		b->fprev->fnext = b->fnext;
	else
		a->pend_head = b->fnext;
	if (b->fnext)
		b->fnext->fprev = b->fprev;
	else
		a->pend_tail = b->fprev;
	b->fprev = b->fnext = NULL;
	a->be->fence_free(a->bep, b->fence);
	b->fence = NULL;
	a->pending -= b->size;
	free_coalesce(a, b);
}

/* mode 0: complete the done prefix of the FIFO; 1: scan all; 2: wait all. */
static void poll_pending(struct nxq_arena *a, int mode)
{
	struct blk *b, *n;

	for (b = a->pend_head; b; b = n) {
		int q;

		n = b->fnext;
		q = mode == 2 ? (a->be->fence_wait(a->bep, b->fence) == 0 ? 1 : -1)
			      : a->be->fence_query(a->bep, b->fence);
		if (q == 1 || (mode == 2 && q < 0))
			pending_complete(a, b);
		else if (mode == 0)
			break;
	}
}

/* ---- options ---- */

static int opt_size(uint64_t opt, const char *env, uint64_t def, int zero_ok,
		    const char *what, uint64_t *out)
{
	int r;

	if (opt == NXQ_OPT_ZERO) {
		if (!zero_ok)
			return nxq__err(-EINVAL, "nxquota: %s cannot be 0", what);
		*out = 0;
		return 0;
	}
	if (opt) {
		*out = opt;
		return 0;
	}
	r = nxq__env_size(env, out);
	if (r < 0)
		return r;
	if (r == 0)
		*out = def;
	else if (!*out && !zero_ok)
		return nxq__err(-EINVAL, "nxquota: environment %s cannot be 0", env);
	return 0;
}

#define GiB (1ULL << 30)
#define MiB (1ULL << 20)

static int read_arena_opts(const struct nxq_arena_opts *in, struct nxq_arena_opts *o,
			   uint64_t *va, uint64_t *batch, uint64_t *retain, uint64_t *pool,
			   uint64_t *gran, uint64_t *wait_ms)
{
	const unsigned char *p = (const void *)in;
	int r;

	memset(o, 0, sizeof(*o));
	if (in) {
		if (in->size < NXQ_ARENA_OPTS_SIZE_VER0)
			return nxq__err(-EINVAL, "nxquota: nxq_arena_opts.size %u is below the "
					"first version (%u)", in->size, NXQ_ARENA_OPTS_SIZE_VER0);
		if (in->size > 4096)
			return nxq__err(-E2BIG, "nxquota: nxq_arena_opts.size %u is above 4096",
					in->size);
		for (uint32_t i = sizeof(*o); i < in->size; i++)
			if (p[i])
				return nxq__err(-E2BIG, "nxquota: nxq_arena_opts has non-zero bytes "
						"past the fields this library knows (offset %u)", i);
		memcpy(o, in, in->size < sizeof(*o) ? in->size : sizeof(*o));
	}
	if (o->flags || o->pad)
		return nxq__err(-EINVAL, "nxquota: nxq_arena_opts.flags/pad must be 0");
	if (o->backend > NXQ_BACKEND_CUDA)
		return nxq__err(-EINVAL, "nxquota: unknown backend %u", o->backend);
	if (o->priority > NXQ_PRIORITY_MAX)
		return nxq__err(-EINVAL, "nxquota: priority %u above %u", o->priority,
				NXQ_PRIORITY_MAX);
	if (o->device_key && (!*o->device_key ||
			      strlen(o->device_key) >= NXQ_DEVICE_KEY_MAX))
		return nxq__err(-EINVAL, "nxquota: device key must be 1..%d characters",
				NXQ_DEVICE_KEY_MAX - 1);
	if ((r = opt_size(o->va_size, "NXQ_VA_SIZE", 64 * GiB, 0, "va_size", va)) ||
	    (r = opt_size(o->grow_batch, "NXQ_GROW_BATCH", 32 * MiB, 0, "grow_batch", batch)) ||
	    (r = opt_size(o->retain_idle, "NXQ_RETAIN_IDLE", 64 * MiB, 1, "retain_idle", retain)) ||
	    (r = opt_size(o->handle_pool, "NXQ_HANDLE_POOL", 64 * MiB, 1, "handle_pool", pool)) ||
	    (r = opt_size(o->granule, "NXQ_GRANULE", 0, 0, "granule", gran)))
		return r;
	if (o->grow_timeout_ms == NXQ_OPT_ZERO) {
		*wait_ms = 0;
	} else if (o->grow_timeout_ms) {
		if (o->grow_timeout_ms > 86400000ULL)
			return nxq__err(-EINVAL, "nxquota: grow_timeout_ms above a day");
		*wait_ms = o->grow_timeout_ms;
	} else {
		*wait_ms = 0;
		r = nxq__env_ms("NXQ_GROW_TIMEOUT_MS", wait_ms);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- public entry points ---- */

int nxq__arena_create_be(struct nxq_ctx *ctx, const struct nxq_arena_opts *opts,
			 const struct nxq_be_ops *be, struct nxq_arena **arenap)
{
	struct nxq_holder_reg reg = { .size = sizeof(reg), .eventfd = -1 };
	struct nxq_arena_opts o;
	struct nxq_be_cfg cfg = { 0 };
	struct nxq_arena *a;
	uint64_t va, batch, retain, pool, gran, wait_ms;
	char key[NXQ_DEVICE_KEY_MAX] = "";
	int r;

	if (!arenap || !ctx)
		return nxq__err(-EINVAL, "nxquota: NULL context or arenap");
	*arenap = NULL;
	r = read_arena_opts(opts, &o, &va, &batch, &retain, &pool, &gran, &wait_ms);
	if (r)
		return r;
	if (wait_ms && ctx->managed && !(ctx->features & NXQ_FEAT_CHARGE_WAIT))
		return nxq__err(-EOPNOTSUPP, "nxquota: a grow timeout of %llu ms needs a module "
				"with NXQ_FEAT_CHARGE_WAIT (features 0x%llx); set it to 0",
				(unsigned long long)wait_ms, (unsigned long long)ctx->features);
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
	a->retain_idle = retain;
	a->handle_pool = pool;
	a->slots = calloc(a->nslots, sizeof(*a->slots));
	a->hmask = 1023;
	a->htab = calloc(a->hmask + 1, sizeof(*a->htab));
	if (!a->slots || !a->htab) {
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
		r = nxq__pressure_attach(ctx, a, a->evfd);	/* sets the message */
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
	free(a->htab);
	pthread_mutex_destroy(&a->lock);
	free(a);
	return r;
}

NXQ_API int nxq_arena_create(struct nxq_ctx *ctx, const struct nxq_arena_opts *opts,
			     struct nxq_arena **arenap)
{
	return nxq__arena_create_be(ctx, opts, NULL, arenap);
}

static int norm_req(uint64_t *size, uint64_t *align)
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
	return 0;
}

NXQ_API int nxq_alloc(struct nxq_arena *a, size_t size_, size_t align_, void **ptrp)
{
	uint64_t size = size_, align = align_, start;
	struct blk *b;
	int r;

	if (!a || !ptrp)
		return nxq__err(-EINVAL, "nxquota: NULL arena or ptrp");
	r = norm_req(&size, &align);
	if (r)
		return r;
	if (size > a->va_size || align > a->va_size)
		return nxq__err(-ENOMEM, "nxquota: %llu bytes do not fit the VA range",
				(unsigned long long)size);
	pthread_mutex_lock(&a->lock);
	if (a->pend_head)
		poll_pending(a, 0);
	b = find_fit(a, size, align);
	if (!b && a->pend_head) {
		poll_pending(a, 1);
		b = find_fit(a, size, align);
	}
	if (!b) {
		r = grow(a, size, align);
		if (r && a->pend_head) {
			/* Refused: wait for stream frees rather than fail. */
			poll_pending(a, 2);
			b = find_fit(a, size, align);
			if (!b)
				r = grow(a, size, align);
		}
		if (r && !b && refused(r) && a->grow_timeout_ns && !nxq__in_handler(a->ctx)) {
			/* Still refused: wait for the module's grant (never on the
			 * pressure handler: it would stall every other ticket). */
			r = grow_wait(a, size, align);
			if (r && (b = find_fit(a, size, align)) != NULL)
				r = 0;	/* freed by another thread meanwhile */
		}
		if (r && !b)
			goto out;
		if (!b)
			b = find_fit(a, size, align);
		if (!b) {
			r = nxq__err(-EFAULT, "nxquota: internal error: no fit after growth");
			goto out;
		}
	}
	if (a->hcount >= a->hmask && hash_grow(a)) {
		r = nxq__err(-ENOMEM, "nxquota: out of memory");
		goto out;
	}
	start = align_up(a->base + b->off, align) - a->base;
	free_remove(a, b);
	if (start > b->off) {
		struct blk *lead = blk_new(a);

		if (!lead) {
			free_insert(a, b);
			r = nxq__err(-ENOMEM, "nxquota: out of memory");
			goto out;
		}
		lead->off = b->off;
		lead->size = start - b->off;
		addr_insert_after(a, b->aprev, lead);
		free_insert(a, lead);
		b->off = start;
		b->size -= lead->size;
	}
	if (b->size > size) {
		struct blk *t = blk_new(a);

		if (t) {
			t->off = b->off + size;
			t->size = b->size - size;
			addr_insert_after(a, b, t);
			free_insert(a, t);
			b->size = size;
		}
		/* else: hand out the whole block; size is rounded up */
	}
	b->state = B_USED;
	hash_insert(a, b);
	a->in_use += b->size;
	a->allocs++;
	*ptrp = (void *)(uintptr_t)(a->base + b->off);
	r = 0;
out:
	pthread_mutex_unlock(&a->lock);
	return r;
}

static struct blk *take_used(struct nxq_arena *a, void *ptr)
{
	uint64_t p = (uintptr_t)ptr;

	if (p < a->base || p >= a->base + a->va_size)
		return NULL;
	return hash_take(a, p - a->base);
}

NXQ_API int nxq_free(struct nxq_arena *a, void *ptr)
{
	struct blk *b;

	if (!a)
		return nxq__err(-EINVAL, "nxquota: NULL arena");
	if (!ptr)
		return 0;
	pthread_mutex_lock(&a->lock);
	b = take_used(a, ptr);
	if (!b) {
		pthread_mutex_unlock(&a->lock);
		return nxq__err(-EINVAL, "nxquota: %p was not allocated by this arena or is "
				"already freed", ptr);
	}
	a->in_use -= b->size;
	a->frees++;
	free_coalesce(a, b);
	if (a->idle > a->retain_idle && !a->in_pressure)
		enforce_retention(a);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

NXQ_API int nxq_free_async(struct nxq_arena *a, void *ptr, void *stream)
{
	struct blk *b;
	void *fence = NULL;
	int r;

	if (!a)
		return nxq__err(-EINVAL, "nxquota: NULL arena");
	if (!ptr)
		return 0;
	pthread_mutex_lock(&a->lock);
	b = take_used(a, ptr);
	if (!b) {
		pthread_mutex_unlock(&a->lock);
		return nxq__err(-EINVAL, "nxquota: %p was not allocated by this arena or is "
				"already freed", ptr);
	}
	r = a->be->fence_record(a->bep, stream, &fence);
	if (r) {
		hash_insert(a, b);	/* still in use: the caller keeps it */
		pthread_mutex_unlock(&a->lock);
		return nxq__err(r, "nxquota: %s: cannot record a fence on stream %p", a->key,
				stream);
	}
	b->state = B_PENDING;
	b->fence = fence;
	b->fnext = NULL;
	b->fprev = a->pend_tail;
	if (a->pend_tail)
		a->pend_tail->fnext = b;
	else
		a->pend_head = b;
	a->pend_tail = b;
	a->in_use -= b->size;
	a->pending += b->size;
	a->frees++;
	pthread_mutex_unlock(&a->lock);
	return 0;
}

NXQ_API int64_t nxq_arena_trim(struct nxq_arena *a, uint64_t target, unsigned int flags)
{
	uint64_t before, freed = 0, g;

	if (!a)
		return nxq__err(-EINVAL, "nxquota: NULL arena");
	if (flags & ~NXQ_TRIM_WAIT)
		return nxq__err(-EINVAL, "nxquota: unknown trim flags 0x%x", flags);
	pthread_mutex_lock(&a->lock);
	g = a->granule;
	before = a->charged - a->owed;
	if (a->pend_head)
		poll_pending(a, (flags & NXQ_TRIM_WAIT) ? 2 : 1);
	/* Retained handles first: they cost nothing to drop. */
	while (a->npool && before - freed > target) {
		uint64_t h = a->pool[a->npool - 1];

		if (a->be->release(a->bep, h))
			break;
		a->npool--;
		freed += g;
	}
	if (before - freed > target)
		freed += release_granules(a, rdup(before - freed - target, g) / g, 0);
	k_uncharge(a, freed);
	report_reclaimable(a);
	pthread_mutex_unlock(&a->lock);
	return (int64_t)freed;
}

NXQ_API int nxq_arena_report(struct nxq_arena *a)
{
	if (!a)
		return nxq__err(-EINVAL, "nxquota: NULL arena");
	pthread_mutex_lock(&a->lock);
	if (a->pend_head)
		poll_pending(a, 1);
	report_reclaimable(a);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

NXQ_API int nxq_arena_stats(struct nxq_arena *a, struct nxq_stats *st)
{
	struct nxq_stats s = { 0 };
	uint32_t size;

	if (!a || !st)
		return nxq__err(-EINVAL, "nxquota: NULL arena or stats");
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
	s.pending = a->pending;
	s.free = a->free_bytes;
	s.idle = a->idle;
	s.retained = a->npool * a->granule;
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

NXQ_API int nxq_arena_destroy(struct nxq_arena *a)
{
	uint64_t g;

	if (!a)
		return 0;
	if (a->ctx->pressure && nxq__pressure_detach(a->ctx, a))
		return -EDEADLK;	/* from a callback: message set */
	pthread_mutex_lock(&a->lock);
	g = a->granule;
	poll_pending(a, 2);
	a->be->quiesce(a->bep);
	for (uint64_t s = 0; s < a->nslots; s++) {
		if (!a->slots[s].mapped)
			continue;
		a->be->unmap(a->bep, slot_va(a, s), g);
		a->be->release(a->bep, a->slots[s].handle);
		a->slots[s].mapped = 0;
	}
	while (a->npool)
		a->be->release(a->bep, a->pool[--a->npool]);
	k_uncharge(a, a->charged);
	a->ctx->kops->holder_unregister(a->ctx, a->holder);
	a->be->unreserve(a->bep, a->base, a->va_size);
	a->be->close(a->bep);
	pthread_mutex_unlock(&a->lock);
	{
		struct slab_node *n = a->slabs, *nx;

		for (; n; n = nx) {
			nx = n->next;
			free(n->slab);
			free(n);
		}
	}
	__atomic_sub_fetch(&a->ctx->narenas, 1, __ATOMIC_ACQ_REL);
	while (a->cbs) {
		struct reclaim_node *c = a->cbs;

		a->cbs = c->next;
		free(c);
	}
	if (a->evfd >= 0)
		close(a->evfd);
	free(a->slots);
	free(a->htab);
	free(a->pool);
	pthread_mutex_destroy(&a->lock);
	free(a);
	return 0;
}

/* ---- pressure: reclaim callbacks and tickets ---- */

NXQ_API int nxq_arena_add_reclaim(struct nxq_arena *a, nxq_reclaim_fn cb, void *user)
{
	struct reclaim_node *n, **pp;

	if (!a || !cb)
		return nxq__err(-EINVAL, "nxquota: NULL arena or callback");
	n = calloc(1, sizeof(*n));
	if (!n)
		return nxq__err(-ENOMEM, "nxquota: out of memory");
	n->fn = cb;
	n->user = user;
	pthread_mutex_lock(&a->lock);
	for (pp = &a->cbs; *pp; pp = &(*pp)->next)
		if ((*pp)->fn == cb && (*pp)->user == user && !(*pp)->dead) {
			pthread_mutex_unlock(&a->lock);
			free(n);
			return nxq__err(-EEXIST, "nxquota: this callback and user pointer are "
					"already registered");
		}
	*pp = n;		/* appended: callbacks run in registration order */
	pthread_mutex_unlock(&a->lock);
	return 0;
}

/* Unlink and free dead nodes; the caller holds plock (or there is no handler). */
static void reap_dead(struct nxq_arena *a)
{
	struct reclaim_node **pp = &a->cbs;

	while (*pp) {
		struct reclaim_node *n = *pp;

		if (n->dead) {
			*pp = n->next;
			free(n);
		} else {
			pp = &n->next;
		}
	}
}

NXQ_API int nxq_arena_remove_reclaim(struct nxq_arena *a, nxq_reclaim_fn cb, void *user)
{
	struct nxq_ctx *ctx;
	int found = 0, inside;

	if (!a || !cb)
		return nxq__err(-EINVAL, "nxquota: NULL arena or callback");
	ctx = a->ctx;
	inside = nxq__in_handler(ctx);
	/* Wait for a handling pass in progress, unless this is it. */
	if (ctx->pressure && !inside)
		pthread_mutex_lock(&ctx->plock);
	pthread_mutex_lock(&a->lock);
	for (struct reclaim_node *n = a->cbs; n; n = n->next)
		if (n->fn == cb && n->user == user && !n->dead) {
			n->dead = 1;
			found = 1;
			break;
		}
	if (!inside)
		reap_dead(a);	/* else the handler reaps after its walk */
	pthread_mutex_unlock(&a->lock);
	if (ctx->pressure && !inside)
		pthread_mutex_unlock(&ctx->plock);
	return found ? 0 : nxq__err(-ENOENT, "nxquota: no such reclaim callback");
}

static struct reclaim_node *next_live(struct reclaim_node *n)
{
	while (n && n->dead)
		n = n->next;
	return n;
}

static uint64_t granules_for(const struct nxq_arena *a, uint64_t bytes)
{
	return rdup(bytes, a->granule) / a->granule;
}

/*
 * Release towards want (bytes, counting what is already owed): retained
 * handles, idle granules, then each callback followed by a trim of what it
 * made idle.  Everything released is added to a->owed; the module is told
 * by the answer.  Called with plock held and the arena lock not held.
 */
static void release_for(struct nxq_arena *a, uint64_t want)
{
	struct reclaim_node *n;

	pthread_mutex_lock(&a->lock);
	if (a->owed >= want)
		goto out;
	a->in_pressure = 1;
	if (a->pend_head)
		poll_pending(a, 1);	/* completed stream frees become idle */
	/* 1. retained physical handles: nothing mapped, nothing to wait for */
	while (a->npool && a->owed < want) {
		if (a->be->release(a->bep, a->pool[a->npool - 1])) {
			a->kernel_errors++;
			break;
		}
		a->npool--;
		a->owed += a->granule;
	}
	/* 2. idle granules (FREE blocks only) */
	if (a->owed < want)
		a->owed += release_granules(a, granules_for(a, want - a->owed), 0);
	/* 3. the application's callbacks, in registration order */
	for (n = next_live(a->cbs); n && a->owed < want; n = next_live(n->next)) {
		nxq_reclaim_fn fn = n->fn;
		void *user = n->user;
		uint64_t ask = want - a->owed;
		int r;

		a->reclaim_calls++;
		pthread_mutex_unlock(&a->lock);
		r = fn(a, ask, user);
		pthread_mutex_lock(&a->lock);
		if (r < 0)
			a->reclaim_errors++;
		if (a->pend_head)
			poll_pending(a, 1);
		a->owed += release_granules(a, granules_for(a, want - a->owed), 0);
	}
	a->in_pressure = 0;
	reap_dead(a);
out:
	pthread_mutex_unlock(&a->lock);
}

static void emit_answer(struct nxq_arena *a, const struct nxq_ticket *t, uint64_t released,
			uint64_t charged, int err)
{
	struct nxq_event ev = { .size = sizeof(ev), .type = NXQ_EVENT_ANSWER, .arena = a,
				.generation = t->generation, .released = released,
				.charged = charged, .error = err };

	nxq__emit(a->ctx, &ev);
}

int nxq__arena_handle_tickets(struct nxq_arena *a)
{
	const struct nxq_kops *k = a->ctx->kops;
	int handled = 0, stale = 0;

	for (;;) {
		struct nxq_ticket t;
		struct nxq_event ev = { .size = sizeof(ev), .type = NXQ_EVENT_TICKET, .arena = a };
		uint64_t released, charged = 0;
		int r;

		r = k->ticket_read(a->ctx, a->holder, &t);
		if (r) {
			pthread_mutex_lock(&a->lock);
			if (r != -EAGAIN)
				a->kernel_errors++;
			if (a->owed) {
				/* The ticket went away (its asker gave up) after we
				 * released: give the bytes back with a plain uncharge. */
				k_uncharge(a, a->owed);
				a->owed = 0;
			}
			enforce_retention(a);
			report_reclaimable(a);
			pthread_mutex_unlock(&a->lock);
			break;
		}
		handled++;
		pthread_mutex_lock(&a->lock);
		a->tickets++;
		a->last_gen = t.generation;
		pthread_mutex_unlock(&a->lock);
		ev.generation = t.generation;
		ev.bytes_wanted = t.bytes;
		ev.deadline_ns = t.deadline_ns;
		ev.reason = t.reason;
		ev.level = t.level;
		nxq__emit(a->ctx, &ev);

		release_for(a, t.bytes);
		pthread_mutex_lock(&a->lock);
		released = a->owed;
		pthread_mutex_unlock(&a->lock);
		r = k->ticket_answer(a->ctx, a->holder, t.generation, released, &charged);
		pthread_mutex_lock(&a->lock);
		if (r == -ESTALE && ++stale <= 64) {
			/* Raised (or closed) since we read it: nothing was uncharged;
			 * read it again and answer the new generation with all of it. */
			a->stale_answers++;
			pthread_mutex_unlock(&a->lock);
			continue;
		}
		if (r) {
			a->kernel_errors++;
			k_uncharge(a, a->owed);
		} else {
			a->charged -= released;
			a->answers++;
			a->answered_bytes += released;
		}
		a->owed = 0;
		charged = a->charged;
		report_reclaimable(a);
		pthread_mutex_unlock(&a->lock);
		emit_answer(a, &t, released, charged, r);
	}
	return handled;
}

void nxq__arena_report_changed(struct nxq_arena *a)
{
	pthread_mutex_lock(&a->lock);
	if (a->pend_head)
		poll_pending(a, 1);
	report_reclaimable(a);
	pthread_mutex_unlock(&a->lock);
}

int nxq__arena_evfd(const struct nxq_arena *a)
{
	return a->evfd;
}
