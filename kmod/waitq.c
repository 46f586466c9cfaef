// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota ledger, layer 2: the fair wait queue (see waitq.h).
 *
 * The queue is kept in order of its key: enqueue time minus priority x
 * NXQ_AGING_NS, so priority is worth a bounded head start and everyone
 * ages at the same rate; the order never changes once queued, so
 * nxq_dispatch() is one pass, O(waiters x depth).  A waiter that does
 * not fit its own path marks the constraint it hit (the node at max, or
 * the device) blocked for the rest of the pass, so a later waiter needing
 * the same room cannot overtake it; a waiter blocked only by another's
 * constraint is not granted, and its asks go to that constraint.  Each
 * node counts the waiters held up by it (nr_blocked), the device those
 * short of capacity (nr_dev_blocked): a charge whose path has none takes
 * the fast path even when others wait elsewhere, and a release runs a
 * dispatch pass only when a waiter waits on its path or on the device --
 * so a tenant's waiters cost a neighbour nothing.  A waiter sleeps on
 * dev->wq without the lock, until an absolute hrtimer deadline; whoever
 * grants or cancels it sets w->result under the lock and wakes the queue.
 */
#include <linux/ktime.h>
#include <linux/hrtimer.h>
#include <linux/wait.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/lockdep.h>
#include <linux/errno.h>

#include "waitq.h"

/**
 * nxq_enqueue() - queue a waiter in key order
 * @dev: the device
 * @w: the waiter; its h and enqueued_ns are set
 *
 * Equal keys keep arrival order.  O(waiters) at worst; a new waiter of
 * priority 0 goes to the tail at once.
 *
 * Context: the device lock is held.
 */
void nxq_enqueue(struct nxq_device *dev, struct nxq_waiter *w)
{
	struct nxq_waiter *pos;

	lockdep_assert_held(&dev->lock);
	w->key = (s64)w->enqueued_ns -
		 (s64)w->h->priority * (s64)NXQ_AGING_NS;
	dev->nr_waiters++;
	list_for_each_entry_reverse(pos, &dev->waiters, link) {
		if (pos->key <= w->key) {
			list_add(&w->link, &pos->link);
			return;
		}
	}
	list_add(&w->link, &dev->waiters);
}

/**
 * nxq_dequeue() - take a waiter off the queue
 * @dev: the device
 * @w: a queued waiter
 *
 * Keeps the device's count of queued waiters (nr_waiters), which sysfs and
 * netlink report without walking the queue.
 *
 * Context: the device lock is held.
 */
void nxq_dequeue(struct nxq_device *dev, struct nxq_waiter *w)
{
	lockdep_assert_held(&dev->lock);
	list_del_init(&w->link);
	dev->nr_waiters--;
}

/**
 * nxq_waiter_set() - record why a waiter waits
 * @dev: the device
 * @w: the waiter
 * @err: -EDQUOT, -ENOSPC, another errno, or 0 to uncount a waiter that
 *	leaves the queue
 * @hit: the node at max with -EDQUOT
 *
 * Keeps the per-constraint counts of waiters: nr_blocked of the node at
 * max, nr_dev_blocked of the device.  A charge that needs no constraint
 * held up by a waiter skips the queue, and a release dispatches only if
 * a waiter waits on its path or on the device.
 *
 * Context: the device lock is held.
 */
void nxq_waiter_set(struct nxq_device *dev, struct nxq_waiter *w,
			   int err, struct nxq_node *hit)
{
	lockdep_assert_held(&dev->lock);
	if (w->blk_node)
		w->blk_node->nr_blocked--;
	if (w->blk_dev)
		dev->nr_dev_blocked--;
	w->err = err;
	w->hit = hit;
	w->blk_node = err == -EDQUOT ? hit : NULL;
	w->blk_dev = err == -ENOSPC;
	if (w->blk_node)
		w->blk_node->nr_blocked++;
	if (w->blk_dev)
		dev->nr_dev_blocked++;
}

/**
 * nxq_path_blocked() - does a waiter wait on a constraint of a path?
 * @dev: the device
 * @node: the path's node
 *
 * Context: the device lock is held.
 * Return: true if a waiter waits on a node of @node's path, or on the
 * device's capacity.
 */
bool nxq_path_blocked(struct nxq_device *dev, struct nxq_node *node)
{
	struct nxq_node *n;

	lockdep_assert_held(&dev->lock);
	if (dev->nr_dev_blocked)
		return true;
	for (n = node; n; n = n->parent)
		if (n->nr_blocked)
			return true;
	return false;
}

/*
 * Is @w's room promised to a waiter served before it in this pass?  Then
 * say why in w->err and w->hit.
 */
static bool nxq_waiter_blocked(struct nxq_device *dev, struct nxq_waiter *w,
			       u64 pass, bool dev_full)
{
	struct nxq_node *n;

	lockdep_assert_held(&dev->lock);
	for (n = w->h->node; n; n = n->parent) {
		if (n->blocked_pass == pass) {
			nxq_waiter_set(dev, w, -EDQUOT, n);
			return true;
		}
	}
	if (dev_full) {
		nxq_waiter_set(dev, w, -ENOSPC, NULL);
		return true;
	}
	return false;
}

