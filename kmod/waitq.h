/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger, layer 2: the fair wait queue.  A charge that is not
 * granted at once waits as a struct nxq_waiter (its shell's: on the
 * charger's stack in the module, in the request in nxquotad),
 * in the device's queue in key order (enqueue time minus priority x
 * NXQ_AGING_NS) and in the tree of the one constraint that holds it up: a
 * node's (its max, or the guarantee a holder without an eventfd draws on)
 * or the device's capacity.  A waiter is granted when it fits its path
 * and no constraint on its path holds up a waiter before it; a change
 * that makes room re-examines only the trees of the constraints it
 * touched, each from its head, and stops at a head that still does not
 * fit.  A charge or release whose path has no waiter skips the queue.
 *
 * Runs under nxq_device.lock; calls the counters and events below it,
 * nothing above.  Nothing here sleeps: whoever settles a queued waiter
 * (a grant, a move, its holder's end) calls its @done, and its shell
 * wakes or answers (charge.c).
 */
#ifndef _NXQ_WAITQ_H
#define _NXQ_WAITQ_H

#include <linux/rbtree.h>

#include "counter.h"

/*
 * Waiters gain one priority point per this long queued, at most
 * NXQ_PRIORITY_MAX points: the bounded aging of the fair queue.
 */
#define NXQ_AGING_NS		(10 * NSEC_PER_MSEC)

/**
 * struct nxq_waiter - a queued charge (charge.c: nxq_charge_begin())
 *
 * Fields are under the device lock, except that a sleeping charger reads
 * @result without it.  It lives until nxq_charge_end(), in memory its
 * shell owns.
 */
struct nxq_waiter {
	struct list_head link;		/* dev->waiters, in key order */
	struct list_head hlink;		/* h->waiters */
	struct rb_node rb;		/* in blk_node->blocked or
					 * dev->blocked, in key order
					 */
	struct nxq_holder *h;
	struct nxq_node *node;		/* h->node when queued */
	struct nxq_node *qnode;		/* h->node when it entered
					 * blk_node's tree (queued_below)
					 */
	u64 bytes;
	u64 enqueued_ns;
	s64 key;			/* enqueued_ns - priority x aging */
	u64 seq;			/* arrival: orders equal keys */
	u64 deadline_ns;		/* of its wait; 0 for a no-wait */
	int result;			/* 1 waiting, 0 granted, <0 cancelled */
	int err;			/* why not granted: -EDQUOT, -ENOSPC */
	struct nxq_node *hit;		/* with -EDQUOT: the node at max */
	struct nxq_node *blk_node;	/* in blk_node->blocked */
	bool blk_dev;			/* in dev->blocked */
	/* the charge's own (charge.c) */
	u64 timeout_ns;			/* asked, at most wait_max_ms */
	u64 wake_ns;			/* its shell calls nxq_charge_tick() */
	bool counted;			/* in its path's waiters (waiters_max) */
	bool escalated;			/* holders were killed for it */
	bool said;			/* its refusal was counted */
	/*
	 * Called under the device lock when someone else settles @result
	 * (a grant, a move, its holder's end): it wakes or schedules the
	 * waiter's shell and calls nothing of the ledger.
	 */
	void (*done)(struct nxq_waiter *w);
};

void nxq_enqueue(struct nxq_device *dev, struct nxq_waiter *w);
void nxq_dequeue(struct nxq_device *dev, struct nxq_waiter *w);
void nxq_waiter_set(struct nxq_device *dev, struct nxq_waiter *w,
		    int err, struct nxq_node *hit);
int nxq_waiter_check(struct nxq_device *dev, struct nxq_waiter *w,
		     struct nxq_node **hit);
void nxq_waiter_leave(struct nxq_device *dev, struct nxq_waiter *w);
bool nxq_path_blocked(struct nxq_device *dev, struct nxq_node *node);
void nxq_dispatch(struct nxq_device *dev);
void nxq_dispatch_path(struct nxq_device *dev, struct nxq_node *node);
void nxq_dispatch_holder(struct nxq_device *dev, struct nxq_holder *h);
void nxq_waiters_rehome(struct nxq_device *dev, struct nxq_holder *h,
			struct nxq_node *old);
void nxq_waiters_cancel(struct nxq_device *dev, struct nxq_holder *h);
u64 nxq_queued_ahead(struct nxq_device *dev, struct nxq_waiter *me);

/**
 * nxq_fast_fits() - the fast path's test, in one walk
 * @h: the holder
 * @bytes: what it charges
 *
 * Nobody waits on @h's path or on the device, and @bytes fits every max
 * and the capacity.  False sends the charge to the full checks
 * (nxq_path_blocked(), nxq_fits()), which give the same answer and say
 * why; a holder without an eventfd always goes there.  Inline: this and
 * nxq_commit() are the whole of an uncontended charge.
 *
 * Context: the device lock is held.
 * Return: true if the charge may be committed at once.
 */
static inline bool nxq_fast_fits(struct nxq_holder *h, u64 bytes)
{
	struct nxq_device *dev = h->node->dev;
	bool budget_below = false;
	struct nxq_node *n;
	u64 sum;

	lockdep_assert_held(&dev->lock);
	if (dev->nr_dev_blocked || !h->priv ||
	    check_add_overflow(h->charge, bytes, &sum) ||
	    check_add_overflow(dev->used, bytes, &sum) ||
	    sum > dev->capacity)
		return false;
	for (n = h->node; n; n = n->parent) {
		if (n->nr_blocked ||
		    check_add_overflow(n->usage, bytes, &sum) ||
		    nxq_over_limit(n, bytes, budget_below))
			return false;
		budget_below |= nxq_budgeted(n);
	}
	return true;
}

/**
 * nxq_uncharge_fast() - nxq_uncharge_locked() and nxq_dispatch_holder()
 * in one walk
 * @h: the holder, with no residue
 * @bytes: at most its charge
 *
 * Uncharges its path, and serves the waiters of its path and of the
 * device if there are any.
 *
 * Context: the device lock is held.
 */
static inline void nxq_uncharge_fast(struct nxq_holder *h, u64 bytes)
{
	struct nxq_device *dev = h->node->dev;
	bool blocked = dev->nr_dev_blocked;
	bool claim_below = false, budget_below = false;
	struct nxq_node *n;

	lockdep_assert_held(&dev->lock);
	for (n = h->node; n; n = n->parent) {
		nxq_path_sub(n, bytes, &claim_below, &budget_below);
		blocked |= n->nr_blocked;
	}
	nxq_uncharge_holder(h, bytes);
	if (blocked)
		nxq_dispatch_path(dev, h->node);
}

#endif /* _NXQ_WAITQ_H */
