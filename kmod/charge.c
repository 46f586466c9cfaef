// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota charge path: charges, the fair wait queue, pressure tickets and
 * escalation.  Objects and locks are described in ledger.h; everything
 * here runs under nxq_device.lock except the sleep of a waiting charge.
 *
 * A charge that fits and finds no queue is O(depth): check every node on
 * the path and the device, then commit.  Otherwise the charge is queued
 * as a struct nxq_waiter (on the charger's stack) and nxq_dispatch()
 * serves the queue in order of effective priority: the holder's priority
 * plus one point per NXQ_AGING_NS queued, capped, ties by arrival.  A
 * waiter that does not fit marks its constraint (the node whose max it
 * hits, or the device) blocked for the rest of the pass, so a later
 * waiter needing the same room cannot overtake it: bytes released go to
 * the queue's head first, and a newcomer -- queued like everyone else --
 * cannot take them.  Waiters under other constraints are not held up.
 *
 * When a charge is not granted at once, tickets are opened on victims for
 * the shortfall (see Documentation/userspace-api/nxquota.rst), each
 * signalled through the holder_signal hook (an eventfd).  A waiter sleeps
 * on dev->wq without the lock; whoever grants or cancels it sets
 * w->result under the lock and wakes the queue.  The waiter is on the
 * charger's stack and leaves the list before nxq_charge() returns.
 */
#include <linux/slab.h>
#include <linux/overflow.h>
#include <linux/ktime.h>
#include <linux/jiffies.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/lockdep.h>
#include <linux/errno.h>

#include "ledger.h"

struct nxq_waiter {
	struct list_head link;		/* dev->waiters */
	struct nxq_holder *h;
	u64 bytes;
	u64 enqueued_ns;
	u64 deadline_ns;		/* of its tickets and its wait */
	bool seen;			/* dispatch scratch */
	int result;			/* 1 waiting, 0 granted, <0 cancelled */
	int err;			/* why not granted: -EDQUOT, -ENOSPC */
	struct nxq_node *hit;		/* with -EDQUOT: the node at max */
};

/**
 * nxq_event() - report an event to the shell's hook, if any
 * @dev: the device
 * @type: enum nxq_event_type
 * @node: the node concerned, or NULL
 * @h: the holder concerned, or NULL (its node is used if @node is NULL)
 * @bytes: see enum nxq_event_type
 * @value: see enum nxq_event_type
 * @reason: see struct nxq_event
 */
void nxq_event(struct nxq_device *dev, enum nxq_event_type type,
	       struct nxq_node *node, struct nxq_holder *h, u64 bytes,
	       u64 value, u32 reason)
{
	const struct nxq_ledger_ops *ops = dev->ledger->ops;
	struct nxq_event ev = {
		.type = type,
		.device = dev->key,
		.bytes = bytes,
		.value = value,
		.reason = reason,
	};

	if (!ops || !ops->event)
		return;
	if (!node && h)
		node = h->node;
	ev.cgroup_id = node ? node->id : 0;
	ev.tgid = h ? h->tgid : 0;
	ops->event(&ev);
}

/*
 * Would @bytes fit on @h's path and the device?  0, -EOVERFLOW, -EDQUOT
 * (*hit is the deepest node at max) or -ENOSPC.
 */
static int nxq_fits(struct nxq_holder *h, u64 bytes, struct nxq_node **hit)
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
		if (sum > n->max) {
			*hit = n;
			return -EDQUOT;
		}
	}
	if (dev->used + bytes > dev->capacity)
		return -ENOSPC;
	return 0;
}

static void nxq_commit(struct nxq_holder *h, u64 bytes)
{
	struct nxq_node *n;

	for (n = h->node; n; n = n->parent)
		n->usage += bytes;
	h->node->dev->used += bytes;
	h->charge += bytes;
}

static void nxq_count_denial(struct nxq_holder *h, u64 bytes, int err,
			     struct nxq_node *hit)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_node *n;

	if (hit)
		hit->max_hits++;
	if (err == -ENOSPC)
		dev->capacity_hits++;
	dev->denials++;
	for (n = h->node; n; n = n->parent)
		n->denials++;
	nxq_event(dev, NXQ_EV_DENIED, NULL, h, bytes, 0, -err);
}

static bool nxq_is_below(struct nxq_node *n, struct nxq_node *top)
{
	for (; n; n = n->parent)
		if (n == top)
			return true;
	return false;
}

static u64 nxq_waiter_prio(struct nxq_waiter *w, u64 now)
{
	u64 bonus = (now - w->enqueued_ns) / NXQ_AGING_NS;

	return w->h->priority + min_t(u64, bonus, NXQ_PRIORITY_MAX);
}

