/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * An arena's internals, shared by the files that implement it:
 *
 *   block.c    the block allocator: blocks, size bins, the pointer hash,
 *              per-stream bins of stream-ordered frees, fences
 *   mapping.c  segments (one physical handle each), the handle pool,
 *              growth and release of whole handles
 *   ledger.c   the module's ledger: charge/uncharge, reclaimable reports,
 *              pressure tickets and reclaim callbacks
 *   options.c  options structs and environment variables (one validator)
 *   arena.c    the public entry points
 *
 * Objects and lifetimes (all fields protected by arena->lock):
 *  - segments (struct seg): one physical handle of `size` bytes (a
 *    multiple of the granule) mapped at [off, off+size) of the VA range;
 *    slots[] maps each granule of the range to its segment or NULL.  A
 *    segment is unmapped and released only whole, and only when no byte
 *    of it is in use or stream-owned (busy == 0: it is "idle").
 *  - blocks (struct blk) cover mapped memory only, in address order; each
 *    is FREE (in the arena's bins, usable by anyone), USED (in the pointer
 *    hash), OWNED (freed on a stream and not known complete: in that
 *    stream's bins, reusable at once by allocations on the same stream) or
 *    PENDING (a fence was recorded on its stream; FREE once the fence is
 *    done).  Adjacent FREE blocks always merge, adjacent OWNED blocks of
 *    one stream too; a FREE neighbour merges into an OWNED block when its
 *    stream misses (FREE memory is safe on every stream).  Blocks on
 *    either side of an unmapped hole never merge.
 *  - streams (struct nxq_stream): one per stream seen by nxq_free_async(),
 *    freed with the arena.
 *  - pool[]: unmapped physical handles, still charged, reused by growth.
 *  - cbs: reclaim callbacks, appended under the lock; removed under the
 *    context's plock too (or only marked dead when the remover is the
 *    pressure handler itself), so the handler may walk them while it
 *    drops the arena lock to call them.
 *
 * Invariants: mapped = in_use + owned + fenced + free;
 *             idle = sum of the sizes of segments with busy == 0;
 *             charged = mapped + pool_bytes + owed (owed: what a ticket
 *             handler released and has not answered yet).
 *
 * The arena lock is dropped around a growth that waits for the module's
 * grant, around reclaim callbacks, and around the backend's quiesce
 * (cuCtxSynchronize): never held while the whole device is waited for.
 */
#ifndef NXQ_ARENA_H
#define NXQ_ARENA_H

#include <sys/queue.h>
#include "internal.h"

#define QSHIFT		8		/* 256-byte quantum and minimum alignment */
#define QUANTUM		(1ULL << QSHIFT)
#define NBINS		192
#define SPARE_SLAB	256

#define GiB (1ULL << 30)
#define MiB (1ULL << 20)

enum { B_FREE = 1, B_USED, B_OWNED, B_PENDING };

struct nxq_stream;

/* A fence shared by the blocks one fencing pass moved to PENDING. */
struct pfence {
	void *fence;
	int refs, done;
};

struct blk {
	uint64_t off, size;			/* relative to arena->base */
	TAILQ_ENTRY(blk) alink;			/* address order */
	LIST_ENTRY(blk) flink;			/* bin (FREE, OWNED) */
	TAILQ_ENTRY(blk) plink;			/* pending FIFO (PENDING) */
	SLIST_ENTRY(blk) hlink;			/* pointer hash (USED), spare list */
	struct nxq_stream *owner;		/* OWNED */
	struct pfence *pf;			/* PENDING */
	uint32_t state, bin;
};

TAILQ_HEAD(blk_tailq, blk);
LIST_HEAD(blk_list, blk);
SLIST_HEAD(blk_slist, blk);

struct binset {
	struct blk_list bins[NBINS];
	uint64_t map[NBINS / 64];
	uint64_t bytes;
};

struct nxq_stream {
	void *handle;
	struct binset bs;			/* OWNED blocks */
	uint64_t unfenced;			/* bytes freed since its last fence */
	TAILQ_ENTRY(nxq_stream) link;
};

struct seg {
	uint64_t off, size, handle;
	uint64_t busy;				/* bytes not FREE */
	uint64_t fseq;				/* free_seq of the last plain free into it */
	TAILQ_ENTRY(seg) link;			/* address order */
};

struct pooled {
	uint64_t handle, size;
};

struct reclaim_node {
	nxq_reclaim_fn fn;
	void *user;
	int dead;
	STAILQ_ENTRY(reclaim_node) link;
};

struct slab_node {
	struct blk *slab;
	SLIST_ENTRY(slab_node) link;
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
	uint64_t grow_min;			/* the least one growth maps */

