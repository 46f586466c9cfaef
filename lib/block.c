// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The block allocator of an arena (see arena.h for the objects): blocks
 * from slabs, the address list, size bins (the arena's FREE bins and one
 * set per stream for OWNED blocks), best fit, the pointer hash of USED
 * blocks, and stream-ordered frees (stream ownership, fences, the
 * pending FIFO), and the segments' busy bytes that block state changes
 * move (nxq__seg_account(): mapping.c makes the segments, this file
 * counts what of them is busy).  Everything here runs under arena->lock
 * and makes no system call except the backend's fence calls.
 *
 * Layer: calls only err.c and the backend's fence ops; block.h is its
 * interface.  It works on the arena's block fields (arena.h, "block.c").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "arena.h"

/* ---- segments' busy bytes ---- */

/*
 * busy 1: [off, off+size) stops being FREE; 0: becomes FREE after its
 * stream's fence completed; 2: becomes FREE by a plain free (device work
 * queued before it may still touch it: see nxq__release_idle()).
 */
void nxq__seg_account(struct nxq_arena *a, uint64_t off, uint64_t size, int busy)
{
	uint64_t end = off + size;

	while (off < end) {
		struct seg *s = a->slots[off / a->granule];
		uint64_t e = s->off + s->size < end ? s->off + s->size : end;

		if (busy == 1) {
			if (!s->busy)
				a->idle -= s->size;
			s->busy += e - off;
		} else {
			s->busy -= e - off;
			if (!s->busy)
				a->idle += s->size;
			if (busy == 2)
				s->fseq = a->free_seq;
		}
		off = e;
	}
}

/* ---- blocks ---- */

static int slab_add(struct nxq_arena *a)
{
	struct slab_node *n = malloc(sizeof(*n));
	struct blk *slab = calloc(SPARE_SLAB, sizeof(*slab));

	if (!n || !slab) {
		free(n);
		free(slab);
		return -ENOMEM;
	}
	n->slab = slab;
	SLIST_INSERT_HEAD(&a->slabs, n, link);
	for (int i = 0; i < SPARE_SLAB; i++)
		SLIST_INSERT_HEAD(&a->spare, &slab[i], hlink);
	return 0;
}

struct blk *nxq__blk_new(struct nxq_arena *a)
{
	struct blk *b;

	if (SLIST_EMPTY(&a->spare) && slab_add(a))
		return NULL;
	b = SLIST_FIRST(&a->spare);
	SLIST_REMOVE_HEAD(&a->spare, hlink);
	memset(b, 0, sizeof(*b));
	return b;
}

void nxq__blk_put(struct nxq_arena *a, struct blk *b)
{
	b->state = 0;
	SLIST_INSERT_HEAD(&a->spare, b, hlink);
}

int nxq__blk_reserve(struct nxq_arena *a, int n)
{
	struct blk *b;
	int have = 0;

	SLIST_FOREACH(b, &a->spare, hlink)
		if (++have >= n)
			return 0;
	return slab_add(a);
}

int nxq__blk_init(struct nxq_arena *a)
{
	TAILQ_INIT(&a->addr);
	TAILQ_INIT(&a->pend);
	TAILQ_INIT(&a->streams);
	SLIST_INIT(&a->spare);
	SLIST_INIT(&a->slabs);
	for (int i = 0; i < NBINS; i++)
		LIST_INIT(&a->free_bs.bins[i]);
	a->hmask = 1023;
	a->htab = calloc(a->hmask + 1, sizeof(*a->htab));
	return a->htab ? 0 : -ENOMEM;
}

void nxq__blk_fini(struct nxq_arena *a)
{
	struct slab_node *n;
	struct nxq_stream *s;

	while ((n = SLIST_FIRST(&a->slabs))) {
		SLIST_REMOVE_HEAD(&a->slabs, link);
		free(n->slab);
		free(n);
	}
	while ((s = TAILQ_FIRST(&a->streams))) {
		TAILQ_REMOVE(&a->streams, s, link);
		free(s);
	}
	free(a->htab);
}