/* Is @a served before @b? */
static bool nxq_waiter_before(struct nxq_waiter *a, struct nxq_waiter *b,
			      u64 now)
{
	u64 pa = nxq_waiter_prio(a, now), pb = nxq_waiter_prio(b, now);

	if (pa != pb)
		return pa > pb;
	return a->enqueued_ns < b->enqueued_ns;
}

/*
 * Is @w's room promised to a waiter served before it in this pass?  Then
 * say why in w->err and w->hit, as if it had not fit.
 */
static bool nxq_waiter_blocked(struct nxq_waiter *w, u64 pass, bool dev_full)
{
	struct nxq_node *n;

	for (n = w->h->node; n; n = n->parent) {
		if (n->blocked_pass == pass) {
			w->err = -EDQUOT;
			w->hit = n;
			return true;
		}
	}
	if (dev_full) {
		w->err = -ENOSPC;
		w->hit = NULL;
		return true;
	}
	return false;
}

/**
 * nxq_dispatch() - grant queued charges that fit, in queue order
 * @dev: the device; its lock is held
 *
 * O(waiters^2 * depth); nothing when the queue is empty.
 */
void nxq_dispatch(struct nxq_device *dev)
{
	struct nxq_waiter *w, *best;
	bool dev_full = false, woke = false;
	struct nxq_node *hit;
	u64 now, pass;
	int err;

	lockdep_assert_held(&dev->lock);
	if (list_empty(&dev->waiters))
		return;
	now = ktime_get_ns();
	pass = ++dev->dispatch_pass;
	list_for_each_entry(w, &dev->waiters, link)
		w->seen = false;
	for (;;) {
		best = NULL;
		list_for_each_entry(w, &dev->waiters, link)
			if (!w->seen && (!best || nxq_waiter_before(w, best, now)))
				best = w;
		if (!best)
			break;
		best->seen = true;
		if (nxq_waiter_blocked(best, pass, dev_full))
			continue;
		err = nxq_fits(best->h, best->bytes, &hit);
		if (!err) {
			nxq_commit(best->h, best->bytes);
			best->result = 0;
			list_del_init(&best->link);
			woke = true;
			continue;
		}
		best->err = err;
		best->hit = hit;
		if (err == -EDQUOT)
			hit->blocked_pass = pass;
		else if (err == -ENOSPC)
			dev_full = true;
	}
	if (woke)
		wake_up_all(&dev->wq);
}

/* Open or raise @v's ticket by @bytes. */
static void nxq_ticket_ask(struct nxq_holder *v, u64 bytes, u32 reason,
			   u32 level, u64 deadline, u64 now)
{
	struct nxq_device *dev = v->node->dev;
	struct nxq_ticket_state *t = &v->ticket;
	const struct nxq_ledger_ops *ops = dev->ledger->ops;
	struct nxq_node *n;

	lockdep_assert_held(&dev->lock);
	if (!t->open) {
		t->open = true;
		t->bytes = 0;
		t->opened_ns = now;
		t->deadline_ns = deadline;
		t->level = level;
	} else {
		t->deadline_ns = min(t->deadline_ns, deadline);
		t->level = max(t->level, level);
	}
	t->reason = reason;
	t->bytes = min(t->bytes + bytes, v->charge);
	t->generation = ++dev->ticket_gen;
	dev->tickets++;
	dev->bytes_asked += bytes;
	for (n = v->node; n; n = n->parent) {
		n->tickets++;
		n->bytes_asked += bytes;
	}
	nxq_event(dev, NXQ_EV_TICKET_ISSUED, NULL, v, t->bytes, t->generation,
		  reason);
	if (ops && ops->holder_signal)
		ops->holder_signal(v);
}

/* How a shortfall picks its victims. */
struct nxq_victims {
	struct nxq_holder *asker;	/* never asked itself; may be NULL */
	struct nxq_node *top;		/* only holders at or below, or NULL */
	bool borrowers;			/* only holders whose node borrows */
	u32 reason, level;
	u64 deadline, now;
};

static bool nxq_victim_ok(struct nxq_victims *vs, struct nxq_holder *v)
{
	struct nxq_node *n = v->node;

	if (v == vs->asker || !v->priv || v->detached || !v->charge)
		return false;
	if (vs->top && !nxq_is_below(n, vs->top))
		return false;
	if (vs->borrowers && n->usage <= nxq_node_emin(n))
		return false;
	return true;
}