	/* mapping.c */
	struct seg **slots;
	TAILQ_HEAD(, seg) segs;
	struct pooled *pool;
	uint64_t npool, pool_alloc, pool_bytes;
	uint64_t free_seq, quiesced_seq;

	/* block.c */
	struct blk_tailq addr;
	struct binset free_bs;
	struct blk **htab;			/* chains through hlink */
	uint64_t hmask, hcount;
	struct blk_tailq pend;
	TAILQ_HEAD(, nxq_stream) streams;
	struct nxq_stream *last_stream;
	struct blk_slist spare;
	SLIST_HEAD(, slab_node) slabs;

	uint64_t mapped, in_use, owned, fenced, idle, charged, reported;
	uint64_t charge_calls, uncharge_calls, charge_denied, grows, allocs, frees;
	uint64_t kernel_errors, fence_errors;
	int starved;				/* an allocation grew while streams owned memory */
	/* the allocations so far: 0 none, 1 all on alloc_stream, 2 plain or on two streams */
	int alloc_streams;
	void *alloc_stream;

	/* ledger.c */
	int evfd;				/* -1 without tickets */
	uint64_t grow_timeout_ns;
	int in_pressure;			/* handler releasing: defer retention */
	uint64_t owed;				/* released, not yet answered */
	uint64_t last_gen;
	STAILQ_HEAD(, reclaim_node) cbs;
	uint64_t grow_waits, tickets, answers, answered_bytes, reclaim_calls;
	uint64_t stale_answers, reports, reclaim_errors;
};

static inline uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }
static inline uint64_t rdup(uint64_t x, uint64_t m) { return (x + m - 1) / m * m; }
static inline uint64_t rddn(uint64_t x, uint64_t m) { return x / m * m; }

/* block.c */
int nxq__blk_init(struct nxq_arena *a);
void nxq__blk_fini(struct nxq_arena *a);
struct blk *nxq__blk_new(struct nxq_arena *a);
void nxq__blk_put(struct nxq_arena *a, struct blk *b);
int nxq__blk_reserve(struct nxq_arena *a, int n);	/* n spare blocks: 0 or -ENOMEM */
void nxq__free_insert(struct nxq_arena *a, struct blk *b, struct nxq_stream *owner);
void nxq__free_remove(struct nxq_arena *a, struct blk *b);
void nxq__coalesce(struct nxq_arena *a, struct blk *b, struct nxq_stream *owner);
struct blk *nxq__find_fit(struct nxq_arena *a, struct nxq_stream *s, uint64_t size,
			  uint64_t align);
int nxq__take(struct nxq_arena *a, struct blk *b, uint64_t size, uint64_t align,
	      uint64_t *off);
struct blk *nxq__take_used(struct nxq_arena *a, void *ptr);
void nxq__insert_mapped(struct nxq_arena *a, uint64_t off, uint64_t size);
struct nxq_stream *nxq__stream_find(struct nxq_arena *a, void *handle, int create);
void nxq__absorb(struct nxq_arena *a, struct nxq_stream *s);
void nxq__absorb_freed(struct nxq_arena *a, struct blk *b, struct nxq_stream *s);
int nxq__fence_stream(struct nxq_arena *a, struct nxq_stream *s);
int nxq__fence_streams(struct nxq_arena *a, struct nxq_stream *except);
/* mode 0: complete the done prefix of the FIFO; 1: scan all; 2: wait all. */
void nxq__poll_pending(struct nxq_arena *a, int mode);

/* mapping.c */
void nxq__seg_account(struct nxq_arena *a, uint64_t off, uint64_t size, int busy);
int nxq__grow(struct nxq_arena *a, struct nxq_stream *st, uint64_t size, uint64_t align);
int nxq__grow_wait(struct nxq_arena *a, uint64_t size, uint64_t align);
uint64_t nxq__release_idle(struct nxq_arena *a, uint64_t want, int to_pool);
uint64_t nxq__release_pool(struct nxq_arena *a, uint64_t want);
void nxq__enforce_retention(struct nxq_arena *a);
void nxq__unmap_all(struct nxq_arena *a);

/* ledger.c */
int nxq__k_charge(struct nxq_arena *a, uint64_t bytes);
void nxq__k_uncharge(struct nxq_arena *a, uint64_t bytes);
void nxq__report_reclaimable(struct nxq_arena *a);
void nxq__reclaim_fini(struct nxq_arena *a);

/* options.c */
int nxq__read_arena_opts(const struct nxq_arena_opts *in, struct nxq_arena_opts *o,
			 uint64_t *va, uint64_t *batch, uint64_t *retain, uint64_t *pool,
			 uint64_t *gran, uint64_t *wait_ms, uint64_t *gmin);

#endif /* NXQ_ARENA_H */
