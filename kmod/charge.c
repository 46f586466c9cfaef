// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota ledger: the charge path's entry points (see charge.h).
 *
 * A charge that can never fit (above a max on its path, above the
 * capacity, beyond its node's effective min for a holder that cannot be
 * asked, or overflowing) is refused at once with the errno it would get
 * on an empty queue, and asks nobody.  A charge that fits and finds no
 * queue on its path is O(depth): check every node on the path and the
 * device, then commit.  Otherwise it is queued (waitq.c), the queue
 * decides, and tickets are opened for the shortfall (pressure.c).
 *
 * A charge that waits is in three steps, so that no shell has to sleep in
 * the ledger: nxq_charge_begin() decides it or queues its waiter;
 * the ledger settles a queued one when room comes (and calls its done
 * hook), or its shell calls nxq_charge_tick() at its wake time and
 * nxq_charge_cancel() when its caller gives up; nxq_charge_end() ends
 * it.  The module's shell (nxq_charge_slow()) sleeps on the waiter's own
 * wait queue in between; nxquotad's answers the connection from its loop
 * (daemon/client_cmd.c).  The waiter leaves the queue before
 * nxq_charge_end() returns.
 */
#include <linux/ktime.h>
#include <linux/hrtimer.h>
#include <linux/wait.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/overflow.h>
#include <linux/lockdep.h>
#include <linux/errno.h>
#include <linux/string.h>

#include "charge.h"

/*
 * How often a waiting charge asks its shell whether its process moved to
 * another cgroup (nxq_ledger_ops.holder_follow): nothing tells the ledger
 * of a move, so a charge queued under its old cgroup's limits would wait
 * them out where the new one has room.
 */
#define NXQ_FOLLOW_NS	(100 * NSEC_PER_MSEC)

/* When a wait ending at @deadline next wakes to follow its process. */
static u64 nxq_follow_at(struct nxq_device *dev, u64 deadline)
{
	const struct nxq_ledger_ops *ops = dev->ledger->ops;
	u64 at;

	if (!ops || !ops->holder_follow ||
	    check_add_overflow(ktime_get_ns(), (u64)NXQ_FOLLOW_NS, &at) ||
	    at >= deadline)
		return deadline;
	return at;
}

/*
 * Move a waiting charge's count of waiters from @from to @to: out of
 * @from's path, then checked as a newcomer at @to (a move inside a
 * subtree does not count it twice there).  -EAGAIN: a waiters_max on
 * @to's path is reached, and it stays counted on @from.
 */
static int nxq_waiters_move(struct nxq_node *from, struct nxq_node *to)
{
	struct nxq_node *n;

	lockdep_assert_held(&from->dev->lock);
	nxq_waiters_del(from);
	if (!nxq_waiters_add(to))
		return 0;
	for (n = from; n; n = n->parent)
		n->subtree_waiters++;
	from->own_waiters++;
	return -EAGAIN;
}

/*
 * A waiting charge follows its process: the shell moves the holder if
 * the process is in another cgroup now (which looks at the holder's
 * waiters again on the new path: nxq_waiters_rehome()), then the wait is
 * counted and bounded where it is now (waiters_max, wait_max_ms).  The
 * device lock is held, and dropped meanwhile.  Return: 0 (still waiting,
 * or decided meanwhile: @w->result says), or why it may not wait on: the
 * errno the move was refused with (-EMFILE, -EPERM, ...), or -EAGAIN.
 */
static int nxq_waiter_follow(struct nxq_device *dev, struct nxq_waiter *w,
			     u64 timeout_ns, u64 *deadline)
{
	struct nxq_holder *h = w->h;
	u64 cap, end;
	int err;

	spin_unlock(&dev->lock);
	err = dev->ledger->ops->holder_follow(h);
	spin_lock(&dev->lock);
	if (w->result <= 0 || err)
		return w->result <= 0 ? 0 : err;
	if (h->node == w->node)
		return 0;
	err = nxq_waiters_move(w->node, h->node);
	if (err)
		return err;
	w->node = h->node;
	cap = (u64)nxq_node_limit(w->node, NXQ_LIM_WAIT_MAX_MS) * NSEC_PER_MSEC;
	if (check_add_overflow(w->enqueued_ns, min(timeout_ns, cap ?: 1),
			       &end))
		end = U64_MAX;
	*deadline = min(*deadline, end);
	return 0;
}