/*
 * The order victims are asked in.  Round 0 asks holders for what they
 * report reclaimable, most first; round 1 asks the holders round 0 did
 * not reach for their charge; round 2 asks anyone for the rest of its
 * charge.  In rounds 1 and 2 the most borrowed node goes first among
 * borrowers, then the largest charge.  True if @a goes before @b.
 */
static bool nxq_victim_before(struct nxq_victims *vs, int round,
			      struct nxq_holder *a, struct nxq_holder *b)
{
	u64 ea, eb;

	if (!round && a->reclaimable != b->reclaimable)
		return a->reclaimable > b->reclaimable;
	if (vs->borrowers && a->node != b->node) {
		ea = a->node->usage - nxq_node_emin(a->node);
		eb = b->node->usage - nxq_node_emin(b->node);
		if (ea != eb)
			return ea > eb;
	}
	return a->charge > b->charge;
}

/*
 * Ask victims for @shortfall bytes, counting what open tickets already
 * ask of them: first what they report reclaimable, then the charge of
 * holders not asked yet, then the rest of anyone's charge, until the asks
 * cover it.  At most NXQ_MAX_VICTIMS holders a round, each at most once;
 * O(NXQ_MAX_VICTIMS * holders).
 */
static void nxq_ask(struct nxq_device *dev, struct nxq_victims *vs,
		    u64 shortfall)
{
	struct nxq_holder *v, *best;
	u64 pass, first = 0, want, can, asked = 0;
	int i, round;

	lockdep_assert_held(&dev->lock);
	list_for_each_entry(v, &dev->holders, link)
		if (v->ticket.open && nxq_victim_ok(vs, v))
			asked += v->ticket.bytes;
	if (asked >= shortfall)
		return;
	shortfall -= asked;

	for (round = 0; round < 3 && shortfall; round++) {
		pass = ++dev->victim_pass;
		if (!round)
			first = pass;
		for (i = 0; i < NXQ_MAX_VICTIMS && shortfall; i++) {
			best = NULL;
			list_for_each_entry(v, &dev->holders, link) {
				if (v->victim_pass == pass ||
				    (round == 0 && !v->reclaimable) ||
				    (round == 1 && v->victim_pass == first) ||
				    !nxq_victim_ok(vs, v))
					continue;
				if (!best || nxq_victim_before(vs, round, v, best))
					best = v;
			}
			if (!best)
				break;
			best->victim_pass = pass;
			can = round ? best->charge : best->reclaimable;
			if (best->ticket.open)
				can -= min(can, best->ticket.bytes);
			want = min(can, shortfall);
			if (!want)
				continue;
			nxq_ticket_ask(best, want, vs->reason, vs->level,
				       vs->deadline, vs->now);
			shortfall -= want;
		}
	}
}

/* Bytes of other queued charges that wait on the same constraint. */
static u64 nxq_queued_ahead(struct nxq_device *dev, struct nxq_waiter *me)
{
	struct nxq_waiter *w;
	u64 sum = 0;

	list_for_each_entry(w, &dev->waiters, link) {
		if (w == me || w->err != me->err)
			continue;
		if (me->err == -EDQUOT && !nxq_is_below(w->h->node, me->hit))
			continue;
		sum = size_add(sum, w->bytes);
	}
	return sum;
}

/* Open tickets for a waiter that was not granted. */
static void nxq_ask_for(struct nxq_device *dev, struct nxq_waiter *w,
			u64 deadline, u64 now)
{
	struct nxq_victims vs = {
		.asker = w->h,
		.deadline = deadline,
		.now = now,
	};
	u64 need = size_add(w->bytes, nxq_queued_ahead(dev, w));
	u64 room;

	if (w->err == -EDQUOT) {
		room = w->hit->max > w->hit->usage ?
			w->hit->max - w->hit->usage : 0;
		vs.top = w->hit;
		vs.reason = NXQ_TICKET_REASON_MAX;
		vs.level = NXQ_TICKET_LEVEL_ASK;
	} else {
		room = dev->capacity > dev->used ? dev->capacity - dev->used : 0;
		vs.borrowers = true;
		vs.reason = NXQ_TICKET_REASON_DEVICE;
		vs.level = w->h->node->usage + w->bytes <=
			nxq_node_emin(w->h->node) ?
			NXQ_TICKET_LEVEL_RECALL : NXQ_TICKET_LEVEL_ASK;
	}
	if (need > room)
		nxq_ask(dev, &vs, need - room);
}

/**
 * nxq_ask_budget() - ask a subtree to shrink after its max was lowered
 * @node: the node whose max is now below its usage; device lock held
 * @excess: usage minus max
 */
