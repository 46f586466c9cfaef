/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * The block allocator's objects and calls (block.c); see arena.h for
 * their life in an arena.  Blocks (struct blk) come from slabs and cover
 * mapped memory in address order; size bins (struct binset) hold FREE
 * blocks (the arena's) and OWNED ones (a stream's: struct nxq_stream);
 * a fence (struct pfence) is shared by the blocks one fencing pass made
 * PENDING.
 *
 * Everything here runs under arena->lock.  block.c calls only err.c and
 * the arena's backend (fences); mapping.c, ledger.c and arena.c call it.
 */
#ifndef NXQ_BLOCK_H
#define NXQ_BLOCK_H

#include <stdint.h>
#include <sys/queue.h>

struct nxq_arena;

#define QSHIFT		8		/* 256-byte quantum and minimum alignment */
#define QUANTUM		(1ULL << QSHIFT)
#define NBINS		192
#define SPARE_SLAB	256

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

/*
 * The segments' busy bytes, moved as blocks change state: busy 1:
 * [off, off+size) stops being FREE; 0: becomes FREE after its stream's
 * fence completed; 2: becomes FREE by a plain free.
 */
void nxq__seg_account(struct nxq_arena *a, uint64_t off, uint64_t size, int busy);

#endif /* NXQ_BLOCK_H */
