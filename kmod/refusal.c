// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota ledger, layer 1 beside the counters (counter.h declares it): a
 * refused charge, recorded, counted and reported.  The record is the
 * holder's last refusal, which STATUS reports, and the charge's own,
 * which nxq_charge_why() hands back in the same reply: the node that
 * refused (its id and level), why (NXQ_REFUSED_*), and its limit, min
 * and usage at that moment.  Everything here runs under nxq_device.lock;
 * nothing allocates or sleeps.
 */
#include <linux/lockdep.h>
#include <linux/overflow.h>
#include <linux/errno.h>
#include <linux/ktime.h>
#include <linux/string.h>

#include "counter.h"

/*
 * What @hit's limit was when a charge of @bytes from @h's path met it:
 * its max, default_max over what it charges outside budgets, or (a
 * holder without an eventfd) the guarantee it draws on.
 */
static void nxq_hit_limit(struct nxq_holder *h, struct nxq_node *hit,
			  u64 bytes, struct nxq_refusal_rec *r)
{
	u64 sum;

	r->min = hit->min;
	r->id = hit->id;
	if (hit->max_set && (check_add_overflow(hit->usage, bytes, &sum) ||
			     sum > hit->max)) {
		r->reason = NXQ_REFUSED_MAX;
		r->limit = hit->max;
		r->usage = hit->usage;
	} else if (!nxq_budgeted(hit) && nxq_is_top(hit) &&
		   !nxq_budgeted_between(h->node, hit)) {
		r->reason = NXQ_REFUSED_DEFAULT_MAX;
		r->limit = hit->dev->default_max;
		r->usage = hit->usage - hit->budgeted_usage;
	} else {
		r->reason = NXQ_REFUSED_MIN;
		r->limit = nxq_node_emin(hit);
		r->usage = hit->usage;
	}
}

/**
 * nxq_record_refusal() - keep a holder's last refused charge for STATUS
 * @h: the holder
 * @bytes: the charge
 * @err: why (-EDQUOT, -ENOSPC, ...)
 * @hit: with -EDQUOT, the node that refused
 *
 * Context: the device lock is held.
 */
void nxq_record_refusal(struct nxq_holder *h, u64 bytes, int err,
			struct nxq_node *hit)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_refusal_rec *r = &h->refused;
	struct nxq_node *n;

	lockdep_assert_held(&dev->lock);
	memset(r, 0, sizeof(*r));
	r->err = -err;
	r->bytes = bytes;
	r->ns = ktime_get_ns();
	if (err == -ENOSPC) {
		r->level = NXQ_LEVEL_DEVICE;
		r->reason = NXQ_REFUSED_CAPACITY;
		r->limit = dev->capacity;
		r->usage = dev->used;
		return;
	}
	if (!hit)
		return;
	for (n = h->node; n && n != hit; n = n->parent)
		r->level++;
	nxq_hit_limit(h, hit, bytes, r);
	if (err != -EDQUOT)	/* -EOVERFLOW: a counter, not a limit */
		r->reason = 0;
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
	nxq_record_refusal(h, bytes, err, hit);
	if (hit)
		hit->max_hits++;
	if (err == -ENOSPC)
		dev->capacity_hits++;
	dev->denials++;
	for (n = h->node; n; n = n->parent)
		n->denials++;
	nxq_event(dev, NXQ_EV_DENIED, NULL, h, bytes, hit ? hit->id : 0, -err);
}