void nxq_ask_budget(struct nxq_node *node, u64 excess)
{
	u64 now = ktime_get_ns();
	struct nxq_victims vs = {
		.top = node,
		.reason = NXQ_TICKET_REASON_BUDGET,
		.level = NXQ_TICKET_LEVEL_ASK,
		.now = now,
		.deadline = now + node->dev->ticket_timeout_ms * NSEC_PER_MSEC,
	};

	nxq_ask(node->dev, &vs, excess);
}

static bool nxq_kill_policy(struct nxq_node *n)
{
	for (; n; n = n->parent)
		if (n->kill_on_ignore)
			return true;
	return false;
}

/*
 * A waiter's deadline passed: kill the victims that ignored their tickets
 * where the policy says so.  True if any was killed.
 */
static bool nxq_escalate(struct nxq_device *dev, struct nxq_waiter *w)
{
	const struct nxq_ledger_ops *ops = dev->ledger->ops;
	struct nxq_victims vs = { .asker = w->h };
	/*
	 * A jiffies timeout can end up to a tick before the deadline in ns:
	 * a ticket due by the waiter's own deadline counts as ignored.
	 */
	u64 limit = max(ktime_get_ns(), w->deadline_ns);
	struct nxq_holder *v;
	bool killed = false;
	struct nxq_node *n;

	lockdep_assert_held(&dev->lock);
	if (w->err == -EDQUOT)
		vs.top = w->hit;
	else
		vs.borrowers = true;
	list_for_each_entry(v, &dev->holders, link) {
		if (!v->ticket.open || v->ticket.deadline_ns > limit ||
		    v->killed || !nxq_victim_ok(&vs, v) ||
		    !nxq_kill_policy(v->node))
			continue;
		/* Never the waiter's own process, whatever the policy. */
		if (v->owner && v->owner == w->h->owner)
			continue;
		v->killed = true;
		dev->kills++;
		for (n = v->node; n; n = n->parent)
			n->kills++;
		nxq_event(dev, NXQ_EV_KILLED, NULL, v, v->charge,
			  v->ticket.generation, v->ticket.reason);
		if (ops && ops->holder_kill)
			ops->holder_kill(v);
		killed = true;
	}
	return killed;
}

static long nxq_timeout_jiffies(u64 timeout_ns)
{
	u64 j = nsecs_to_jiffies64(timeout_ns);

	return clamp_t(u64, j, 1, MAX_SCHEDULE_TIMEOUT - 1);
}

/**
 * nxq_charge() - charge bytes to a holder, all or nothing
 * @h: the holder
 * @bytes: bytes to add, non-zero
 * @timeout_ns: 0 not to wait; else the longest wait for a grant
 * @charged: set to the holder's charge after the call, success or not
 *
 * Charges every node from the holder's to the root and the device if the
 * charge fits every max and the capacity, and no queued charge waits for
 * the same room; otherwise charges nothing, opens tickets for the
 * shortfall and, with @timeout_ns, waits in the fair queue.  Sleeps only
 * when waiting; the ledger lock must not be held.
 *
 * Return: 0, -EINVAL for 0 bytes, -ENOENT if the holder was (or gets)
 * detached, -EOVERFLOW if a counter would wrap, -EDQUOT if a node's max
 * would be exceeded, -ENOSPC if the device's capacity would be (no wait),
 * -ETIMEDOUT when the wait ran out, -EINTR on a signal.
 */
