// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota ledger, layer 4: budget nodes' budgets -- max, min,
 * kill-on-ignore, the checks and application of a budget request, and the
 * refusal's message (see objects.h).  The nodes themselves (creation,
 * references, lifetime) are objects.c's.
 */
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/lockdep.h>
#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/err.h>
#include <linux/kernel.h>

#include "objects.h"

/* nxq_node_set_max() under the device lock: no dispatch. */
static void __nxq_node_set_max(struct nxq_node *node, u64 max)
{
	struct nxq_device *dev = node->dev;
	bool was_budgeted = nxq_budgeted(node);

	lockdep_assert_held(&dev->lock);
	node->max = max;
	node->max_set = true;
	nxq_kind_changed(node, node->min, was_budgeted);
	nxq_event(dev, NXQ_EV_BUDGET_CHANGED, node, NULL, max, node->min, 0);
	if (node->usage > max)
		nxq_ask_budget(node, node->usage - max);
}

/**
 * nxq_node_set_max() - set a node's hard cap
 * @node: the node
 * @max: bytes, or NXQ_UNLIMITED
 *
 * Lowering max below the node's usage takes nothing back: it refuses
 * further charges and opens NXQ_TICKET_REASON_BUDGET tickets on the
 * subtree's holders for the excess.  Raising it serves waiters.  The max
 * becomes the node's own: the node has a budget, and default_max no
 * longer binds its subtree.  No check (nxq_node_apply() checks).
 *
 * Context: takes the device lock.
 */
void nxq_node_set_max(struct nxq_node *node, u64 max)
{
	struct nxq_device *dev = node->dev;

	spin_lock(&dev->lock);
	__nxq_node_set_max(node, max);
	nxq_dispatch(dev);
	spin_unlock(&dev->lock);
}

/* nxq_node_set_min() under the device lock: no dispatch. */
static void __nxq_node_set_min(struct nxq_node *node, u64 min)
{
	bool was_claiming = node->min, was_budgeted = nxq_budgeted(node);
	u64 old_claim = nxq_claim(node);

	lockdep_assert_held(&node->dev->lock);
	node->min = min;
	nxq_claim_changed(node, old_claim, nxq_claim(node));
	nxq_kind_changed(node, was_claiming, was_budgeted);
	node->dev->emin_gen++;
	nxq_event(node->dev, NXQ_EV_BUDGET_CHANGED, node, NULL,
		  node->max_set ? node->max : NXQ_UNLIMITED, min, 0);
}

/**
 * nxq_node_set_min() - set a node's guarantee
 * @node: the node
 * @min: bytes; 0 for none of its own (it then claims its children's
 *	guarantees, and shares its parent's unclaimed one)
 *
 * Serves waiters: a larger guarantee may let a holder without an eventfd
 * charge more.  No check (nxq_node_apply() checks).
 *
 * Context: takes the device lock.
 */
void nxq_node_set_min(struct nxq_node *node, u64 min)
{
	spin_lock(&node->dev->lock);
	__nxq_node_set_min(node, min);
	nxq_dispatch(node->dev);
	spin_unlock(&node->dev->lock);
}

/**
 * nxq_node_set_kill_on_ignore() - set a node's escalation policy
 * @node: the node
 * @on: kill holders at or below it that ignore tickets past a deadline
 *
 * Context: takes the device lock.
 */
void nxq_node_set_kill_on_ignore(struct nxq_node *node, bool on)
{
	spin_lock(&node->dev->lock);
	node->kill_on_ignore = on;
	spin_unlock(&node->dev->lock);
}

/**
 * nxq_node_clear_budget() - forget a node's max, min, kill policy and
 * limits, and free it if nothing else needs it
 * @node: the node; the ledger lock is held; @node may be freed
 *
 * Context: the ledger lock is held; takes the device lock.
 */
void nxq_node_clear_budget(struct nxq_node *node)
{
	struct nxq_device *dev = node->dev;
	bool was_budgeted;

	lockdep_assert_held(&dev->ledger->lock);
	spin_lock(&dev->lock);
	__nxq_node_set_min(node, 0);
	was_budgeted = nxq_budgeted(node);
	node->max = NXQ_UNLIMITED;
	node->max_set = false;
	nxq_kind_changed(node, false, was_budgeted);
	nxq_event(dev, NXQ_EV_BUDGET_CHANGED, node, NULL, NXQ_UNLIMITED, 0, 0);
	node->kill_on_ignore = false;
	memset32(node->lim, NXQ_LIMIT_UNSET, NXQ_NR_LIMITS);
	nxq_dispatch(dev);	/* a cleared max may free room, or bind */
	spin_unlock(&dev->lock);
	nxq_node_prune(node);
}

