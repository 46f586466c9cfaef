/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger, layer 4: the charge path's entry points -- charge,
 * uncharge, reclaimable bytes, tickets read and answered.  Each takes the
 * device lock and composes the layers below (counters, the queue,
 * pressure); it calls nothing of objects.c, its sibling.
 */
#ifndef _NXQ_CHARGE_H
#define _NXQ_CHARGE_H

#include "pressure.h"

int nxq_charge(struct nxq_holder *h, u64 bytes, u64 timeout_ns,
	       u64 *charged);
int nxq_uncharge(struct nxq_holder *h, u64 bytes, u64 *charged);
int nxq_set_reclaimable(struct nxq_holder *h, u64 bytes);
int nxq_ticket_read(struct nxq_holder *h, struct nxq_ticket_state *t);
int nxq_ticket_answer(struct nxq_holder *h, u64 generation, u64 released,
		      u64 *charged);

/**
 * nxq_try_charge() - nxq_charge()'s uncontended case, inline
 * @h: the holder
 * @bytes: bytes to add
 * @charged: set to the holder's charge after a charge
 *
 * Charges if nxq_fast_fits() says the charge fits with nobody waiting,
 * exactly as nxq_charge() would; else charges nothing and leaves the
 * decision (and its errno) to nxq_charge().  The ioctl's fast path calls
 * this first: an uncontended charge then costs no call into the ledger
 * and no waiter on the stack.
 *
 * Context: takes the device lock; does not sleep.
 * Return: true if charged.
 */
static inline bool nxq_try_charge(struct nxq_holder *h, u64 bytes,
				  u64 *charged)
{
	struct nxq_device *dev = h->node->dev;
	bool done = false;

	spin_lock(&dev->lock);
	if (bytes && !h->detached && nxq_fast_fits(h, bytes)) {
		nxq_commit(h, bytes);
		*charged = h->charge;
		done = true;
	}
	spin_unlock(&dev->lock);
	return done;
}

/**
 * nxq_try_uncharge() - nxq_uncharge()'s common case, inline
 * @h: the holder
 * @bytes: bytes to take back
 * @charged: set to the holder's charge after an uncharge
 *
 * Uncharges a holder with no residue exactly as nxq_uncharge() would;
 * else does nothing and leaves it (and its errno) to nxq_uncharge().
 *
 * Context: takes the device lock; does not sleep.
 * Return: true if uncharged.
 */
static inline bool nxq_try_uncharge(struct nxq_holder *h, u64 bytes,
				    u64 *charged)
{
	struct nxq_device *dev = h->node->dev;
	bool done = false;

	spin_lock(&dev->lock);
	if (bytes && !h->detached && bytes <= h->charge &&
	    list_empty(&h->residue)) {
		nxq_uncharge_fast(h, bytes);
		*charged = h->charge;
		done = true;
	}
	spin_unlock(&dev->lock);
	return done;
}

#endif /* _NXQ_CHARGE_H */
