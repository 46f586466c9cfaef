/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger, layer 4: the charge path's entry points -- charge,
 * uncharge, reclaimable bytes, tickets read and answered.  Each takes the
 * device lock and composes the layers below (counters, the queue,
 * pressure); it calls nothing of objects.c, budget.c or holder.c, its
 * siblings.
 */
#ifndef _NXQ_CHARGE_H
#define _NXQ_CHARGE_H

#include "pressure.h"

/* nxq_charge_begin() and nxq_charge_tick(): the charge waits. */
#define NXQ_CHARGE_QUEUED	1

int nxq_charge_begin(struct nxq_holder *h, struct nxq_waiter *w, u64 bytes,
		     u64 timeout_ns, unsigned int flags,
		     void (*done)(struct nxq_waiter *w));
int nxq_charge_tick(struct nxq_waiter *w);
void nxq_charge_cancel(struct nxq_waiter *w, int err);
int nxq_charge_end(struct nxq_waiter *w, u64 *charged,
		   struct nxq_refusal_rec *why);
int nxq_charge_slow(struct nxq_holder *h, u64 bytes, u64 timeout_ns,
		    unsigned int flags, u64 *charged,
		    struct nxq_refusal_rec *why);
int nxq_uncharge_slow(struct nxq_holder *h, u64 bytes, u64 *charged);
int nxq_set_reclaimable(struct nxq_holder *h, u64 bytes);
int nxq_ticket_read(struct nxq_holder *h, struct nxq_ticket_state *t);
int nxq_ticket_answer(struct nxq_holder *h, u64 generation, u64 released,
		      u64 *charged);

/**
 * nxq_try_charge() - nxq_charge()'s uncontended case, inline
 * @h: the holder
 * @bytes: bytes to add
 * @charged: or NULL: set to the holder's charge after a charge
 *
 * Charges if nxq_fast_fits() says the charge fits with nobody waiting,
 * exactly as nxq_charge_slow() would; else charges nothing and leaves
 * the decision (and its errno) to it.  An uncontended charge then costs
 * no call into charge.c and no waiter on the stack.
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
		if (charged)
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
 * @charged: or NULL: set to the holder's charge after an uncharge
 *
 * Uncharges a holder with nothing left on earlier nodes (residue_bytes 0:
 * a drained residue stays listed until the holder ends, but costs
 * nothing) exactly as nxq_uncharge_slow()
 * would; else does nothing and leaves it (and its errno) to it.
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
	    !h->residue_bytes) {
		nxq_uncharge_fast(h, bytes);
		if (charged)
			*charged = h->charge;
		done = true;
	}
	spin_unlock(&dev->lock);
	return done;
}

/**
 * nxq_charge() - charge bytes to a holder, all or nothing
 * @h: the holder
 * @bytes: bytes to add, non-zero
 * @timeout_ns: 0 not to wait; else the longest wait for a grant
 * @charged: or NULL: set to the holder's charge after the call
 *
 * The uncontended case inline (nxq_try_charge()), the rest in
 * nxq_charge_slow(), whose comment says what a charge does.
 *
 * Context: process context; sleeps only when waiting.
 * Return: as nxq_charge_slow().
 */
static inline int nxq_charge(struct nxq_holder *h, u64 bytes, u64 timeout_ns,
			     u64 *charged)
{
	if (nxq_try_charge(h, bytes, charged))
		return 0;
	return nxq_charge_slow(h, bytes, timeout_ns, 0, charged, NULL);
}

/**
 * nxq_charge_why() - nxq_charge() or nxq_charge_probe(), and what refused
 * @h: the holder
 * @bytes: bytes to add
 * @timeout_ns: 0 not to wait; else the longest wait (not with a probe)
 * @flags: NXQ_CHARGE_PROBE or 0
 * @charged: or NULL: set to the holder's charge after the call
 * @why: set to the charge's refusal, all zero when it names none
 *	(nxq_charge_slow())
 *
 * For a shell that hands the refusal back in the same reply (struct
 * nxq_charge version 1), so that its caller need not ask again: the
 * holder's last refusal (STATUS) may be another thread's by then.
 *
 * Context: process context; sleeps only when waiting.
 * Return: as nxq_charge_slow().
 */
static inline int nxq_charge_why(struct nxq_holder *h, u64 bytes,
				 u64 timeout_ns, unsigned int flags,
				 u64 *charged, struct nxq_refusal_rec *why)
{
	if (nxq_try_charge(h, bytes, charged)) {
		memset(why, 0, sizeof(*why));
		return 0;
	}
	return nxq_charge_slow(h, bytes, timeout_ns, flags, charged, why);
}

/**
 * nxq_charge_probe() - a charge whose refusal nobody hears of
 * @h: the holder
 * @bytes: bytes to add
 * @charged: or NULL: set to the holder's charge after the call
 *
 * NXQ_CHARGE_PROBE: as nxq_charge() without a wait, except that a refusal
 * is not counted, reported, recorded or asked for -- the caller asks again
 * for less, and that charge speaks for the refusal.
 *
 * Context: takes the device lock; does not sleep.
 * Return: as nxq_charge_slow().
 */
static inline int nxq_charge_probe(struct nxq_holder *h, u64 bytes,
				   u64 *charged)
{
	if (nxq_try_charge(h, bytes, charged))
		return 0;
	return nxq_charge_slow(h, bytes, 0, NXQ_CHARGE_PROBE, charged, NULL);
}

/**
 * nxq_uncharge() - take bytes back from a holder
 * @h: the holder
 * @bytes: bytes, non-zero and at most the holder's charge
 * @charged: or NULL: set to the holder's charge after the call
 *
 * The common case inline (nxq_try_uncharge()), the rest in
 * nxq_uncharge_slow().
 *
 * Context: takes the device lock; does not sleep.
 * Return: as nxq_uncharge_slow().
 */
static inline int nxq_uncharge(struct nxq_holder *h, u64 bytes, u64 *charged)
{
	if (nxq_try_uncharge(h, bytes, charged))
		return 0;
	return nxq_uncharge_slow(h, bytes, charged);
}

#endif /* _NXQ_CHARGE_H */
