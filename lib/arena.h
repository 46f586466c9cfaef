/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * An arena's internals, shared by the files that implement it:
 *
 *   block.c    the block allocator (block.h): blocks, size bins, the
 *              pointer hash, per-stream bins of stream-ordered frees,
 *              fences, the segments' busy bytes
 *   charge.c   the authority's ledger: charge/uncharge, reclaimable reports
 *   mapping.c  segments (one physical handle each), the handle pool,
 *              growth and release of whole handles
 *   ledger.c   pressure tickets and reclaim callbacks; registers each
 *              arena with the context's pressure.c
 *   options.c  options structs and environment variables (one validator)
 *   arena.c    the public entry points
 *
 * block.c < charge.c < mapping.c < ledger.c < arena.c: each calls only
 * the files before it (and err.c, options.c, pressure.c: internal.h
 * lists the layers).
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
#include "block.h"

#define GiB (1ULL << 30)
#define MiB (1ULL << 20)

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
	struct nxq_pclient pclient;		/* evfd registered with pressure.c */
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

/* mapping.c */
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
/* The arena's tickets handled by the context's pressure.c: register, unregister. */
int nxq__ledger_attach(struct nxq_arena *a);
int nxq__ledger_detach(struct nxq_arena *a);

/* options.c */
int nxq__read_arena_opts(const struct nxq_arena_opts *in, struct nxq_arena_opts *o,
			 uint64_t *va, uint64_t *batch, uint64_t *retain, uint64_t *pool,
			 uint64_t *gran, uint64_t *wait_ms, uint64_t *gmin);

#endif /* NXQ_ARENA_H */
