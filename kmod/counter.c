// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota ledger, layer 1: hierarchical counters (see counter.h).  A
 * charge checks every node from the holder's to the root and the device,
 * then commits, or changes nothing: either every node on the path and the
 * device are charged, or nothing is.  Nothing here allocates, sleeps or
 * takes a lock other than nxq_device.lock.
 */
#include <linux/math64.h>
#include <linux/lockdep.h>
#include <linux/overflow.h>
#include <linux/bug.h>
#include <linux/errno.h>

#include "counter.h"

static const u32 nxq_limit_default[NXQ_NR_LIMITS] = {
	[NXQ_LIM_HOLDERS]	= NXQ_DEFAULT_HOLDERS_MAX,
	[NXQ_LIM_WAITERS]	= NXQ_DEFAULT_WAITERS_MAX,
	[NXQ_LIM_PRIORITY]	= NXQ_DEFAULT_PRIORITY_MAX,
	[NXQ_LIM_WAIT_MS]	= NXQ_DEFAULT_WAIT_MAX_MS,
};

/**
 * nxq_node_limit() - a node's effective limit
 * @node: the node
 * @which: enum nxq_limit
 *
 * The node's own value, else its nearest ancestor's, else the module's
 * default -- except that the subtree counts (holders, waiters) of the root
 * node are unbounded unless set on the root itself.  O(depth).
 *
 * Context: the device lock is held.
 * Return: the limit.
 */
u32 nxq_node_limit(struct nxq_node *node, enum nxq_limit which)
{
	struct nxq_node *n;

	lockdep_assert_held(&node->dev->lock);
	for (n = node; n; n = n->parent)
		if (n->lim[which] != NXQ_LIMIT_UNSET)
			return n->lim[which];
	if (!node->parent &&
	    (which == NXQ_LIM_HOLDERS || which == NXQ_LIM_WAITERS))
		return U32_MAX;
	return nxq_limit_default[which];
}

/**
 * nxq_node_eff_max() - the max a charge meets at a node
 * @node: the node
 *
 * Its own max if set; else the device's default_max for a top-level node
 * (a child of the root); else unlimited (deeper nodes are covered by
 * their top-level ancestor, the root by the capacity).
 *
 * Context: the device lock is held.
 * Return: bytes, or NXQ_UNLIMITED.
 */
u64 nxq_node_eff_max(struct nxq_node *node)
{
	lockdep_assert_held(&node->dev->lock);
	return __nxq_node_eff_max(node);
}

/**
 * nxq_node_emin() - a node's effective min; the device lock is held
 * @node: the node
 *
 * Effective min, top-down: the root's is the device capacity; a child's is
 * its min, scaled by parent_emin / children_min when its siblings' mins
 * together exceed what the parent can guarantee (as mm/page_counter.c
 * shares protection among overcommitted siblings).  Cached per node
 * (emin, emin_gen) and recomputed only after a min, a children_min or
 * the capacity changed (dev->emin_gen): O(1) when cached, O(depth) at
 * most.  Unlike page_counter's emin it does not follow usage; see
 * Documentation/design.rst.
 *
 * Context: the device lock is held.
 * Return: bytes.
 */
u64 nxq_node_emin(struct nxq_node *node)
{
	struct nxq_device *dev = node->dev;
	u64 pe;

	lockdep_assert_held(&dev->lock);
	if (node->emin_gen == dev->emin_gen)
		return node->emin;
	if (!node->parent) {
		node->emin = dev->capacity;
	} else {
		pe = nxq_node_emin(node->parent);
		if (node->parent->children_min > pe)
			node->emin = mul_u64_u64_div_u64(node->min, pe,
						node->parent->children_min);
		else
			node->emin = min(node->min, pe);
	}
	node->emin_gen = dev->emin_gen;
	return node->emin;
}

