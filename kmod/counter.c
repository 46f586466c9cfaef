// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota ledger, layer 1: hierarchical counters (see counter.h).  A
 * charge checks every node from the holder's to the root and the device,
 * then commits, or changes nothing: either every node on the path and the
 * device are charged, or nothing is.  The rules are written down in
 * Documentation/design.rst, "Budgets in a hierarchy".  Nothing here allocates, sleeps or
 * takes a lock other than nxq_device.lock.
 */
#include <linux/math64.h>
#include <linux/lockdep.h>
#include <linux/overflow.h>
#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/ktime.h>
#include <linux/string.h>

#include "counter.h"

/*
 * The limits' defaults, as the spec gives them (the budget table's dflt:
 * NXQUOTA_<NAME>_DEFAULT); what a default binds is nxq_node_limit()'s.
 */
static const u32 nxq_limit_default[NXQ_NR_LIMITS] = NXQ_LIMIT_DEFAULTS;

/**
 * nxq_node_limit() - a node's effective limit
 * @node: the node
 * @which: enum nxq_limit
 *
 * holders_max and waiters_max belong to each node: its own value bounds
 * its subtree's total; without one, the module's default bounds its own
 * holders (or waiters) only -- never its children's, so siblings never
 * share a default -- and the root's are unbounded unless set on it.
 * priority_max and wait_max_ms bind a node's own holders: its own value,
 * else its nearest ancestor's, else the default.  O(depth).
 *
 * Context: the device lock is held.
 * Return: the limit.
 */
u32 nxq_node_limit(struct nxq_node *node, enum nxq_limit which)
{
	struct nxq_node *n;

	lockdep_assert_held(&node->dev->lock);
	if (which == NXQ_LIM_HOLDERS_MAX || which == NXQ_LIM_WAITERS_MAX) {
		if (node->lim[which] != NXQ_LIMIT_UNSET)
			return node->lim[which];
		return node->parent ? nxq_limit_default[which] : U32_MAX;
	}
	for (n = node; n; n = n->parent)
		if (n->lim[which] != NXQ_LIMIT_UNSET)
			return n->lim[which];
	return nxq_limit_default[which];
}

/*
 * Would one more object of @which (holders, waiters) at @node go past a
 * limit?  @own: @node's own count; @subtree(n): n's subtree count.
 */
#define nxq_objects_full(node, which, own, subtree)			\
({									\
	struct nxq_node *__n;						\
	bool __full = false;						\
									\
	for (__n = (node); __n && !__full; __n = __n->parent) {		\
		if (__n->lim[which] != NXQ_LIMIT_UNSET)			\
			__full = __n->subtree >= __n->lim[which];	\
		else if (__n == (node) && __n->parent)			\
			__full = (own) >= nxq_limit_default[which];	\
	}								\
	__full;								\
})

/**
 * nxq_holders_full() - may one more holder register at a node?
 * @node: its node
 *
 * Every own holders_max on the path against its subtree's holders, and
 * the default against @node's own when it has no holders_max.
 *
 * Context: the ledger lock is held (the holder counts are its).
 * Return: true if a limit is reached.
 */
bool nxq_holders_full(struct nxq_node *node)
{
	lockdep_assert_held(&node->dev->ledger->lock);
	return nxq_objects_full(node, NXQ_LIM_HOLDERS_MAX, node->nr_holders,
				subtree_holders);
}

/**
 * nxq_node_eff_max() - the least limit a charge at a node meets
 * @node: the node
 *
 * Its own max and its ancestors', and the device's default_max when no
 * node on its path below the root has a budget.  For reports: a charge
 * meets these limits one by one (nxq_over_limit()).
 *
 * Context: the device lock is held.
 * Return: bytes, or NXQ_UNLIMITED.
 */