/*
 * A queued charge gives up: out of the queue (its tree walked if it was
 * the head), @err its result.  Its refusal, if any, is the caller's to
 * count.
 */
static void nxq_charge_quit(struct nxq_device *dev, struct nxq_waiter *w,
			    int err)
{
	nxq_waiter_leave(dev, w);
	nxq_dequeue(dev, w);
	w->result = err;
}

/*
 * nxq_charge_begin() under the device lock.  Every way out sets
 * w->result: 0, an errno, or 1 (NXQ_CHARGE_QUEUED) while it waits.
 */
static int nxq_charge_begin_locked(struct nxq_holder *h, struct nxq_waiter *w,
				   u64 bytes, u64 timeout_ns,
				   unsigned int flags)
{
	bool probe = flags & NXQ_CHARGE_PROBE;
	struct nxq_device *dev = h->node->dev;
	struct nxq_node *fit_hit = NULL;
	int fit_err = 0, err;
	u64 now, cap;

	lockdep_assert_held(&dev->lock);
	if (h->detached) {
		err = -ENOENT;
		goto out;
	}
	/* Nobody waits for room on this path: no queue to respect. */
	if (!nxq_path_blocked(dev, h->node)) {
		fit_err = nxq_fits(h, bytes, &fit_hit);
		if (!fit_err) {
			nxq_commit(h, bytes);
			err = 0;
			goto out;
		}
	}
	/* Not granted at once: refuse what can never fit, asking nobody. */
	err = nxq_never_fits(h, bytes, &w->hit);
	if (err) {
		if (!probe) {
			nxq_count_denial(h, bytes, err, w->hit);
			w->said = true;
		}
		goto out;
	}

	w->node = h->node;
	/*
	 * No wait: decided as a waiter queued now would be, without
	 * queueing (nxq_waiter_check(): O(depth), whoever else waits), and
	 * the shortfall asked for.  Priority 0 comes after every waiter, so
	 * the clock is read only for a holder with priority.
	 */
	if (!timeout_ns) {
		if (nxq_path_blocked(dev, h->node)) {
			w->key = S64_MAX;
			w->seq = U64_MAX;
			if (h->priority)
				w->key = (s64)ktime_get_ns() - (s64)h->priority *
					(s64)NXQ_AGING_NS;
			fit_err = nxq_waiter_check(dev, w, &fit_hit);
			if (!fit_err) {
				nxq_commit(h, bytes);
				err = 0;
				goto out;
			}
		}
		w->err = fit_err;
		w->hit = fit_hit;
		if (!probe) {
			if (fit_err != -EOVERFLOW)
				nxq_ask_for(dev, w, 0);
			nxq_count_denial(h, bytes, fit_err, fit_hit);
			w->said = true;
		}
		err = fit_err;
		goto out;
	}

	/* Queue: granted at once if nothing holds it up, else it waits. */
	cap = (u64)nxq_node_limit(w->node, NXQ_LIM_WAIT_MAX_MS) * NSEC_PER_MSEC;
	w->timeout_ns = min(timeout_ns, cap ?: 1);
	err = nxq_waiters_add(w->node);
	if (err)
		goto out;
	now = ktime_get_ns();
	w->enqueued_ns = now;
	nxq_enqueue(dev, w);
	err = nxq_waiter_check(dev, w, &w->hit);
	if (!err || err == -EOVERFLOW) {
		if (!err)
			nxq_commit(h, bytes);
		nxq_dequeue(dev, w);
		nxq_waiters_del(w->node);
		goto out;
	}
	w->counted = true;
	nxq_waiter_set(dev, w, err, w->hit);
	if (check_add_overflow(now, w->timeout_ns, &w->deadline_ns))
		w->deadline_ns = U64_MAX;
	w->wake_ns = nxq_follow_at(dev, w->deadline_ns);
	nxq_ask_for(dev, w, now);
	dev->waits++;
	err = NXQ_CHARGE_QUEUED;
out:
	w->result = err;
	return err;
}