/**
 * nxq_dispatch() - grant queued charges that fit, in queue order
 * @dev: the device
 *
 * One pass over the queue, O(waiters x depth); nothing when it is empty.
 * A waiter is checked against its own path first (so it is told about its
 * own constraint), then against the constraints of those before it.
 *
 * Context: the device lock is held.
 */
void nxq_dispatch(struct nxq_device *dev)
{
	struct nxq_waiter *w, *tmp;
	bool dev_full = false, woke = false;
	struct nxq_node *hit;
	u64 pass;
	int err;

	lockdep_assert_held(&dev->lock);
	if (list_empty(&dev->waiters))
		return;
	pass = ++dev->dispatch_pass;
	list_for_each_entry_safe(w, tmp, &dev->waiters, link) {
		err = nxq_fits(w->h, w->bytes, &hit);
		if (!err) {
			if (nxq_waiter_blocked(dev, w, pass, dev_full))
				continue;
			nxq_commit(w->h, w->bytes);
			nxq_waiter_set(dev, w, 0, NULL);
			w->result = 0;
			nxq_dequeue(dev, w);
			woke = true;
			continue;
		}
		nxq_waiter_set(dev, w, err, hit);
		if (err == -EDQUOT)
			hit->blocked_pass = pass;
		else if (err == -ENOSPC)
			dev_full = true;
	}
	if (woke)
		wake_up_all(&dev->wq);
}

/**
 * nxq_dispatch_path() - dispatch after a release on @node's path
 * @dev: the device
 * @node: where bytes were released
 *
 * Only a waiter held up by a node of that path, or by the device, can be
 * granted by it: with none, nothing to do, whatever the queue holds.
 *
 * Context: the device lock is held.
 */
void nxq_dispatch_path(struct nxq_device *dev, struct nxq_node *node)
{
	lockdep_assert_held(&dev->lock);
	if (nxq_path_blocked(dev, node))
		nxq_dispatch(dev);
}

/**
 * nxq_dispatch_holder() - dispatch after a holder released bytes
 * @dev: the device
 * @h: the holder
 *
 * On its path only, unless it has residues on other nodes (drained ones,
 * which stay listed until the holder ends, do not count).
 *
 * Context: the device lock is held.
 */
void nxq_dispatch_holder(struct nxq_device *dev, struct nxq_holder *h)
{
	lockdep_assert_held(&dev->lock);
	if (!h->residue_bytes)
		nxq_dispatch_path(dev, h->node);
	else
		nxq_dispatch(dev);
}

/**
 * nxq_queued_ahead() - bytes of the other charges queued on the same
 * constraint
 * @dev: the device
 * @me: the waiter asking
 *
 * Together they are what the constraint lacks.  O(waiters).
 *
 * Context: the device lock is held.
 * Return: bytes (saturated).
 */
u64 nxq_queued_ahead(struct nxq_device *dev, struct nxq_waiter *me)
{
	struct nxq_waiter *w;
	u64 sum = 0;

	lockdep_assert_held(&dev->lock);
	list_for_each_entry(w, &dev->waiters, link) {
		if (w == me || w->err != me->err)
			continue;
		if (me->err == -EDQUOT && !nxq_is_below(w->h->node, me->hit))
			continue;
		sum = size_add(sum, w->bytes);
	}
	return sum;
}

/**
 * nxq_sleep() - wait until a waiter is granted or cancelled
 * @dev: the device
 * @w: the queued waiter
 * @deadline: absolute CLOCK_MONOTONIC time (ns)
 *
 * Sleeps on dev->wq without the lock until w->result settles, a signal,
 * or @deadline (an absolute hrtimer).
 *
 * Context: process context; the device lock is held, dropped while
 * sleeping and held again on return.
 * Return: 0 when w->result settled, -EINTR, or -ETIMEDOUT.
 */
int nxq_sleep(struct nxq_device *dev, struct nxq_waiter *w,
		     u64 deadline)
{
	DEFINE_WAIT(wait);
	ktime_t expires;
	int ret = 0;

	lockdep_assert_held(&dev->lock);
	for (;;) {
		prepare_to_wait(&dev->wq, &wait, TASK_INTERRUPTIBLE);
		if (READ_ONCE(w->result) <= 0)
			break;
		if (signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		if (ktime_get_ns() >= deadline) {
			ret = -ETIMEDOUT;
			break;
		}
		spin_unlock(&dev->lock);
		expires = ns_to_ktime(deadline);
		schedule_hrtimeout_range(&expires, 0, HRTIMER_MODE_ABS);
		spin_lock(&dev->lock);
	}
	finish_wait(&dev->wq, &wait);
	return ret;
}

/**
 * nxq_waiters_cancel() - cancel a holder's queued charges
 * @dev: the device
 * @h: the holder, being detached
 *
 * Each of its waiters leaves the queue with result -ENOENT; the caller
 * wakes the queue.
 *
 * Context: the device lock is held.
 * Return: true if any was cancelled.
 */
bool nxq_waiters_cancel(struct nxq_device *dev, struct nxq_holder *h)
{
	struct nxq_waiter *w, *tmp;
	bool woke = false;

	lockdep_assert_held(&dev->lock);
	list_for_each_entry_safe(w, tmp, &dev->waiters, link) {
		if (w->h != h)
			continue;
		nxq_waiter_set(dev, w, 0, NULL);
		w->result = -ENOENT;
		nxq_dequeue(dev, w);
		woke = true;
	}
	return woke;
}