/* The nearest ancestor whose claim is its own min, or the root. */
static struct nxq_node *nxq_claim_top(struct nxq_node *node)
{
	struct nxq_node *a;

	for (a = node->parent; a; a = a->parent)
		if (a->min || !a->parent)
			return a;
	return NULL;
}

/*
 * The claims under each ancestor of @node if its min became @min, as
 * nxq_claim_changed() would carry them up: refused where one would pass
 * NXQ_BYTES_MAX.  Each term is at most that, so the sums cannot wrap.
 * O(depth).
 */
static int nxq_claims_bounded(struct nxq_node *node, u64 min,
			      struct nxq_budget_refusal *why)
{
	u64 old = nxq_claim(node), new = min ?: node->children_min, sum;
	struct nxq_node *p;

	for (p = node->parent; p && old != new; p = p->parent) {
		sum = p->children_min - old + new;
		if (sum > NXQ_BYTES_MAX) {
			why->why = NXQ_REFUSE_BOUND;
			why->node = p;
			why->value = sum;
			why->limit = NXQ_BYTES_MAX;
			return -EOVERFLOW;
		}
		old = nxq_claim(p);
		new = p->min ?: sum;
	}
	return 0;
}

/**
 * nxq_node_check() - would a budget request leave a possible budget?
 * @node: the node
 * @r: the request
 * @why: filled in when refused
 *
 * Refused: a min above the max; a min, or the guarantees under any
 * ancestor, above NXQ_BYTES_MAX (-EOVERFLOW, overcommit or not); a min
 * above the device's capacity; and,
 * unless @r->overcommit, a min below what the node's children claim, or
 * one that makes the guarantees under its nearest ancestor with a min of
 * its own (or on the device) add up to more than that min (or the
 * capacity).  A request that does not raise a claim is never refused for
 * an overcommit that is already there.
 *
 * Context: the device lock is held.
 * Return: 0, -EINVAL (min above max), -EOVERFLOW (past NXQ_BYTES_MAX) or
 * -ENOSPC (no room for the guarantee).
 */
int nxq_node_check(struct nxq_node *node, const struct nxq_budget_req *r,
		   struct nxq_budget_refusal *why)
{
	int err;

	struct nxq_device *dev = node->dev;
	u64 max, min, old_claim, new_claim, total, limit;
	struct nxq_node *a;

	lockdep_assert_held(&dev->lock);
	memset(why, 0, sizeof(*why));
	why->node = node;
	max = r->set_max ? r->max :
	      (node->max_set ? node->max : NXQ_UNLIMITED);
	min = r->set_min ? r->min : node->min;
	if ((r->set_max || r->set_min) && min > max) {
		why->why = NXQ_REFUSE_MIN_ABOVE_MAX;
		why->value = min;
		why->limit = max;
		return -EINVAL;
	}
	if (!r->set_min)
		return 0;
	if (min > NXQ_BYTES_MAX) {
		why->why = NXQ_REFUSE_BOUND;
		why->value = min;
		why->limit = NXQ_BYTES_MAX;
		return -EOVERFLOW;
	}
	err = nxq_claims_bounded(node, min, why);
	if (err)
		return err;
	if (min > dev->capacity) {
		why->why = NXQ_REFUSE_MIN_ABOVE_DEVICE;
		why->value = min;
		why->limit = dev->capacity;
		return -ENOSPC;
	}
	if (r->overcommit)
		return 0;
	if (min && node->children_min > min && (!node->min || min < node->min)) {
		why->why = NXQ_REFUSE_CHILDREN;
		why->value = node->children_min;
		why->limit = min;
		return -ENOSPC;
	}
	old_claim = nxq_claim(node);
	new_claim = min ?: node->children_min;
	a = nxq_claim_top(node);
	if (!a || new_claim <= old_claim)
		return 0;
	total = a->children_min - old_claim + new_claim;
	limit = a->parent ? a->min : dev->capacity;
	if (total <= limit)
		return 0;
	why->why = a->parent ? NXQ_REFUSE_PARENT : NXQ_REFUSE_DEVICE;
	why->node = a;
	why->value = total;
	why->limit = limit;
	return -ENOSPC;
}

/**
 * nxq_node_apply() - check and apply a budget request to a node
 * @node: the node, referenced
 * @r: what to change
 * @why: set when refused (nxq_node_check())
 *
 * The one budget-setting function behind sysfs and netlink: checked and
 * applied under one hold of the device lock, so a refused request
 * changes nothing and two requests cannot pass their checks together.
 *
 * Context: takes the device lock.
 * Return: 0, or nxq_node_check()'s errno.
 */
