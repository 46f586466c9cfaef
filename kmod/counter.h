/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger, layer 1: hierarchical counters, as mm/page_counter.c
 * keeps them.  A charge walks the path from a holder's node to the root:
 * every node's usage against its effective max, the device's used bytes
 * against its capacity; effective mins are shared top-down among
 * overcommitted siblings and cached per node.  Subtree counts (waiters)
 * and the inherited per-node limits live here too.  A holder is the leaf
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
 */
struct nxq_budget {
	u64 current_bytes;
	u64 max;
	u64 min;
	u64 effective_min;
	u64 borrowed;
	u64 headroom;
	u64 max_hits;
	u64 denials;
	u64 capacity;
	u64 used;
};

u32 nxq_node_limit(struct nxq_node *node, enum nxq_limit which);
u64 nxq_node_eff_max(struct nxq_node *node);
u64 nxq_node_emin(struct nxq_node *node);
void nxq_node_budget(struct nxq_node *node, struct nxq_budget *b);
void nxq_holder_budget(struct nxq_holder *h, struct nxq_budget *b,
		       u64 *charge, u64 *reclaimable);
bool nxq_is_below(struct nxq_node *n, struct nxq_node *top);
int nxq_fits(struct nxq_holder *h, u64 bytes, struct nxq_node **hit);
int nxq_never_fits(struct nxq_holder *h, u64 bytes, struct nxq_node **hit);
void nxq_count_denial(struct nxq_holder *h, u64 bytes, int err,
		      struct nxq_node *hit);
int nxq_waiters_add(struct nxq_node *node);
void nxq_waiters_del(struct nxq_node *node);
void nxq_uncharge_locked(struct nxq_holder *h, u64 bytes);

/**
 * __nxq_node_eff_max() - nxq_node_eff_max()'s body, inline for the
 * charge path
 * @node: the node
 *
 * The max a node enforces: its own, the device's default_max for a
 * top-level node without one, else none.
 *
 * Context: the device lock is held (nxq_node_eff_max() asserts it).
 * Return: bytes, or NXQ_UNLIMITED.
 */
static inline u64 __nxq_node_eff_max(const struct nxq_node *node)
{
	if (node->max_set)
		return node->max;
	if (node->parent && !node->parent->parent)
		return node->dev->default_max;
	return NXQ_UNLIMITED;
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
	struct nxq_node *n;

	lockdep_assert_held(&h->node->dev->lock);
	for (n = h->node; n; n = n->parent)
		n->usage += bytes;
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
	WARN_ON_ONCE(dev->used < bytes);
	dev->used -= bytes;
	h->charge -= bytes;
	h->reclaimable = min(h->reclaimable, h->charge);
	if (h->ticket.open)
		h->ticket.bytes = min(h->ticket.bytes, h->charge);
}

#endif /* _NXQ_COUNTER_H */