static void __nxq_node_budget(struct nxq_node *node, struct nxq_budget *b)
{
	struct nxq_device *dev = node->dev;
	struct nxq_node *n;
	u64 room;

	lockdep_assert_held(&dev->lock);
	b->current_bytes = node->usage;
	b->max = node->max;
	b->min = node->min;
	b->effective_min = nxq_node_emin(node);
	b->borrowed = node->usage > b->effective_min ?
		node->usage - b->effective_min : 0;
	b->max_hits = node->max_hits;
	b->denials = node->denials;
	b->capacity = dev->capacity;
	b->used = dev->used;
	room = dev->capacity > dev->used ? dev->capacity - dev->used : 0;
	for (n = node; n; n = n->parent) {
		u64 m = nxq_node_eff_max(n);

		room = min(room, m > n->usage ? m - n->usage : 0);
	}
	b->headroom = room;
}

/**
 * nxq_node_budget() - read a node's budget and counters consistently
 * @node: the node
 * @b: filled in
 *
 * Context: takes the device lock.
 */
void nxq_node_budget(struct nxq_node *node, struct nxq_budget *b)
{
	spin_lock(&node->dev->lock);
	__nxq_node_budget(node, b);
	spin_unlock(&node->dev->lock);
}

/**
 * nxq_holder_budget() - read a holder's charge and its node's budget
 * consistently
 * @h: the holder
 * @b: filled in
 * @charge: set to the holder's charge
 * @reclaimable: set to the holder's reclaimable bytes
 *
 * Context: takes the device lock.
 */
void nxq_holder_budget(struct nxq_holder *h, struct nxq_budget *b,
		       u64 *charge, u64 *reclaimable)
{
	spin_lock(&h->node->dev->lock);
	__nxq_node_budget(h->node, b);
	*charge = h->charge;
	*reclaimable = h->reclaimable;
	spin_unlock(&h->node->dev->lock);
}

/**
 * nxq_is_below() - is a node in a subtree?
 * @n: the node
 * @top: the subtree's top
 *
 * Context: any; parents are fixed while the nodes are referenced.
 * Return: true if @n is @top or below it.
 */
bool nxq_is_below(struct nxq_node *n, struct nxq_node *top)
{
	for (; n; n = n->parent)
		if (n == top)
			return true;
	return false;
}

/**
 * nxq_fits() - would a charge fit its path and the device now?
 * @h: the holder
 * @bytes: the charge
 * @hit: set to the deepest node at max with -EDQUOT (a holder without an
 *	eventfd hits its own node at its effective min), else NULL
 *
 * Context: the device lock is held.
 * Return: 0, -EOVERFLOW, -EDQUOT or -ENOSPC.
 */
int nxq_fits(struct nxq_holder *h, u64 bytes, struct nxq_node **hit)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_node *n;
	u64 sum;

	lockdep_assert_held(&dev->lock);
	*hit = NULL;
	if (check_add_overflow(h->charge, bytes, &sum) ||
	    check_add_overflow(dev->used, bytes, &sum))
		return -EOVERFLOW;
	for (n = h->node; n; n = n->parent) {
		if (check_add_overflow(n->usage, bytes, &sum))
			return -EOVERFLOW;
		if (sum > nxq_node_eff_max(n)) {
			*hit = n;
			return -EDQUOT;
		}
	}
	/* Nobody can ask it for memory back: it cannot borrow. */
	if (!h->priv && h->node->usage + bytes > nxq_node_emin(h->node)) {
		*hit = h->node;
		return -EDQUOT;
	}
	if (dev->used + bytes > dev->capacity)
		return -ENOSPC;
	return 0;
}

/**
 * nxq_never_fits() - could a charge never fit, whatever others released?
 * @h: the holder
 * @bytes: the charge
 * @hit: set as nxq_fits() sets it
 *
 * Its own charge on the path stays (nobody asks the asker).
 *
 * Context: the device lock is held.
 * Return: the errno an empty queue would give, or 0.
 */