u64 nxq_node_eff_max(struct nxq_node *node)
{
	bool budgeted = false;
	u64 m = NXQ_UNLIMITED;
	struct nxq_node *n;

	lockdep_assert_held(&node->dev->lock);
	for (n = node; n; n = n->parent) {
		if (n->max_set)
			m = min(m, n->max);
		budgeted |= nxq_budgeted(n) && n->parent;
	}
	if (!budgeted && node->parent)
		m = min(m, node->dev->default_max);
	return m;
}

/**
 * nxq_node_room() - what a node's own limit leaves for a charge from below
 * @node: a node that refused a charge (nxq_fits()'s hit)
 *
 * Its max less its usage; for a top-level node bound by default_max, that
 * less what is charged outside budgeted subtrees.
 *
 * Context: the device lock is held.
 * Return: bytes, or NXQ_UNLIMITED when the node has no limit of its own.
 */
u64 nxq_node_room(struct nxq_node *node)
{
	u64 used;

	lockdep_assert_held(&node->dev->lock);
	if (node->max_set)
		return node->max > node->usage ? node->max - node->usage : 0;
	if (!nxq_is_top(node) || node->min)
		return NXQ_UNLIMITED;
	used = node->usage - node->budgeted_usage;
	return node->dev->default_max > used ? node->dev->default_max - used : 0;
}

/**
 * nxq_node_share() - a node's share of the guarantees, usage aside
 * @node: the node
 *
 * Top-down: the root's is the device's capacity; a node's is its claim
 * (nxq_claim()), capped by its parent's share, and scaled by parent_share
 * / children_min when the claims of the parent's children add up to more
 * (as mm/page_counter.c shares protection among overcommitted siblings).
 * Cached per node (emin, emin_gen) and recomputed only after a min, a
 * claim or the capacity changed (dev->emin_gen): O(1) when cached,
 * O(depth) at most.
 *
 * Context: the device lock is held.
 * Return: bytes.
 */
u64 nxq_node_share(struct nxq_node *node)
{
	struct nxq_device *dev = node->dev;
	struct nxq_node *p = node->parent;
	u64 ps, claim;

	lockdep_assert_held(&dev->lock);
	if (node->emin_gen == dev->emin_gen)
		return node->emin;
	if (!p) {
		node->emin = dev->capacity;
	} else {
		ps = nxq_node_share(p);
		claim = nxq_claim(node);
		if (p->children_min > ps)
			node->emin = mul_u64_u64_div_u64(claim, ps,
							 p->children_min);
		else
			node->emin = min(claim, ps);
	}
	node->emin_gen = dev->emin_gen;
	return node->emin;
}

/* What a node's subtree charges outside the nodes below it with a min. */
static u64 nxq_free_usage(struct nxq_node *n)
{
	return n->usage - n->claimed_usage;
}

/*
 * The effective min of @node with @extra bytes more charged in its free
 * part (at or below it, under no node with a min up to it).
 */
static u64 __nxq_emin(struct nxq_node *node, u64 extra)
{
	struct nxq_node *p = node->parent;
	u64 share = nxq_node_share(node), pe, unclaimed, f, F;

	/* The root, a top-level node (the root shares nothing) or a min. */
	if (!p || !p->parent || node->min)
		return share;
	pe = p->min ? nxq_node_share(p) : __nxq_emin(p, extra);
	if (pe <= p->children_min)
		return share;
	unclaimed = pe - p->children_min;
	f = nxq_free_usage(node) + extra;
	F = nxq_free_usage(p) + extra;
	if (!F)
		return share;
	return share + mul_u64_u64_div_u64(unclaimed, min(f, F), F);
}

/**
 * nxq_node_emin() - a node's effective min
 * @node: the node
 *
 * Its share of the guarantees (nxq_node_share()); and for a node without
 * a min of its own, below a top-level node, a part of what its parent's
 * effective min leaves unclaimed by its children, in proportion to what
 * it charges outside nodes with a min among everything its siblings and
 * the parent's own holders so charge -- the memory controller's
 * memory_recursiveprot, with claims in place of protected usage.  The
 * root shares nothing this way: a top-level node has its claim only.
 * O(depth).
 *
 * Context: the device lock is held.
 * Return: bytes.
 */