/*
 * nxq_charge_tick() under the device lock: the waiter's wake time came.
 * It follows its process (a follow point before its deadline), or, at
 * its deadline, has the holders that ignored their tickets killed once
 * and waits again, or times out.
 */
static int nxq_charge_step(struct nxq_device *dev, struct nxq_waiter *w)
{
	struct nxq_holder *h = w->h;
	int err;

	lockdep_assert_held(&dev->lock);
	if (w->result <= 0)
		return 0;
	if (ktime_get_ns() < w->wake_ns)
		return NXQ_CHARGE_QUEUED;
	if (w->wake_ns < w->deadline_ns) {
		err = nxq_waiter_follow(dev, w, w->timeout_ns, &w->deadline_ns);
		if (w->result <= 0)
			return 0;	/* decided while the lock was dropped */
		if (err) {
			nxq_charge_quit(dev, w, err);
			return 0;
		}
		w->wake_ns = nxq_follow_at(dev, w->deadline_ns);
		return NXQ_CHARGE_QUEUED;
	}
	if (!w->escalated && nxq_escalate(dev, w)) {
		/* Wait once more for the killed holders to go. */
		w->escalated = true;
		if (check_add_overflow(ktime_get_ns(), w->timeout_ns,
				       &w->deadline_ns))
			w->deadline_ns = U64_MAX;
		w->wake_ns = nxq_follow_at(dev, w->deadline_ns);
		return NXQ_CHARGE_QUEUED;
	}
	nxq_charge_quit(dev, w, -ETIMEDOUT);
	dev->timeouts++;
	nxq_count_denial(h, w->bytes, w->err, w->hit);
	w->said = true;
	return 0;
}

/* nxq_charge_end() under the device lock. */
static int nxq_charge_end_locked(struct nxq_device *dev, struct nxq_waiter *w,
				 u64 *charged, struct nxq_refusal_rec *why)
{
	lockdep_assert_held(&dev->lock);
	if (WARN_ON_ONCE(w->result > 0))
		nxq_charge_quit(dev, w, -EINTR);
	if (w->counted) {
		nxq_waiters_del(w->node);
		w->counted = false;
	}
	if (charged)
		*charged = w->h->charge;
	if (why) {
		if (w->said)
			*why = w->h->refused;
		else
			memset(why, 0, sizeof(*why));
	}
	return w->result;
}

/**
 * nxq_charge_begin() - start a charge that its shell may wait for
 * @h: the holder
 * @w: the charge's waiter, owned by the caller until nxq_charge_end()
 * @bytes: bytes to add, non-zero
 * @timeout_ns: 0 not to wait; else the longest wait for a grant, clamped
 *	to the node's wait_max_ms
 * @flags: NXQ_CHARGE_PROBE (with @timeout_ns 0): a refusal is neither
 *	counted nor reported, and asks nobody; else 0
 * @done: or NULL: called, under the device lock, when a queued @w is
 *	settled by someone else (a grant, a move, its holder's end); it may
 *	wake or schedule the shell and must not call the ledger
 *
 * Charges every node from the holder's to the root and the device if the
 * charge fits every max and the capacity, and no queued charge waits for
 * the same room; otherwise charges nothing, opens tickets for the
 * shortfall and, with @timeout_ns, queues @w in the fair queue.  A charge
 * that can never fit is refused at once and asks nobody; asks pass by
 * holders that declined since the charge was queued (and, for a charge
 * that will not wait ticket_timeout_ms, less than that before).
 *
 * Nothing here sleeps.  A queued charge is decided by the ledger (then
 * @done is called) or by its shell: nxq_charge_tick() at @w->wake_ns, and
 * nxq_charge_cancel() on a signal or a hang-up.  Either way the shell
 * ends it with nxq_charge_end().  nxq_charge_slow() is the module's
 * shell: it sleeps.
 *
 * Context: any; takes the device lock.
 * Return: 0 granted; NXQ_CHARGE_QUEUED (1): @w waits; or as
 * nxq_charge_slow() says.  nxq_charge_end() must follow in every case.
 */