/* ---- bins ---- */

static unsigned int bin_of(uint64_t bytes)
{
	uint64_t q = bytes >> QSHIFT;
	unsigned int lg;

	if (q < 4)
		return (unsigned int)q;
	lg = 63 - __builtin_clzll(q);
	return lg * 4 + (unsigned int)((q >> (lg - 2)) & 3);
}

static struct binset *bs_of(struct nxq_arena *a, struct nxq_stream *owner)
{
	return owner ? &owner->bs : &a->free_bs;
}

/* b becomes FREE (owner NULL) or OWNED by owner, in the matching bins. */
void nxq__free_insert(struct nxq_arena *a, struct blk *b, struct nxq_stream *owner)
{
	struct binset *bs = bs_of(a, owner);
	unsigned int i = bin_of(b->size);

	b->state = owner ? B_OWNED : B_FREE;
	b->owner = owner;
	b->bin = i;
	LIST_INSERT_HEAD(&bs->bins[i], b, flink);
	bs->map[i / 64] |= 1ULL << (i % 64);
	bs->bytes += b->size;
	if (owner)
		a->owned += b->size;
}

void nxq__free_remove(struct nxq_arena *a, struct blk *b)
{
	struct binset *bs = bs_of(a, b->owner);
	unsigned int i = b->bin;

	LIST_REMOVE(b, flink);
	if (LIST_EMPTY(&bs->bins[i]))
		bs->map[i / 64] &= ~(1ULL << (i % 64));
	bs->bytes -= b->size;
	if (b->owner)
		a->owned -= b->size;
	b->state = 0;
	b->owner = NULL;
}

static int same_class(const struct blk *x, const struct blk *b, struct nxq_stream *owner)
{
	if (x->off + x->size != b->off && b->off + b->size != x->off)
		return 0;
	return (x->state == B_FREE && !owner) ||
	       (x->state == B_OWNED && owner && x->owner == owner);
}

/* Make b FREE (owner NULL) or OWNED by owner, merging neighbours of that kind. */
void nxq__coalesce(struct nxq_arena *a, struct blk *b, struct nxq_stream *owner)
{
	struct blk *p = TAILQ_PREV(b, blk_tailq, alink), *n = TAILQ_NEXT(b, alink);

	if (p && same_class(p, b, owner)) {
		nxq__free_remove(a, p);
		b->off = p->off;
		b->size += p->size;
		TAILQ_REMOVE(&a->addr, p, alink);
		nxq__blk_put(a, p);
	}
	if (n && same_class(n, b, owner)) {
		nxq__free_remove(a, n);
		b->size += n->size;
		TAILQ_REMOVE(&a->addr, n, alink);
		nxq__blk_put(a, n);
	}
	nxq__free_insert(a, b, owner);
}