int nxq_never_fits(struct nxq_holder *h, u64 bytes,
			  struct nxq_node **hit)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_node *n;
	u64 sum;

	lockdep_assert_held(&dev->lock);
	*hit = NULL;
	/* Overflow first, as nxq_fits() on an empty queue would say. */
	if (check_add_overflow(h->charge, bytes, &sum) ||
	    check_add_overflow(dev->used, bytes, &sum))
		return -EOVERFLOW;
	for (n = h->node; n; n = n->parent)
		if (check_add_overflow(n->usage, bytes, &sum))
			return -EOVERFLOW;
	sum = nxq_own(h) + bytes;	/* <= h->charge + bytes */
	for (n = h->node; n; n = n->parent) {
		if (sum > nxq_node_eff_max(n)) {
			*hit = n;
			return -EDQUOT;
		}
	}
	if (!h->priv && sum > nxq_node_emin(h->node)) {
		*hit = h->node;
		return -EDQUOT;
	}
	if (sum > dev->capacity)
		return -ENOSPC;
	return 0;
}

/**
 * nxq_count_denial() - count a refused charge and report it
 * @h: the holder
 * @bytes: the charge
 * @err: its errno
 * @hit: the node at max, or NULL
 *
 * Context: the device lock is held.
 */
void nxq_count_denial(struct nxq_holder *h, u64 bytes, int err,
			     struct nxq_node *hit)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_node *n;

	lockdep_assert_held(&dev->lock);
	if (hit)
		hit->max_hits++;
	if (err == -ENOSPC)
		dev->capacity_hits++;
	dev->denials++;
	for (n = h->node; n; n = n->parent)
		n->denials++;
	nxq_event(dev, NXQ_EV_DENIED, NULL, h, bytes, 0, -err);
}

/**
 * nxq_waiters_add() - count a waiting charge on its subtree
 * @node: the node it charges
 *
 * Context: the device lock is held.
 * Return: 0, or -EAGAIN if a waiters_max of the path is reached (nothing
 * counted).
 */
int nxq_waiters_add(struct nxq_node *node)
{
	struct nxq_node *n;

	lockdep_assert_held(&node->dev->lock);
	for (n = node; n; n = n->parent)
		if (n->subtree_waiters >= nxq_node_limit(n, NXQ_LIM_WAITERS))
			return -EAGAIN;
	for (n = node; n; n = n->parent)
		n->subtree_waiters++;
	return 0;
}

/**
 * nxq_waiters_del() - uncount what nxq_waiters_add() counted
 * @node: the same node
 *
 * Context: the device lock is held.
 */
void nxq_waiters_del(struct nxq_node *node)
{
	struct nxq_node *n;

	lockdep_assert_held(&node->dev->lock);
	for (n = node; n; n = n->parent)
		n->subtree_waiters--;
}

/* Uncharge @bytes from @n and its ancestors. */
static void nxq_uncharge_path(struct nxq_node *n, u64 bytes)
{
	lockdep_assert_held(&n->dev->lock);
	for (; n; n = n->parent) {
		WARN_ON_ONCE(n->usage < bytes);
		n->usage -= bytes;
	}
}

/**
 * nxq_uncharge_locked() - take bytes back from a holder's counters
 * @h: the holder
 * @bytes: at most its charge
 *
 * What was charged on earlier nodes (residues) goes first.  Lowers its
 * reclaimable bytes and its open ticket to the new charge.  Serves no
 * waiter: the caller dispatches.
 *
 * Context: the device lock is held.
 */
void nxq_uncharge_locked(struct nxq_holder *h, u64 bytes)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_residue *r;
	u64 left = bytes, take;

	lockdep_assert_held(&dev->lock);
	/* What was charged on earlier nodes goes first. */
	list_for_each_entry(r, &h->residue, link) {
		if (!left)
			break;
		take = min(r->bytes, left);
		nxq_uncharge_path(r->node, take);
		r->bytes -= take;
		h->residue_bytes -= take;
		left -= take;
	}
	nxq_uncharge_path(h->node, left);
	nxq_uncharge_holder(h, bytes);
}