int nxq_charge(struct nxq_holder *h, u64 bytes, u64 timeout_ns, u64 *charged)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_waiter w = { .h = h, .bytes = bytes, .result = 1 };
	bool escalated = false;
	u64 now, deadline;
	long left, ret;
	int err = 0;

	if (!bytes)
		return -EINVAL;

	spin_lock(&dev->lock);
	if (h->detached) {
		err = -ENOENT;
		goto out;
	}
	if (list_empty(&dev->waiters)) {
		err = nxq_fits(h, bytes, &w.hit);
		if (!err) {
			nxq_commit(h, bytes);
			goto out;
		}
		if (err == -EOVERFLOW) {
			nxq_count_denial(h, bytes, err, NULL);
			goto out;
		}
	}

	/* Contended: queue, let the queue decide, ask for the shortfall. */
	now = ktime_get_ns();
	w.enqueued_ns = now;
	list_add_tail(&w.link, &dev->waiters);
	nxq_dispatch(dev);
	if (!w.result)
		goto out;
	if (w.err == -EOVERFLOW) {
		list_del(&w.link);
		err = w.err;
		nxq_count_denial(h, bytes, err, NULL);
		nxq_dispatch(dev);
		goto out;
	}
	if (check_add_overflow(now, timeout_ns ?:
			       (u64)dev->ticket_timeout_ms * NSEC_PER_MSEC,
			       &deadline))
		deadline = U64_MAX;
	w.deadline_ns = deadline;
	nxq_ask_for(dev, &w, deadline, now);
	if (!timeout_ns) {
		list_del(&w.link);
		err = w.err;
		nxq_count_denial(h, bytes, err, w.hit);
		nxq_dispatch(dev);
		goto out;
	}

	dev->waits++;
	left = nxq_timeout_jiffies(timeout_ns);
	for (;;) {
		spin_unlock(&dev->lock);
		ret = wait_event_interruptible_timeout(dev->wq,
						       READ_ONCE(w.result) <= 0,
						       left);
		spin_lock(&dev->lock);
		if (w.result <= 0) {
			err = w.result;
			break;
		}
		if (ret > 0) {
			left = ret;
			continue;
		}
		if (ret == 0 && !escalated && nxq_escalate(dev, &w)) {
			/* Wait once more for the killed holders to go. */
			escalated = true;
			left = nxq_timeout_jiffies(timeout_ns);
			continue;
		}
		list_del(&w.link);
		if (ret == 0) {
			err = -ETIMEDOUT;
			dev->timeouts++;
			nxq_count_denial(h, bytes, w.err, w.hit);
		} else {
			err = -EINTR;
		}
		nxq_dispatch(dev);
		break;
	}
out:
	if (charged)
		*charged = h->charge;
	spin_unlock(&dev->lock);
	return err;
}

static void nxq_uncharge_locked(struct nxq_holder *h, u64 bytes)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_node *n;

	lockdep_assert_held(&dev->lock);
	for (n = h->node; n; n = n->parent) {
		WARN_ON_ONCE(n->usage < bytes);
		n->usage -= bytes;
	}
	WARN_ON_ONCE(dev->used < bytes);
	dev->used -= bytes;
	h->charge -= bytes;
	h->reclaimable = min(h->reclaimable, h->charge);
	if (h->ticket.open)
		h->ticket.bytes = min(h->ticket.bytes, h->charge);
}

/**
 * nxq_uncharge() - take bytes back from a holder
 * @h: the holder
 * @bytes: bytes, non-zero and at most the holder's charge
 * @charged: set to the holder's charge after the call, success or not
 *
 * Lowers the holder's reclaimable bytes to its new charge if needed, and
 * serves queued charges.
 *
 * Return: 0, -EINVAL for 0 or more than the charge, -ENOENT if detached.
 */
int nxq_uncharge(struct nxq_holder *h, u64 bytes, u64 *charged)
{
	struct nxq_device *dev = h->node->dev;
	int err = 0;

	spin_lock(&dev->lock);
	if (h->detached)
		err = -ENOENT;
	else if (!bytes || bytes > h->charge)
		err = -EINVAL;
	else
		nxq_uncharge_locked(h, bytes);
	if (!err)
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
		if (released)
			nxq_uncharge_locked(h, released);
		h->ticket.open = false;
		dev->bytes_released += released;
		for (n = h->node; n; n = n->parent)
			n->bytes_released += released;
		nxq_event(dev, NXQ_EV_TICKET_ANSWERED, NULL, h, released,
			  generation, h->ticket.reason);
		nxq_dispatch(dev);
	}
	if (charged)
		*charged = h->charge;
	spin_unlock(&dev->lock);
	return err;
}

/**
 * nxq_holder_detach() - uncharge a holder completely and refuse it any
 * further charge
 * @h: the holder
 *
 * Idempotent.  Cancels the holder's own queued charges (-ENOENT), closes
 * its ticket and serves the queue with what it released.  The holder's
 * memory and node reference go with its last nxq_holder_put().
 */
void nxq_holder_detach(struct nxq_holder *h)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_waiter *w, *tmp;
	bool woke = false;

	spin_lock(&dev->lock);
	if (!h->detached) {
		h->detached = true;
		list_del_init(&h->link);
		nxq_event(dev, NXQ_EV_HOLDER_REMOVED, NULL, h, h->charge, 0, 0);
		list_for_each_entry_safe(w, tmp, &dev->waiters, link) {
			if (w->h != h)
				continue;
			w->result = -ENOENT;
			list_del_init(&w->link);
			woke = true;
		}
		if (h->charge)
			nxq_uncharge_locked(h, h->charge);
		h->reclaimable = 0;
		h->ticket.open = false;
		if (woke)
			wake_up_all(&dev->wq);
		nxq_dispatch(dev);
	}
	spin_unlock(&dev->lock);
}