int nxq_charge_begin(struct nxq_holder *h, struct nxq_waiter *w, u64 bytes,
		     u64 timeout_ns, unsigned int flags,
		     void (*done)(struct nxq_waiter *w))
{
	struct nxq_device *dev = h->node->dev;
	int err;

	*w = (struct nxq_waiter){ .h = h, .bytes = bytes, .done = done };
	if (!bytes) {
		w->result = -EINVAL;
		return -EINVAL;
	}
	spin_lock(&dev->lock);
	err = nxq_charge_begin_locked(h, w, bytes, timeout_ns, flags);
	spin_unlock(&dev->lock);
	return err;
}

/**
 * nxq_charge_tick() - a queued charge's wake time came
 * @w: the waiter, from nxq_charge_begin()
 *
 * Before @w->wake_ns, nothing.  At a follow point, the charge follows its
 * process into the cgroup it is in now (nxq_ledger_ops.holder_follow),
 * and is counted and bounded there.  At its deadline, holders that left
 * their tickets unanswered are killed once (kill_on_ignore) and it waits
 * again; else it times out, and its refusal is counted.
 *
 * Context: process context; takes the device lock, and drops it to
 * follow.
 * Return: NXQ_CHARGE_QUEUED: it still waits, until @w->wake_ns (which may
 * have moved); 0: it is decided (nxq_charge_end() says how).
 */
int nxq_charge_tick(struct nxq_waiter *w)
{
	struct nxq_device *dev = w->h->node->dev;
	int ret;

	spin_lock(&dev->lock);
	ret = nxq_charge_step(dev, w);
	spin_unlock(&dev->lock);
	return ret;
}

/**
 * nxq_charge_cancel() - a queued charge's caller gives up
 * @w: the waiter, from nxq_charge_begin()
 * @err: its result (-EINTR for a signal or a hang-up)
 *
 * Out of the queue, ungranted, unless it was decided already.  Its
 * refusal is not counted: nobody was refused.
 *
 * Context: any; takes the device lock.
 */
void nxq_charge_cancel(struct nxq_waiter *w, int err)
{
	struct nxq_device *dev = w->h->node->dev;

	spin_lock(&dev->lock);
	if (w->result > 0)
		nxq_charge_quit(dev, w, err);
	spin_unlock(&dev->lock);
}

/**
 * nxq_charge_end() - the end of a charge from nxq_charge_begin()
 * @w: the waiter, decided (a queued one is cancelled with -EINTR, and
 *	warned of)
 * @charged: or NULL: set to the holder's charge now
 * @why: or NULL: set to this charge's refusal (what nxq_count_denial()
 *	recorded for it), all zero when it was granted or its failure names
 *	nothing (a probe's refusal, -EAGAIN, -ENOENT, -EINTR)
 *
 * Its count against waiters_max goes; @w is the caller's again.
 *
 * Context: any; takes the device lock.
 * Return: the charge's result: 0, or as nxq_charge_slow().
 */
int nxq_charge_end(struct nxq_waiter *w, u64 *charged,
		   struct nxq_refusal_rec *why)
{
	struct nxq_device *dev = w->h->node->dev;
	int err;

	spin_lock(&dev->lock);
	err = nxq_charge_end_locked(dev, w, charged, why);
	spin_unlock(&dev->lock);
	return err;
}

/* The module's shell of a waiting charge: it sleeps on its own queue. */
struct nxq_sync_waiter {
	struct nxq_waiter w;
	struct wait_queue_head wq;
};

static void nxq_sync_done(struct nxq_waiter *w)
{
	wake_up(&container_of(w, struct nxq_sync_waiter, w)->wq);
}