u64 nxq_node_emin(struct nxq_node *node)
{
	lockdep_assert_held(&node->dev->lock);
	return __nxq_emin(node, 0);
}

/**
 * nxq_within_emin() - would a charge keep a node within its effective min?
 * @node: the charging holder's node
 * @bytes: the charge
 *
 * Its effective min as it would be with the charge made: the charge
 * raises a node without a min's part of what its parent leaves
 * unclaimed.  So the nodes without a min below a node with one share
 * what it leaves unclaimed, first come first served.
 *
 * Context: the device lock is held.
 * Return: true if usage + @bytes stays within it.
 */
bool nxq_within_emin(struct nxq_node *node, u64 bytes)
{
	u64 sum;

	lockdep_assert_held(&node->dev->lock);
	if (check_add_overflow(node->usage, bytes, &sum))
		return false;
	return sum <= __nxq_emin(node, bytes);
}

/* The most nxq_node_emin() could reach, whatever the others charge. */
static u64 nxq_emin_bound(struct nxq_node *node)
{
	struct nxq_node *p = node->parent;
	u64 share = nxq_node_share(node), pe;

	if (!p || !p->parent || node->min)
		return share;
	pe = p->min ? nxq_node_share(p) : nxq_emin_bound(p);
	return pe > p->children_min ? share + (pe - p->children_min) : share;
}

/**
 * nxq_guarantor() - the node whose guarantee a node's charges draw on
 * @node: the node
 *
 * The nearest node at or above it with a min of its own, below the root;
 * @node itself when there is none.
 *
 * Context: the device lock is held.
 * Return: the node.
 */
struct nxq_node *nxq_guarantor(struct nxq_node *node)
{
	struct nxq_node *n;

	for (n = node; n && n->parent; n = n->parent)
		if (n->min)
			return n;
	return node;
}

/* What one more charge at @node could take now: the least room left. */
static u64 nxq_node_headroom(struct nxq_node *node)
{
	struct nxq_device *dev = node->dev;
	bool budget_below = false;
	struct nxq_node *n;
	u64 room, r;

	room = dev->capacity > dev->used ? dev->capacity - dev->used : 0;
	for (n = node; n; n = n->parent) {
		r = nxq_node_room(n);
		/* default_max binds only paths without a budget */
		if (!n->max_set && budget_below)
			r = NXQ_UNLIMITED;
		room = min(room, r);
		budget_below |= nxq_budgeted(n);
	}
	return room;
}

/**
 * nxq_holder_limits() - what a holder could charge now, and at most
 * @h: the holder
 * @room: set to what one more charge could take now: the headroom, and
 *	for a holder without an eventfd, no more than keeps its node within
 *	its effective min (the largest such charge, by bisection: the room
 *	left under it shrinks as the charge grows, see nxq_within_emin())
 * @limit: set to the most its node could hold: its effective max and the
 *	capacity, and for a holder without an eventfd, the most its effective
 *	min could reach
 *
 * What a budget-aware cuMemGetInfo() reports.  O(64 x depth) at most.
 *
 * Context: the device lock is held.
 */
void nxq_holder_limits(struct nxq_holder *h, u64 *room, u64 *limit)
{
	struct nxq_node *node = h->node;
	u64 lo = 0, hi, mid;

	lockdep_assert_held(&node->dev->lock);
	*room = nxq_node_headroom(node);
	*limit = min(nxq_node_eff_max(node), node->dev->capacity);
	if (h->priv)
		return;
	*limit = min(*limit, nxq_emin_bound(node));
	if (!nxq_within_emin(node, 0)) {
		*room = 0;
		return;
	}
	/* the largest x in [0, room] with nxq_within_emin(node, x) */
	hi = *room;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2 + ((hi - lo) & 1);
		if (nxq_within_emin(node, mid))
			lo = mid;
		else
			hi = mid - 1;
	}
	*room = lo;
}

