/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger, layer 1: hierarchical counters, as mm/page_counter.c
 * keeps them.  A charge walks the path from a holder's node to the root:
 * every node's usage against its own max (and, outside every budgeted
 * subtree, a top-level node's against the device's default_max), the
 * device's used bytes against its capacity.  Guarantees are claimed up
 * the tree (a node without a min claims its children's) and shared
 * top-down, as the memory controller's memory_recursiveprot does; the
 * usage-free part of each node's share is cached.  Subtree counts
 * (waiters) and the per-node limits live here too.  A holder is the leaf
 * counter of its path (its charge, and the residue left on nodes it moved
 * from).
 *
 * Everything here runs under nxq_device.lock and calls only event.h: it
 * knows nothing of the wait queue, tickets or object lifetimes.
 */
#ifndef _NXQ_COUNTER_H
#define _NXQ_COUNTER_H

#include <linux/lockdep.h>
#include <linux/overflow.h>
#include "ledger_types.h"
#include "event.h"

/**
 * struct nxq_budget - a node's budget and counters, read under one lock
 * @current_bytes: usage
 * @max: its own max, NXQ_UNLIMITED without one (@max_set false)
 * @max_set: it has a max of its own
 * @effective_max: the least limit a charge below it meets: its own and
 *	its ancestors' maxes, and default_max where it applies
 * @min: its own min, 0 for none
 * @effective_min: its share of the guarantees (nxq_node_emin())
 * @claimed: the guarantees of its children (children_min)
 * @overcommitted: @claimed is above its min (for the root, above the
 *	capacity), so they are shared out in proportion
 * @borrowed: usage above @effective_min
 * @headroom: what one more charge here could take now
 * @max_hits, @denials: its counters
 * @capacity, @used: the device's
 */
struct nxq_budget {
	u64 current_bytes;
	u64 max;
	bool max_set;
	u64 effective_max;
	u64 min;
	u64 effective_min;
	u64 claimed;
	bool overcommitted;
	u64 borrowed;
	u64 headroom;
	u64 max_hits;
	u64 denials;
	u64 capacity;
	u64 used;
};

u32 nxq_node_limit(struct nxq_node *node, enum nxq_limit which);
u64 nxq_node_eff_max(struct nxq_node *node);
u64 nxq_node_room(struct nxq_node *node);
u64 nxq_node_share(struct nxq_node *node);
u64 nxq_node_emin(struct nxq_node *node);
bool nxq_within_emin(struct nxq_node *node, u64 bytes);
struct nxq_node *nxq_guarantor(struct nxq_node *node);
void nxq_node_budget(struct nxq_node *node, struct nxq_budget *b);
void nxq_holder_budget(struct nxq_holder *h, struct nxq_budget *b,
		       u64 *charge, u64 *reclaimable);
bool nxq_holders_full(struct nxq_node *node);
bool nxq_is_below(struct nxq_node *n, struct nxq_node *top);
bool nxq_budgeted_between(struct nxq_node *n, struct nxq_node *top);
int nxq_fits(struct nxq_holder *h, u64 bytes, struct nxq_node **hit);
int nxq_never_fits(struct nxq_holder *h, u64 bytes, struct nxq_node **hit);
void nxq_count_denial(struct nxq_holder *h, u64 bytes, int err,
		      struct nxq_node *hit);
void nxq_record_refusal(struct nxq_holder *h, u64 bytes, int err,
			struct nxq_node *hit);
void nxq_holder_limits(struct nxq_holder *h, u64 *room, u64 *limit);
void nxq_holder_status(struct nxq_holder *h, struct nxq_budget *b,
		       u64 *charge, u64 *reclaimable, u64 *room, u64 *limit,
		       struct nxq_refusal_rec *refused);
int nxq_waiters_add(struct nxq_node *node);
void nxq_waiters_del(struct nxq_node *node);
void nxq_uncharge_locked(struct nxq_holder *h, u64 bytes);
void nxq_claim_changed(struct nxq_node *node, u64 old_claim, u64 new_claim);
void nxq_kind_changed(struct nxq_node *node, bool was_claiming,
		      bool was_budgeted);

/**
 * nxq_sub_clamp() - take @bytes from a counter, never below 0
 * @v: the counter
 * @bytes: what to take
 *
 * An uncharge above what a counter holds is a ledger bug: warn once and
 * clamp at 0, as mm/page_counter.c does, rather than wrap to ~2^64 (which
 * would refuse every later charge on that path).
 */
static inline void nxq_sub_clamp(u64 *v, u64 bytes)
{
	if (WARN_ON_ONCE(*v < bytes))
		*v = 0;
	else
		*v -= bytes;
}

/**
 * nxq_claim() - the guarantee a node claims from its parent
 * @n: the node
 *
 * Its own min; a node without one claims what its children claim, so an
 * ancestor without a min neither dilutes nor voids their guarantees.
 *
 * Context: the device lock is held.
 * Return: bytes.
 */
static inline u64 nxq_claim(const struct nxq_node *n)
{
	return n->min ?: n->children_min;
}

/**
 * nxq_budgeted() - does a node carry a budget of its own?
 * @n: the node
 *
 * A max or a min of its own.  default_max binds only what is charged
 * outside every budgeted subtree.
 *
 * Context: the device lock is held.
 * Return: true if it does.
 */
static inline bool nxq_budgeted(const struct nxq_node *n)
{
	return n->max_set || n->min;
}

/**
 * nxq_path_sub() - one node's part of an uncharge walking up a path
 * @n: the node
 * @bytes: what is uncharged
 * @claim_below: a node with a min lies below @n on the path; updated
 * @budget_below: a budgeted node lies below @n on the path; updated
 *
 * Its usage, and what it counts as claimed and budgeted below it, lose
 * @bytes (see nxq_commit() for the adding side).
 */
static inline void nxq_path_sub(struct nxq_node *n, u64 bytes,
				bool *claim_below, bool *budget_below)
{
	nxq_sub_clamp(&n->usage, bytes);
	if (*claim_below)
		nxq_sub_clamp(&n->claimed_usage, bytes);
	if (*budget_below)
		nxq_sub_clamp(&n->budgeted_usage, bytes);
	*claim_below |= !!n->min;
	*budget_below |= nxq_budgeted(n);
}

/**
 * nxq_is_top() - is a node a child of the root?
 * @n: the node
 *
 * Return: true for a top-level node.
 */
static inline bool nxq_is_top(const struct nxq_node *n)
{
	return n->parent && !n->parent->parent;
}

/**
 * nxq_over_limit() - would @bytes more go past a node's own limit?
 * @n: a node on the charging holder's path
 * @bytes: the charge
 * @budget_below: a budgeted node lies on the path below @n
 *
 * The limit of a node: its own max; for a top-level node on a path with
 * no budgeted node (itself included), the device's default_max over what
 * its subtree charges outside budgeted subtrees; else none.  Inline: the
 * fast path calls it once per level.
 *
 * Context: the device lock is held.
 * Return: true if @n refuses the charge (or a counter would wrap).
 */
static inline bool nxq_over_limit(const struct nxq_node *n, u64 bytes,
				  bool budget_below)
{
	u64 sum;

	if (n->max_set)
		return check_add_overflow(n->usage, bytes, &sum) ||
		       sum > n->max;
	if (budget_below || n->min || !nxq_is_top(n))
		return false;
	return check_add_overflow(n->usage - n->budgeted_usage, bytes, &sum) ||
	       sum > n->dev->default_max;
}

/**
 * nxq_own() - the part of a holder's charge on its current node's path
 * @h: the holder
 *
 * The rest (residue_bytes) stays on nodes it moved from.
 *
 * Context: the device lock is held.
 * Return: bytes.
 */
static inline u64 nxq_own(struct nxq_holder *h)
{
	lockdep_assert_held(&h->node->dev->lock);
	return h->charge - h->residue_bytes;
}

/**
 * nxq_commit() - charge @bytes on @h's path and the device
 * @h: the holder
 * @bytes: bytes that fit (nxq_fits() or nxq_fast_fits() said so)
 *
 * Context: the device lock is held.
 */
static inline void nxq_commit(struct nxq_holder *h, u64 bytes)
{
	bool claim_below = false, budget_below = false;
	struct nxq_node *n;

	lockdep_assert_held(&h->node->dev->lock);
	for (n = h->node; n; n = n->parent) {
		n->usage += bytes;
		if (claim_below)
			n->claimed_usage += bytes;
		if (budget_below)
			n->budgeted_usage += bytes;
		claim_below |= !!n->min;
		budget_below |= nxq_budgeted(n);
	}
	h->node->dev->used += bytes;
	h->charge += bytes;
}

/**
 * nxq_uncharge_holder() - the device's and the holder's part of an uncharge
 * @h: the holder
 * @bytes: at most its charge, already taken off the nodes
 *
 * Lowers the device's use and the holder's charge, and its reclaimable
 * bytes and open ticket to the new charge.
 *
 * Context: the device lock is held.
 */
static inline void nxq_uncharge_holder(struct nxq_holder *h, u64 bytes)
{
	struct nxq_device *dev = h->node->dev;

	lockdep_assert_held(&dev->lock);
	nxq_sub_clamp(&dev->used, bytes);
	h->charge -= bytes;
	h->reclaimable = min(h->reclaimable, h->charge);
	if (h->ticket.open)
		h->ticket.bytes = min(h->ticket.bytes, h->charge);
}

#endif /* _NXQ_COUNTER_H */