/*
 * Sleep without the device lock until @s is settled, a signal, or
 * @deadline (absolute CLOCK_MONOTONIC ns, an hrtimer).  The lock is held
 * again on return.  Return: 0 settled, -EINTR, or -ETIMEDOUT.
 */
static int nxq_sleep(struct nxq_device *dev, struct nxq_sync_waiter *s,
		     u64 deadline)
{
	DEFINE_WAIT(wait);
	ktime_t expires;
	int ret = 0;

	lockdep_assert_held(&dev->lock);
	for (;;) {
		prepare_to_wait(&s->wq, &wait, TASK_INTERRUPTIBLE);
		if (READ_ONCE(s->w.result) <= 0)
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
	finish_wait(&s->wq, &wait);
	return ret;
}

/**
 * nxq_charge_slow() - nxq_charge() once nxq_try_charge() declined
 * @h: the holder
 * @bytes: bytes to add, non-zero
 * @timeout_ns: 0 not to wait; else the longest wait for a grant, clamped
 *	to the node's wait_max_ms
 * @flags: NXQ_CHARGE_PROBE (with @timeout_ns 0), or 0: nxq_charge_begin()
 * @charged: set to the holder's charge after the call, success or not
 * @why: or NULL: set to this charge's refusal, as nxq_charge_end()
 *
 * nxq_charge_begin(), then, for a charge that waits, a sleep on the
 * charge's own wait queue until the ledger settles it (the @done hook
 * wakes that queue alone) or its wake time comes (nxq_charge_tick()) or a
 * signal (nxq_charge_cancel()), then nxq_charge_end(), all in one hold
 * of the device lock but for the sleeps.  Called through nxq_charge()
 * (charge.h), which has tried the uncontended case inline first; this
 * decides everything else, the same case included if the ledger changed
 * in between.
 *
 * Context: process context; sleeps only when waiting; the ledger lock
 * must not be held.
 * Return: 0, -EINVAL for 0 bytes, -ENOENT if the holder was (or gets)
 * detached, -EOVERFLOW if a counter would wrap, -EDQUOT if a node's max
 * (or, without an eventfd, its effective min) would be exceeded, -ENOSPC
 * if the device's capacity would be (no wait), -EAGAIN when the subtree's
 * waiters_max is reached, -ETIMEDOUT when the wait ran out, -EINTR on a
 * signal.
 */
int nxq_charge_slow(struct nxq_holder *h, u64 bytes, u64 timeout_ns,
		    unsigned int flags, u64 *charged,
		    struct nxq_refusal_rec *why)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_sync_waiter s;
	int err;

	s.w = (struct nxq_waiter){ .h = h, .bytes = bytes,
				   .done = nxq_sync_done };
	if (!bytes)
		return -EINVAL;
	init_waitqueue_head(&s.wq);
	spin_lock(&dev->lock);
	err = nxq_charge_begin_locked(h, &s.w, bytes, timeout_ns, flags);
	while (err == NXQ_CHARGE_QUEUED) {
		err = nxq_sleep(dev, &s, s.w.wake_ns);
		if (err == -EINTR) {
			nxq_charge_quit(dev, &s.w, -EINTR);
			break;
		}
		err = nxq_charge_step(dev, &s.w);
	}
	err = nxq_charge_end_locked(dev, &s.w, charged, why);
	spin_unlock(&dev->lock);
	return err;
}

/**
 * nxq_uncharge_slow() - nxq_uncharge() once nxq_try_uncharge() declined
 * @h: the holder
 * @bytes: bytes, non-zero and at most the holder's charge
 * @charged: set to the holder's charge after the call, success or not
 *
 * Lowers the holder's reclaimable bytes to its new charge if needed, and
 * serves queued charges.  Called through nxq_uncharge() (charge.h); it
 * decides every case, the inline one's included.
 *
 * Context: takes the device lock; does not sleep.
 * Return: 0, -EINVAL for 0 or more than the charge, -ENOENT if detached.
 */