static void __nxq_node_budget(struct nxq_node *node, struct nxq_budget *b)
{
	struct nxq_device *dev = node->dev;

	lockdep_assert_held(&dev->lock);
	b->current_bytes = node->usage;
	b->max = node->max_set ? node->max : NXQ_UNLIMITED;
	b->max_set = node->max_set;
	b->effective_max = nxq_node_eff_max(node);
	b->min = node->min;
	b->effective_min = nxq_node_emin(node);
	b->claimed = node->children_min;
	if (!node->parent)
		b->overcommitted = node->children_min > dev->capacity;
	else
		b->overcommitted = node->min && node->children_min > node->min;
	b->borrowed = node->usage > b->effective_min ?
		node->usage - b->effective_min : 0;
	b->max_hits = node->max_hits;
	b->denials = node->denials;
	b->capacity = dev->capacity;
	b->used = dev->used;
	b->headroom = nxq_node_headroom(node);
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
 * nxq_holder_status() - a holder's STATUS, read under one lock
 * @h: the holder
 * @b: its node's budget (nxq_node_budget())
 * @charge: set to its charge
 * @reclaimable: set to its reclaimable bytes
 * @room: set as nxq_holder_limits() sets it
 * @limit: set as nxq_holder_limits() sets it
 * @refused: set to its last refused charge
 *
 * Context: takes the device lock.
 */
void nxq_holder_status(struct nxq_holder *h, struct nxq_budget *b,
		       u64 *charge, u64 *reclaimable, u64 *room, u64 *limit,
		       struct nxq_refusal_rec *refused)
{
	spin_lock(&h->node->dev->lock);
	__nxq_node_budget(h->node, b);
	*charge = h->charge;
	*reclaimable = h->reclaimable;
	nxq_holder_limits(h, room, limit);
	*refused = h->refused;
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
 * nxq_budgeted_between() - is a budgeted node between a node and a top?
 * @n: a node at or below @top
 * @top: the top, not counted
 *
 * Context: the device lock is held.
 * Return: true if @n or a node above it, below @top, has a budget.
 */
bool nxq_budgeted_between(struct nxq_node *n, struct nxq_node *top)
{
	for (; n && n != top; n = n->parent)
		if (nxq_budgeted(n))
			return true;
	return false;
}

/**
 * nxq_fits() - would a charge fit its path and the device now?
 * @h: the holder
 * @bytes: the charge
 * @hit: set to the deepest node at its limit with -EDQUOT (a holder
 *	without an eventfd past its effective min: the node whose guarantee
 *	it draws on, nxq_guarantor()), else NULL
 *
 * Context: the device lock is held.
 * Return: 0, -EOVERFLOW, -EDQUOT or -ENOSPC.
 */
int nxq_fits(struct nxq_holder *h, u64 bytes, struct nxq_node **hit)
{
	struct nxq_device *dev = h->node->dev;
	bool budget_below = false;
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
		if (nxq_over_limit(n, bytes, budget_below)) {
			*hit = n;
			return -EDQUOT;
		}
		budget_below |= nxq_budgeted(n);
	}
	/* Nobody can ask it for memory back: it cannot borrow. */
	if (!h->priv && !nxq_within_emin(h->node, bytes)) {
		*hit = nxq_guarantor(h->node);
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
	bool budget_below = false;
	struct nxq_node *n;
	u64 sum, lim;

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
		lim = NXQ_UNLIMITED;
		if (n->max_set)
			lim = n->max;
		else if (!budget_below && !n->min && nxq_is_top(n))
			lim = dev->default_max;
		if (sum > lim) {
			*hit = n;
			return -EDQUOT;
		}
		budget_below |= nxq_budgeted(n);
	}
	if (!h->priv && sum > nxq_emin_bound(h->node)) {
		*hit = nxq_guarantor(h->node);
		return -EDQUOT;
	}
	if (sum > dev->capacity)
		return -ENOSPC;
	return 0;
}

/**
 * nxq_waiters_add() - count a waiting charge on its subtree
 * @node: the node it charges
 *
 * Every own waiters_max on the path against its subtree's waiters, and
 * the default against @node's own when it has no waiters_max.
 *
 * Context: the device lock is held.
 * Return: 0, or -EAGAIN if a limit is reached (nothing counted).
 */
int nxq_waiters_add(struct nxq_node *node)
{
	struct nxq_node *n;

	lockdep_assert_held(&node->dev->lock);
	if (nxq_objects_full(node, NXQ_LIM_WAITERS_MAX, node->own_waiters,
			     subtree_waiters))
		return -EAGAIN;
	for (n = node; n; n = n->parent)
		n->subtree_waiters++;
	node->own_waiters++;
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
	node->own_waiters--;
}

/* Uncharge @bytes from @n and its ancestors. */
static void nxq_uncharge_path(struct nxq_node *n, u64 bytes)
{
	bool claim_below = false, budget_below = false;

	lockdep_assert_held(&n->dev->lock);
	for (; n; n = n->parent)
		nxq_path_sub(n, bytes, &claim_below, &budget_below);
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

/**
 * nxq_claim_changed() - carry a change of a node's claim up the tree
 * @node: the node whose claim (nxq_claim()) changed
 * @old_claim: its claim before
 * @new_claim: its claim now
 *
 * Its parent's children_min changes by the difference, and so does the
 * claim of every ancestor without a min of its own, up to the first one
 * with a min (whose claim is its min) or the root.  O(depth).
 *
 * Context: the device lock is held; the caller bumps dev->emin_gen.
 */
void nxq_claim_changed(struct nxq_node *node, u64 old_claim, u64 new_claim)
{
	struct nxq_node *p;
	u64 before;

	lockdep_assert_held(&node->dev->lock);
	for (p = node->parent; p && old_claim != new_claim; p = p->parent) {
		before = nxq_claim(p);
		p->children_min = p->children_min - old_claim + new_claim;
		old_claim = before;
		new_claim = nxq_claim(p);
	}
}

/*
 * Move @n's usage into (@add) or out of its ancestors' @field, up to the
 * first one for which @stop holds.
 */
#define nxq_kind_move(n, field, add, stop)				\
do {									\
	struct nxq_node *__p;						\
	u64 __d = (n)->usage - (n)->field;				\
									\
	for (__p = (n)->parent; __p; __p = __p->parent) {		\
		if (add)						\
			__p->field += __d;				\
		else							\
			__p->field -= __d;				\
		if (stop(__p))						\
			break;						\
	}								\
} while (0)

static bool nxq_claiming(const struct nxq_node *n)
{
	return n->min;
}

/**
 * nxq_kind_changed() - a node gained or lost a min, or a budget
 * @node: the node
 * @was_claiming: it had a min of its own before
 * @was_budgeted: it had a budget of its own before (nxq_budgeted())
 *
 * Keeps claimed_usage and budgeted_usage of its ancestors up to the
 * nearest one of the same kind: its usage now counts as a whole there
 * (less what nodes of that kind below it already counted), or no longer.
 * O(depth).
 *
 * Context: the device lock is held.
 */
void nxq_kind_changed(struct nxq_node *node, bool was_claiming,
		      bool was_budgeted)
{
	lockdep_assert_held(&node->dev->lock);
	if (was_claiming != nxq_claiming(node))
		nxq_kind_move(node, claimed_usage, !was_claiming, nxq_claiming);
	if (was_budgeted != nxq_budgeted(node))
		nxq_kind_move(node, budgeted_usage, !was_budgeted,
			      nxq_budgeted);
}