int nxq_node_apply(struct nxq_node *node, const struct nxq_budget_req *r,
		   struct nxq_budget_refusal *why)
{
	struct nxq_device *dev = node->dev;
	int i, err;

	spin_lock(&dev->lock);
	err = nxq_node_check(node, r, why);
	if (err)
		goto out;
	if (r->set_max)
		__nxq_node_set_max(node, r->max);
	if (r->set_min)
		__nxq_node_set_min(node, r->min);
	if (r->set_kill)
		node->kill_on_ignore = r->kill_on_ignore;
	for (i = 0; i < NXQ_NR_LIMITS; i++)
		if (r->set_lim & BIT(i))
			node->lim[i] = r->lim[i];
	nxq_dispatch(dev);
out:
	spin_unlock(&dev->lock);
	return err;
}

/* @v as the size suffixes read it back: "4G", "1536K", "max", bytes. */
static const char *nxq_fmt_bytes(u64 v, char *buf, size_t size)
{
	static const char sfx[] = "KMGTPE";
	int i = -1;

	if (v == NXQ_UNLIMITED)
		return "max";
	while (v && !(v & 1023) && i < 5) {
		v >>= 10;
		i++;
	}
	if (i < 0)
		snprintf(buf, size, "%llu", (unsigned long long)v);
	else
		snprintf(buf, size, "%llu%c", (unsigned long long)v, sfx[i]);
	return buf;
}

/* A node's path through the shell's key_path hook, or "#ID". */
static const char *nxq_node_name(struct nxq_node *node, char *buf,
				 size_t size)
{
	const struct nxq_ledger_ops *ops = node->dev->ledger->ops;

	if (!ops || !ops->key_path || ops->key_path(node->key, buf, size) < 0)
		snprintf(buf, size, "#%llu", (unsigned long long)node->id);
	return buf;
}

/**
 * nxq_refusal_msg() - say why a budget request was refused
 * @node: the node of the request
 * @why: what nxq_node_apply() filled in
 * @buf: the message, NUL-terminated
 * @size: its size
 * @paths: name the nodes (for a log or the daemon's reply); without,
 *	the message fits netlink's 80 bytes of a formatted extended ack
 *
 * One line naming the values and the way out, for the shells to pass on.
 *
 * Context: process context; the nodes are referenced.
 */
void nxq_refusal_msg(struct nxq_node *node,
		     const struct nxq_budget_refusal *why, char *buf,
		     size_t size, bool paths)
{
	char *p = paths ? kmalloc(2 * NXQ_PATH_MSG, GFP_KERNEL) : NULL;
	char v[24], l[24];
	const char *path = "", *apath = "an ancestor", *sep = "";

	if (p) {
		path = nxq_node_name(node, p, NXQ_PATH_MSG);
		apath = nxq_node_name(why->node, p + NXQ_PATH_MSG,
				      NXQ_PATH_MSG);
		sep = ": ";
	}
	nxq_fmt_bytes(why->value, v, sizeof(v));
	nxq_fmt_bytes(why->limit, l, sizeof(l));
	switch (why->why) {
	case NXQ_REFUSE_MIN_ABOVE_MAX:
		snprintf(buf, size, "%s%smin %s is above its max %s", path, sep,
			 v, l);
		break;
	case NXQ_REFUSE_MIN_ABOVE_DEVICE:
		snprintf(buf, size, "%s%smin %s is above the device's capacity %s",
			 path, sep, v, l);
		break;
	case NXQ_REFUSE_CHILDREN:
		snprintf(buf, size,
			 "%s%smin %s is below its children's guarantees, %s (or overcommit)",
			 path, sep, l, v);
		break;
	case NXQ_REFUSE_PARENT:
		snprintf(buf, size,
			 "%s%sguarantees under %s would be %s, above its min %s (or overcommit)",
			 path, sep, apath, v, l);
		break;
	case NXQ_REFUSE_DEVICE:
		snprintf(buf, size,
			 "%s%sguarantees on the device would be %s, above its %s (or overcommit)",
			 path, sep, v, l);
		break;
	case NXQ_REFUSE_BOUND:
		snprintf(buf, size,
			 "%s%sguarantees under %s would be %s, above the most the ledger counts, %s",
			 path, sep, apath, v, l);
		break;
	default:
		snprintf(buf, size, "%s%sbudget refused", path, sep);
	}
	kfree(p);
}