int nxq_uncharge_slow(struct nxq_holder *h, u64 bytes, u64 *charged)
{
	struct nxq_device *dev = h->node->dev;
	int err = 0;

	spin_lock(&dev->lock);
	if (h->detached)
		err = -ENOENT;
	else if (!bytes || bytes > h->charge)
		err = -EINVAL;
	else if (!h->residue_bytes)
		nxq_uncharge_fast(h, bytes);
	else
		nxq_uncharge_locked(h, bytes);
	if (!err && h->residue_bytes)
		nxq_dispatch(dev);
	if (charged)
		*charged = h->charge;
	spin_unlock(&dev->lock);
	return err;
}

/**
 * nxq_set_reclaimable() - record what a holder can release quickly
 * @h: the holder
 * @bytes: at most its charge
 *
 * Context: takes the device lock; does not sleep.
 * Return: 0, -EINVAL if @bytes exceeds the charge, -ENOENT if detached.
 */
int nxq_set_reclaimable(struct nxq_holder *h, u64 bytes)
{
	struct nxq_device *dev = h->node->dev;
	int err = 0;

	spin_lock(&dev->lock);
	if (h->detached)
		err = -ENOENT;
	else if (bytes > h->charge)
		err = -EINVAL;
	else
		h->reclaimable = bytes;
	spin_unlock(&dev->lock);
	return err;
}

/**
 * nxq_ticket_read() - read a holder's open ticket
 * @h: the holder
 * @t: filled in
 *
 * Context: takes the device lock; does not sleep.
 * Return: 0, -EAGAIN if no ticket is open, -ENOENT if detached.
 */
int nxq_ticket_read(struct nxq_holder *h, struct nxq_ticket_state *t)
{
	struct nxq_device *dev = h->node->dev;
	int err = 0;

	spin_lock(&dev->lock);
	if (h->detached)
		err = -ENOENT;
	else if (!h->ticket.open)
		err = -EAGAIN;
	else
		*t = h->ticket;
	spin_unlock(&dev->lock);
	return err;
}

/**
 * nxq_ticket_answer() - answer a holder's open ticket
 * @h: the holder
 * @generation: the generation the holder read
 * @released: bytes it released, uncharged here; may be 0
 * @charged: set to the holder's charge after the call, success or not
 *
 * Context: takes the device lock; does not sleep.
 * Return: 0, -ESTALE if no ticket of @generation is open (nothing is
 * uncharged), -EINVAL if @released exceeds the charge, -ENOENT.
 */
int nxq_ticket_answer(struct nxq_holder *h, u64 generation, u64 released,
		      u64 *charged)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_node *n;
	int err = 0;

	spin_lock(&dev->lock);
	if (h->detached) {
		err = -ENOENT;
	} else if (!h->ticket.open || h->ticket.generation != generation) {
		err = -ESTALE;
	} else if (released > h->charge) {
		err = -EINVAL;
	} else {
		bool short_answer = released < h->ticket.bytes;
		u64 owed = h->ticket.bytes - min(released, h->ticket.bytes);

		if (released)
			nxq_uncharge_locked(h, released);
		h->ticket.open = false;
		/*
		 * Compliance is bytes: a RECALL answered short owes the rest
		 * until its charge comes down by it, and stays where an
		 * escalation looks; re-growing past the line owes more.
		 */
		if (owed && h->ticket.level == NXQ_TICKET_LEVEL_RECALL) {
			h->debt = true;
			h->debt_line = h->charge > owed ? h->charge - owed : 0;
			h->debt_deadline = h->ticket.deadline_ns;
		} else {
			list_del_init(&h->recall_link);
		}
		dev->bytes_released += released;
		for (n = h->node; n; n = n->parent)
			n->bytes_released += released;
		nxq_event(dev, NXQ_EV_TICKET_ANSWERED, NULL, h, released,
			  generation, h->ticket.reason);
		nxq_dispatch_holder(dev, h);
		if (short_answer) {
			/* The rest moves on to the next victim at once. */
			h->declined_ns = ktime_get_ns();
			dev->decline_gen++;
			nxq_reask(dev);
		}
	}
	if (charged)
		*charged = h->charge;
	spin_unlock(&dev->lock);
	return err;
}