static int next_bin(const struct binset *bs, unsigned int from)
{
	for (unsigned int w = from / 64; w < NBINS / 64; w++) {
		uint64_t m = bs->map[w];

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

/*
 * Where a request goes in one set of bins.  A request of at least 1 MiB
 * (PyTorch's small/large boundary) takes the block at the lowest address
 * that holds it: address-ordered first fit, found by looking at every
 * block in the bins that may hold it (few: on the H200 trace 4 a request,
 * at most 27).  A smaller request takes the smallest block that holds it
 * (best fit; the first exact fit at once, the bin's LIFO order among
 * equals).
 *
 * Large blocks packed low keep the highest mapped bytes free, so that a
 * growth finds a free block at the top and maps only what is missing
 * (tail_need() in mapping.c); and which hole a large request takes no
 * longer depends on the order of frees (stream-ordered and plain frees
 * map the same on the traces below).  Peak mapped MiB on the fake driver
 * (tests/lib/replay, which make check bounds), best fit with a69748d's
 * tie-break (equal sizes: the lowest address for large requests) ->
 * this rule:
 *   the H200's own tensor-route requests (trace-h200-tensor), stream-
 *     ordered / plain frees            7254 / 7250 -> 7150 / 7150
 *     (expandable segments: 7238)
 *   expandable-segments traces, small / decoder (caching allocator:
 *     1004 / 7238): alone              1000 / 7198 ->  990 / 7128
 *     plain frees                      1000 / 7224 ->  990 / 7128
 *     --chain, either kind of free     1000 / 7180 ->  990 / 7126
 *   the decoder with grow_batch 2M, 16M, 64M: 7198, 7198, 7240 -> 7128
 *   bench_gpu --short section 5 (plain / stream-ordered):
 *     1028 / 1022 -> 1000 / 1010; over 8 seeds of its workload the sums
 *     of peaks fell 2% / 3%, and stream-ordered over plain stayed <= 1.04x
 *     (best fit: up to 1.08x).
 * Best fit with other tie-breaks (LIFO, lowest or highest address for
 * all), PyTorch's no-split rule, 512-byte rounding, carving small
 * requests from a block's high end, a 2 MiB or 4 MiB boundary: each
 * failed at least one of these figures (+-50 MiB, better on one trace,
 * worse on another).  First fit for every size mapped 30 MiB less on the
 * traces but made the warm alloc+free pair ~30% slower (it scans every
 * free block for a small request).  The whole table:
 * bench/results/replay-placement-11d12a0.txt (issue 12).
 */
static struct blk *fit_in(struct nxq_arena *a, struct binset *bs, uint64_t size,
			  uint64_t align)
{
	struct blk *best = NULL, *b;
	int i;

	if (size >= MiB) {
		for (i = next_bin(bs, bin_of(size)); i >= 0; i = next_bin(bs, (unsigned int)i + 1))
			LIST_FOREACH(b, &bs->bins[i], flink)
				if (b->size >= size && (!best || b->off < best->off) &&
				    fits(a, b, size, align))
					best = b;
		return best;
	}
	for (i = next_bin(bs, bin_of(size)); i >= 0; i = next_bin(bs, (unsigned int)i + 1)) {
		LIST_FOREACH(b, &bs->bins[i], flink) {
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

/*
 * The block fit_in() picks among FREE blocks and, for an allocation on
 * stream s, the blocks s owns (safe on s at once): of the two, the lower
 * one for a request of at least 1 MiB, else the smaller.
 */
struct blk *nxq__find_fit(struct nxq_arena *a, struct nxq_stream *s, uint64_t size,
			  uint64_t align)
{
	struct blk *f = a->free_bs.bytes >= size ? fit_in(a, &a->free_bs, size, align) : NULL;
	struct blk *o = s && s->bs.bytes >= size ? fit_in(a, &s->bs, size, align) : NULL;

	if (!o)
		return f;
	if (!f || (size >= MiB ? o->off < f->off : o->size <= f->size))
		return o;
	return f;
}

/* ---- pointer hash (USED blocks) ---- */

static inline uint64_t hslot(uint64_t off, uint64_t mask)
{
	return ((off >> QSHIFT) * 0x9E3779B97F4A7C15ULL >> 20) & mask;
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
			uint64_t h = hslot(b->off, n - 1);

			nx = SLIST_NEXT(b, hlink);
			SLIST_NEXT(b, hlink) = t[h];
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
	uint64_t h = hslot(b->off, a->hmask);

	SLIST_NEXT(b, hlink) = a->htab[h];
	a->htab[h] = b;
	a->hcount++;
}

struct blk *nxq__take_used(struct nxq_arena *a, void *ptr)
{
	uint64_t p = (uintptr_t)ptr, off;
	struct blk **pp;

	if (p < a->base || p >= a->base + a->va_size)
		return NULL;
	off = p - a->base;
	for (pp = &a->htab[hslot(off, a->hmask)]; *pp; pp = &SLIST_NEXT(*pp, hlink)) {
		struct blk *b = *pp;

		if (b->off == off) {
			*pp = SLIST_NEXT(b, hlink);
			SLIST_NEXT(b, hlink) = NULL;
			a->hcount--;
			return b;
		}
	}
	return NULL;
}

/*
 * Hand out size bytes at align from the FREE or OWNED block b: what is
 * left on either side keeps b's kind.  Returns 0 with *off, or -ENOMEM
 * (nothing changed).
 */
int nxq__take(struct nxq_arena *a, struct blk *b, uint64_t size, uint64_t align, uint64_t *off)
{
	struct nxq_stream *owner = b->owner;
	uint64_t start = align_up(a->base + b->off, align) - a->base;
	int was_free = b->state == B_FREE;

	if (a->hcount >= a->hmask && hash_grow(a))
		return -ENOMEM;
	if (nxq__blk_reserve(a, 2))
		return -ENOMEM;
	nxq__free_remove(a, b);
	if (start > b->off) {
		struct blk *lead = nxq__blk_new(a);

		lead->off = b->off;
		lead->size = start - b->off;
		TAILQ_INSERT_BEFORE(b, lead, alink);
		nxq__free_insert(a, lead, owner);
		b->off = start;
		b->size -= lead->size;
	}
	if (b->size > size) {
		struct blk *t = nxq__blk_new(a);

		t->off = b->off + size;
		t->size = b->size - size;
		TAILQ_INSERT_AFTER(&a->addr, b, t, alink);
		nxq__free_insert(a, t, owner);
		b->size = size;
	}
	b->state = B_USED;
	hash_insert(a, b);
	if (was_free)
		nxq__seg_account(a, b->off, b->size, 1);
	a->in_use += b->size;
	*off = b->off;
	return 0;
}

/* Freshly mapped memory [off, off+size): a FREE block (a spare is reserved). */
void nxq__insert_mapped(struct nxq_arena *a, uint64_t off, uint64_t size)
{
	struct blk *b = nxq__blk_new(a), *p;

	b->off = off;
	b->size = size;
	TAILQ_FOREACH_REVERSE(p, &a->addr, blk_tailq, alink)
		if (p->off < off)
			break;
	if (p)
		TAILQ_INSERT_AFTER(&a->addr, p, b, alink);
	else
		TAILQ_INSERT_HEAD(&a->addr, b, alink);
	nxq__coalesce(a, b, NULL);
}

/* ---- streams ---- */

struct nxq_stream *nxq__stream_find(struct nxq_arena *a, void *handle, int create)
{
	struct nxq_stream *s = a->last_stream;

	if (s && s->handle == handle)
		return s;
	TAILQ_FOREACH(s, &a->streams, link)
		if (s->handle == handle) {
			a->last_stream = s;
			return s;
		}
	if (!create)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->handle = handle;
	for (int i = 0; i < NBINS; i++)
		LIST_INIT(&s->bs.bins[i]);
	TAILQ_INSERT_TAIL(&a->streams, s, link);
	a->last_stream = s;
	return s;
}

/*
 * FREE neighbours of b, a block s owns, join it (FREE memory is safe on s
 * at once); returns the merged block, still OWNED by s.
 */
static struct blk *absorb_block(struct nxq_arena *a, struct blk *b, struct nxq_stream *s)
{
	struct blk *p = TAILQ_PREV(b, blk_tailq, alink), *x = TAILQ_NEXT(b, alink);
	int mp = p && p->state == B_FREE && p->off + p->size == b->off;
	int mn = x && x->state == B_FREE && b->off + b->size == x->off;

	if (!mp && !mn)
		return b;
	nxq__free_remove(a, b);
	if (mp) {
		nxq__seg_account(a, p->off, p->size, 1);
		nxq__free_remove(a, p);
		b->off = p->off;
		b->size += p->size;
		TAILQ_REMOVE(&a->addr, p, alink);
		nxq__blk_put(a, p);
	}
	if (mn) {
		nxq__seg_account(a, x->off, x->size, 1);
		nxq__free_remove(a, x);
		b->size += x->size;
		TAILQ_REMOVE(&a->addr, x, alink);
		nxq__blk_put(a, x);
	}
	nxq__coalesce(a, b, s);
	return b;
}

/*
 * Stream s missed: FREE blocks next to blocks s owns join them, so that a
 * request spanning both can be served without growing.  Walks the address
 * list: only on a miss.
 */
void nxq__absorb(struct nxq_arena *a, struct nxq_stream *s)
{
	struct blk *b;

	if (!s->bs.bytes)
		return;
	for (b = TAILQ_FIRST(&a->addr); b; b = TAILQ_NEXT(b, alink))
		if (b->state == B_OWNED && b->owner == s)
			b = absorb_block(a, b, s);
}

/*
 * b was just freed on s, and every allocation so far was made on s (no
 * plain nxq_alloc(), no other stream; do_alloc() keeps the count): its
 * FREE neighbours join it at once, as a plain free merges them.  Then FREE
 * and OWNED memory serve the same allocations; kept apart, they showed the
 * fit smaller holes than plain frees do, and the stream-ordered peak of
 * bench_gpu's random workload (section 5) was 1.050x the plain one on
 * the H200 and on the fake driver, 1.002x with this (issue 12).
 * Otherwise the merge waits for a miss (nxq__absorb()): FREE memory
 * would be held from other streams and plain allocations until s is
 * fenced.
 */
void nxq__absorb_freed(struct nxq_arena *a, struct blk *b, struct nxq_stream *s)
{
	if (a->alloc_streams == 1 && a->alloc_stream == s->handle)
		absorb_block(a, b, s);
}

/* Record one fence on s and move every block it owns to PENDING behind it: 0 or <0. */
int nxq__fence_stream(struct nxq_arena *a, struct nxq_stream *s)
{
	struct pfence *pf;
	int r;

	if (!s->bs.bytes)
		return 0;
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	r = a->be->fence_record(a->bep, s->handle, &pf->fence);
	if (r) {
		free(pf);
		a->fence_errors++;
		return r;
	}
	for (int i = next_bin(&s->bs, 0); i >= 0; i = next_bin(&s->bs, (unsigned int)i + 1)) {
		struct blk *b;

		while ((b = LIST_FIRST(&s->bs.bins[i]))) {
			nxq__free_remove(a, b);
			b->state = B_PENDING;
			b->pf = pf;
			pf->refs++;
			a->fenced += b->size;
			TAILQ_INSERT_TAIL(&a->pend, b, plink);
		}
	}
	s->unfenced = 0;
	return 0;
}

/* Fence each stream (but except) that owns blocks.  Returns how many failed. */
int nxq__fence_streams(struct nxq_arena *a, struct nxq_stream *except)
{
	struct nxq_stream *s;
	int failed = 0;

	TAILQ_FOREACH(s, &a->streams, link)
		if (s != except && s->bs.bytes && nxq__fence_stream(a, s))
			failed++;
	return failed;
}

static void pending_complete(struct nxq_arena *a, struct blk *b)
{
	struct pfence *pf = b->pf;

	TAILQ_REMOVE(&a->pend, b, plink);
	b->pf = NULL;
	if (--pf->refs == 0) {
		a->be->fence_free(a->bep, pf->fence);
		free(pf);
	}
	a->fenced -= b->size;
	nxq__seg_account(a, b->off, b->size, 0);
	nxq__coalesce(a, b, NULL);
}

void nxq__poll_pending(struct nxq_arena *a, int mode)
{
	struct blk *b, *n;

	for (b = TAILQ_FIRST(&a->pend); b; b = n) {
		struct pfence *pf = b->pf;

		n = TAILQ_NEXT(b, plink);
		if (!pf->done) {
			int q = mode == 2 ? (a->be->fence_wait(a->bep, pf->fence) == 0 ? 1 : -1)
					  : a->be->fence_query(a->bep, pf->fence);

			/* a failed wait: the stream is broken; nothing will run on it */
			if (q == 1 || (mode == 2 && q < 0))
				pf->done = 1;
			else if (q < 0)
				a->fence_errors++;
		}
		if (pf->done)
			pending_complete(a, b);
		else if (mode == 0)
			break;
	}
}
