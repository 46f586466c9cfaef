// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota charge path: charges, the fair wait queue, pressure tickets and
 * escalation.  Objects and locks are described in ledger.h; everything
 * here runs under nxq_device.lock except the sleep of a waiting charge.
 *
 * A charge that can never fit (above a max on its path, above the
 * capacity, beyond its node's effective min for a holder that cannot be
 * asked, or overflowing) is refused at once with the errno it would get
 * on an empty queue, and asks nobody.  A charge that fits and finds no
 * queue is O(depth): check every node on the path and the device, then
 * commit.  Otherwise the charge is queued as a struct nxq_waiter (on the
 * charger's stack), kept in order of its key: enqueue time minus
 * priority x NXQ_AGING_NS, so priority is worth a bounded head start and
 * everyone ages at the same rate; the order never changes once queued,
 * so nxq_dispatch() is one pass, O(waiters x depth).  A waiter that does
 * not fit its own path marks the constraint it hit (the node at max, or
 * the device) blocked for the rest of the pass, so a later waiter needing
 * the same room cannot overtake it; a waiter blocked only by another's
 * constraint is not granted, and its asks go to that constraint.  Each
 * node counts the waiters held up by it (nr_blocked), the device those
 * short of capacity (nr_dev_blocked): a charge whose path has none takes
 * the fast path even when others wait elsewhere, and a release runs a
 * dispatch pass only when a waiter waits on its path or on the device --
 * so a tenant's waiters cost a neighbour nothing.
 *
 * When a charge is not granted at once, tickets are opened on victims for
 * the shortfall (see Documentation/userspace-api/nxquota.rst), each
 * signalled through the holder_signal hook (an eventfd).  No ticket is
 * due sooner than the device's ticket_timeout_ms after it was opened or
 * raised.  A holder that answers short or lets its ticket expire is
 * passed by (declined_ns) for charges queued before that -- and, for
 * charges that will not wait a floor, queued up to ticket_timeout_ms
 * after -- and the shortfall moves on to the next victim at once.  Only a RECALL ticket
 * whose deadline passed can lead to a kill.  A waiter sleeps on dev->wq
 * without the lock, until an absolute hrtimer deadline; whoever grants or
 * cancels it sets w->result under the lock and wakes the queue.  The
 * waiter leaves the list before nxq_charge() returns.
 */
#include <linux/slab.h>
#include <linux/overflow.h>
#include <linux/ktime.h>
#include <linux/hrtimer.h>
#include <linux/wait.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/lockdep.h>
#include <linux/errno.h>

#include "ledger.h"


/* The most waiters one declined ticket re-asks for. */
#define NXQ_REASK_MAX	16

/**
 * nxq_event_work() - send a device's queued events, oldest first
 * @work: the device's ev_work
 *
 * Context: a work item; takes ev_lock around each dequeue only, so the
 * hook (which allocates and multicasts) runs with no ledger lock held.
 */
void nxq_event_work(struct work_struct *work)
{
	struct nxq_device *dev = container_of(work, struct nxq_device,
					      ev_work);
	const struct nxq_ledger_ops *ops = dev->ledger->ops;
	struct nxq_event ev;

	for (;;) {
		spin_lock(&dev->ev_lock);
		if (dev->ev_head == dev->ev_tail) {
			spin_unlock(&dev->ev_lock);
			return;
		}
		ev = dev->ev_ring[dev->ev_tail % NXQ_EV_RING];
		dev->ev_tail++;
		spin_unlock(&dev->ev_lock);
		ops->event(&ev);
	}
}

/**
 * nxq_event() - report an event to the shell's hook, if any
 * @dev: the device
 * @type: enum nxq_event_type
 * @node: the node concerned, or NULL
 * @h: the holder concerned, or NULL (its node is used if @node is NULL)
 * @bytes: see enum nxq_event_type
 * @value: see enum nxq_event_type
 * @reason: see struct nxq_event
 *
 * The event is queued on the device's ring and sent by nxq_event_work()
 * once the caller's locks are dropped; a full ring (or no ring) counts
 * the event in events_dropped.  Holder attach and detach only mark dumps
 * (the changed hook), they are not queued.
 *
 * Context: the device lock or the ledger lock is held; does not sleep.
 */
void nxq_event(struct nxq_device *dev, enum nxq_event_type type,
	       struct nxq_node *node, struct nxq_holder *h, u64 bytes,
	       u64 value, u32 reason)
{
	const struct nxq_ledger_ops *ops = dev->ledger->ops;
	struct nxq_event ev = {
		.type = type,
		.device = dev->key,
		.dropped = &dev->events_dropped,
		.ts_ns = ktime_get_ns(),
		.bytes = bytes,
		.value = value,
		.reason = reason,
	};

	if (!ops)
		return;
	if (ops->changed)
		ops->changed();
	if (!ops->event || type == NXQ_EV_HOLDER_ADDED ||
	    type == NXQ_EV_HOLDER_REMOVED)
		return;
	if (!node && h)
		node = h->node;
	ev.cgroup_id = node ? node->id : 0;
	ev.tgid = h ? h->tgid : 0;
	spin_lock(&dev->ev_lock);
	if (!dev->ev_ring || dev->ev_head - dev->ev_tail >= NXQ_EV_RING) {
		spin_unlock(&dev->ev_lock);
		atomic64_inc(&dev->events_dropped);
		return;
	}
	dev->ev_ring[dev->ev_head % NXQ_EV_RING] = ev;
	dev->ev_head++;
	spin_unlock(&dev->ev_lock);
	schedule_work(&dev->ev_work);
}

/* The part of a holder's charge on its current node's path. */
static u64 nxq_own(struct nxq_holder *h)
{
	return h->charge - h->residue_bytes;
}

/*
 * Would @bytes fit on @h's path and the device?  0, -EOVERFLOW, -EDQUOT
 * (*hit is the deepest node at max; a holder without an eventfd hits its
 * own node at its effective min) or -ENOSPC.
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

/*
 * Could @bytes never fit, whatever everyone else released?  Its own
 * charge on the path stays (nobody asks the asker).  The errno an empty
 * queue would give, or 0.
 */
static int nxq_never_fits(struct nxq_holder *h, u64 bytes,
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

/*
 * The fast path's test, one walk: nobody waits on @h's path or on the
 * device, and @bytes fits every max and the capacity.  False sends the
 * charge to the full checks (nxq_path_blocked(), nxq_fits()), which give
 * the same answer and say why; a holder without an eventfd always goes
 * there.
 */
static bool nxq_fast_fits(struct nxq_holder *h, u64 bytes)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_node *n;
	u64 sum;

	lockdep_assert_held(&dev->lock);
	if (dev->nr_dev_blocked || !h->priv ||
	    check_add_overflow(h->charge, bytes, &sum) ||
	    check_add_overflow(dev->used, bytes, &sum) ||
	    sum > dev->capacity)
		return false;
	for (n = h->node; n; n = n->parent)
		if (n->nr_blocked ||
		    check_add_overflow(n->usage, bytes, &sum) ||
		    sum > __nxq_node_eff_max(n))
			return false;
	return true;
}

static void nxq_commit(struct nxq_holder *h, u64 bytes)
{
	struct nxq_node *n;

	lockdep_assert_held(&h->node->dev->lock);
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

static bool nxq_is_below(struct nxq_node *n, struct nxq_node *top)
{
	for (; n; n = n->parent)
		if (n == top)
			return true;
	return false;
}

/* Queue @w in key order; equal keys keep arrival order.  O(waiters). */
static void nxq_enqueue(struct nxq_device *dev, struct nxq_waiter *w)
{
	struct nxq_waiter *pos;

	lockdep_assert_held(&dev->lock);
	w->key = (s64)w->enqueued_ns -
		 (s64)w->h->priority * (s64)NXQ_AGING_NS;
	list_for_each_entry_reverse(pos, &dev->waiters, link) {
		if (pos->key <= w->key) {
			list_add(&w->link, &pos->link);
			return;
		}
	}
	list_add(&w->link, &dev->waiters);
}

/*
 * Record why @w waits (@err, @hit), keeping the per-constraint counts of
 * waiters: nr_blocked of the node at max, nr_dev_blocked of the device.
 * A charge that needs no constraint held up by a waiter skips the queue,
 * and a release dispatches only if a waiter waits on its path or on the
 * device.  @err 0 uncounts a waiter leaving the queue.
 */
static void nxq_waiter_set(struct nxq_device *dev, struct nxq_waiter *w,
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

/* Does a waiter wait on a constraint of @node's path, or the device's? */
static bool nxq_path_blocked(struct nxq_device *dev, struct nxq_node *node)
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
			list_del_init(&w->link);
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

/* The deadline of a ticket asked now by an asker due at @deadline. */
static u64 nxq_ticket_deadline(struct nxq_device *dev, u64 deadline, u64 now)
{
	u64 floor = now + (u64)dev->ticket_timeout_ms * NSEC_PER_MSEC;

	return max(deadline, floor);
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
	deadline = nxq_ticket_deadline(dev, deadline, now);
	if (!t->open) {
		t->open = true;
		t->bytes = 0;
		t->opened_ns = now;
		t->deadline_ns = deadline;
		t->level = level;
	} else {
		/* Never sooner than the floor after the last raise. */
		t->deadline_ns = max(t->deadline_ns, deadline);
		t->level = max(t->level, level);
	}
	t->reason = reason;
	t->bytes = min(size_add(t->bytes, bytes), v->charge);
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
	u64 since;			/* pass by who declined at or after */
	u64 excess_pass;		/* node excess cache of this search */
};

/*
 * A node's usage above its effective min, computed once per search
 * (nxq_node_emin() is O(depth); a search meets each node many times).
 */
static u64 nxq_excess(struct nxq_victims *vs, struct nxq_node *n)
{
	u64 emin;

	if (!vs->excess_pass || n->ex_pass != vs->excess_pass) {
		emin = nxq_node_emin(n);
		n->ex_excess = n->usage > emin ? n->usage - emin : 0;
		n->ex_pass = vs->excess_pass;
	}
	return n->ex_excess;
}

/*
 * May @v be asked (or its open ticket count as asked)?  Not the asker,
 * not a holder that cannot be asked, has nothing, was killed, declined
 * since the asker queued, or let an open ticket expire.
 */
static bool nxq_victim_ok(struct nxq_victims *vs, struct nxq_holder *v)
{
	struct nxq_node *n = v->node;

	if (v == vs->asker || !v->priv || v->detached || !v->charge ||
	    v->killed)
		return false;
	if (v->declined_ns && v->declined_ns >= vs->since)
		return false;
	if (v->ticket.open && v->ticket.deadline_ns <= vs->now) {
		v->declined_ns = vs->now;	/* ignored: counts as declined */
		if (v->declined_ns >= vs->since)
			return false;
	}
	if (vs->top && !nxq_is_below(n, vs->top))
		return false;
	if (vs->borrowers && !nxq_excess(vs, n))
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
		ea = nxq_excess(vs, a->node);
		eb = nxq_excess(vs, b->node);
		if (ea != eb)
			return ea > eb;
	}
	return a->charge > b->charge;
}

/*
 * The next holder a victim search looks at after @v (NULL: the first), or
 * NULL past the end of the list or after NXQ_SCAN_MAX of them; *@i counts
 * them.
 */
static struct nxq_holder *nxq_scan_next(struct nxq_device *dev,
					struct nxq_holder *v, unsigned int *i)
{
	struct list_head *next = v ? v->link.next : dev->holders.next;

	if (next == &dev->holders || *i >= NXQ_SCAN_MAX)
		return NULL;
	(*i)++;
	dev->victim_visits++;
	return list_entry(next, struct nxq_holder, link);
}

/*
 * Ask victims for @shortfall bytes, counting what open tickets already
 * ask of them (asks for the same shortfall coalesce): first what they
 * report reclaimable, then the charge of holders not asked yet, then the
 * rest of anyone's charge, until the asks cover it.  At most
 * NXQ_MAX_VICTIMS holders a round, each at most once.  Each round is one
 * pass over the holders that keeps the best NXQ_MAX_VICTIMS in order.
 * The holders looked at are the first NXQ_SCAN_MAX of the device's list
 * (the order above holds among them): at most 4 x NXQ_SCAN_MAX visits,
 * O(NXQ_SCAN_MAX x depth), under the lock.  When the list is longer and
 * the search asked, those holders move to the list's tail, so the next
 * search looks at the next NXQ_SCAN_MAX.
 */
static void nxq_ask(struct nxq_device *dev, struct nxq_victims *vs,
		    u64 shortfall)
{
	struct nxq_holder *v, *last = NULL, *cand[NXQ_MAX_VICTIMS];
	u64 pass, first = 0, want, can, asked = 0;
	int i, n, pos, round;
	unsigned int seen = 0;

	lockdep_assert_held(&dev->lock);
	dev->searches++;
	vs->excess_pass = ++dev->excess_pass;
	v = NULL;
	while ((v = nxq_scan_next(dev, v, &seen))) {
		last = v;
		if (v->ticket.open && nxq_victim_ok(vs, v))
			asked = size_add(asked, v->ticket.bytes);
	}
	if (asked >= shortfall)
		return;
	shortfall -= asked;

	for (round = 0; round < 3 && shortfall; round++) {
		pass = ++dev->victim_pass;
		if (!round)
			first = pass;
		n = 0;
		seen = 0;
		v = NULL;
		while ((v = nxq_scan_next(dev, v, &seen))) {
			if ((round == 0 && !v->reclaimable) ||
			    (round == 1 && v->victim_pass == first) ||
			    !nxq_victim_ok(vs, v))
				continue;
			if (n == NXQ_MAX_VICTIMS &&
			    !nxq_victim_before(vs, round, v, cand[n - 1]))
				continue;
			pos = n < NXQ_MAX_VICTIMS ? n++ : n - 1;
			/* Strictly before: ties keep the list's order. */
			while (pos &&
			       nxq_victim_before(vs, round, v, cand[pos - 1])) {
				cand[pos] = cand[pos - 1];
				pos--;
			}
			cand[pos] = v;
		}
		for (i = 0; i < n && shortfall; i++) {
			v = cand[i];
			v->victim_pass = pass;
			can = round ? v->charge : v->reclaimable;
			if (v->ticket.open)
				can -= min(can, v->ticket.bytes);
			want = min(can, shortfall);
			if (!want)
				continue;
			nxq_ticket_ask(v, want, vs->reason, vs->level,
				       vs->deadline, vs->now);
			shortfall -= want;
		}
	}
	/* Cut short: the next search starts after these. */
	if (last && last->link.next != &dev->holders)
		list_bulk_move_tail(&dev->holders, dev->holders.next,
				    &last->link);
}

/*
 * Bytes of the other queued charges that wait on the same constraint:
 * together they are what the constraint lacks.  O(waiters).
 */
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

/*
 * Open tickets for a waiter that was not granted, inside the constraint
 * it hit: under a max, that subtree; the device, its borrowers.
 */
static void nxq_ask_for(struct nxq_device *dev, struct nxq_waiter *w, u64 now)
{
	struct nxq_victims vs = {
		.asker = w->h,
		.deadline = w->deadline_ns,
		.now = now,
	};
	u64 floor = (u64)dev->ticket_timeout_ms * NSEC_PER_MSEC;
	struct nxq_ask_stamp *st;
	bool impatient;
	u64 need, room, m;

	lockdep_assert_held(&dev->lock);
	/*
	 * Pass by holders that declined since this charge was queued.  A
	 * charge that will not wait a floor for the answer (no wait, or a
	 * shorter timeout) also passes by those that declined less than a
	 * floor before it: a loop of such charges asks a holder that
	 * answered short at most once per ticket_timeout_ms.
	 */
	vs.since = w->enqueued_ns;
	impatient = !w->deadline_ns || w->deadline_ns - w->enqueued_ns < floor;
	if (impatient)
		vs.since = w->enqueued_ns > floor ? w->enqueued_ns - floor : 1;
	if (w->err == -EDQUOT) {
		m = nxq_node_eff_max(w->hit);
		/* A holder without an eventfd hit its own emin: no ask. */
		if (!w->h->priv && w->hit == w->h->node &&
		    w->hit->usage + w->bytes <= m)
			return;
		room = m > w->hit->usage ? m - w->hit->usage : 0;
		vs.top = w->hit;
		st = &w->hit->ask_max;
		vs.reason = NXQ_TICKET_REASON_MAX;
		vs.level = NXQ_TICKET_LEVEL_ASK;
	} else if (w->err == -ENOSPC) {
		room = dev->capacity > dev->used ? dev->capacity - dev->used : 0;
		vs.borrowers = true;
		st = &dev->ask_dev;
		vs.reason = NXQ_TICKET_REASON_DEVICE;
		vs.level = w->h->node->usage + w->bytes <=
			nxq_node_emin(w->h->node) ?
			NXQ_TICKET_LEVEL_RECALL : NXQ_TICKET_LEVEL_ASK;
	} else {
		return;
	}
	need = size_add(w->bytes, nxq_queued_ahead(dev, w));
	if (need <= room)
		return;
	need -= room;
	/*
	 * A loop of charges that will not wait a floor searches once per
	 * floor for the same constraint, unless someone asked declined or
	 * the shortfall grew: the search is bounded, but a storm of them
	 * would still hold the lock most of the time.
	 */
	if (impatient && st->ns && now - st->ns < floor &&
	    st->gen == dev->decline_gen && need <= st->shortfall)
		return;
	st->ns = now;
	st->shortfall = need;
	st->gen = dev->decline_gen;
	nxq_ask(dev, &vs, need);
}

/*
 * Something asked was declined (a short or zero answer, a victim gone):
 * let the first waiters ask again, past those who declined.
 */
static void nxq_reask(struct nxq_device *dev)
{
	struct nxq_waiter *w;
	u64 now = ktime_get_ns();
	int n = 0;

	lockdep_assert_held(&dev->lock);
	list_for_each_entry(w, &dev->waiters, link) {
		if (w->result != 1 || !w->deadline_ns)
			continue;
		nxq_ask_for(dev, w, now);
		if (++n == NXQ_REASK_MAX)
			break;
	}
}

/**
 * nxq_ask_budget() - ask a subtree to shrink after its max was lowered
 * @node: the node whose max is now below its usage
 * @excess: usage minus max
 *
 * Context: the device lock is held.
 */
void nxq_ask_budget(struct nxq_node *node, u64 excess)
{
	u64 now = ktime_get_ns();
	struct nxq_victims vs = {
		.top = node,
		.reason = NXQ_TICKET_REASON_BUDGET,
		.level = NXQ_TICKET_LEVEL_ASK,
		.now = now,
		.deadline = now,	/* the floor */
		.since = U64_MAX,
	};

	lockdep_assert_held(&node->dev->lock);
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
 * A waiter's deadline passed: kill the victims in its scope that let a
 * RECALL ticket pass its deadline (never sooner than the floor after it
 * was opened or raised) unanswered, where the policy says so.  True if any
 * was killed.
 */
static bool nxq_escalate(struct nxq_device *dev, struct nxq_waiter *w)
{
	const struct nxq_ledger_ops *ops = dev->ledger->ops;
	u64 now = ktime_get_ns();
	struct nxq_victims vs = {
		.asker = w->h,
		.now = 0,		/* expiry is checked below */
		.since = U64_MAX,
	};
	struct nxq_holder *v;
	bool killed = false;
	struct nxq_node *n;

	lockdep_assert_held(&dev->lock);
	if (w->err != -ENOSPC)
		return false;		/* only a guarantee called back */
	/*
	 * A wait shorter than the floor cannot see its own RECALL expire:
	 * no walk over the device's holders for it (a loop of such waits
	 * would hold the lock for O(holders) each).
	 */
	if (w->deadline_ns - w->enqueued_ns <
	    (u64)dev->ticket_timeout_ms * NSEC_PER_MSEC)
		return false;
	vs.borrowers = true;
	list_for_each_entry(v, &dev->holders, link) {
		if (!v->ticket.open ||
		    v->ticket.level != NXQ_TICKET_LEVEL_RECALL ||
		    v->ticket.deadline_ns > now ||
		    !nxq_victim_ok(&vs, v) || !nxq_kill_policy(v->node))
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

/* Count a waiting charge on its subtree, or -EAGAIN if one is full. */
static int nxq_waiters_add(struct nxq_node *node)
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

static void nxq_waiters_del(struct nxq_node *node)
{
	struct nxq_node *n;

	for (n = node; n; n = n->parent)
		n->subtree_waiters--;
}

/*
 * Sleep until @w is granted or cancelled, a signal, or the absolute
 * CLOCK_MONOTONIC time @deadline.  Returns with the lock held: 0 when
 * w->result settled, -EINTR, or -ETIMEDOUT.
 */
static int nxq_sleep(struct nxq_device *dev, struct nxq_waiter *w,
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
 * nxq_charge() - charge bytes to a holder, all or nothing
 * @h: the holder
 * @bytes: bytes to add, non-zero
 * @timeout_ns: 0 not to wait; else the longest wait for a grant, clamped
 *	to the node's wait_max_ms
 * @charged: set to the holder's charge after the call, success or not
 *
 * Charges every node from the holder's to the root and the device if the
 * charge fits every max and the capacity, and no queued charge waits for
 * the same room; otherwise charges nothing, opens tickets for the
 * shortfall and, with @timeout_ns, waits in the fair queue.  A charge
 * that can never fit is refused at once and asks nobody; asks pass by
 * holders that declined since the charge was queued (and, for a charge
 * that will not wait ticket_timeout_ms, less than that before).
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
int nxq_charge(struct nxq_holder *h, u64 bytes, u64 timeout_ns, u64 *charged)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_waiter w = { .h = h, .bytes = bytes, .result = 1 };
	bool escalated = false;
	u64 now, deadline, cap;
	int err = 0;

	if (!bytes)
		return -EINVAL;

	spin_lock(&dev->lock);
	if (h->detached) {
		err = -ENOENT;
		goto out;
	}
	if (nxq_fast_fits(h, bytes)) {
		nxq_commit(h, bytes);
		goto out;
	}
	/* Nobody waits for room on this path: no queue to respect. */
	if (!nxq_path_blocked(dev, h->node)) {
		err = nxq_fits(h, bytes, &w.hit);
		if (!err) {
			nxq_commit(h, bytes);
			goto out;
		}
	}
	/* Not granted at once: refuse what can never fit, asking nobody. */
	err = nxq_never_fits(h, bytes, &w.hit);
	if (err) {
		nxq_count_denial(h, bytes, err, w.hit);
		goto out;
	}

	/* Contended: queue, let the queue decide, ask for the shortfall. */
	w.node = h->node;
	w.hit = NULL;
	if (timeout_ns) {
		cap = (u64)nxq_node_limit(w.node, NXQ_LIM_WAIT_MS) *
		      NSEC_PER_MSEC;
		timeout_ns = min(timeout_ns, cap ?: 1);
		err = nxq_waiters_add(w.node);
		if (err)
			goto out;
	}
	now = ktime_get_ns();
	w.enqueued_ns = now;
	nxq_enqueue(dev, &w);
	nxq_dispatch(dev);
	if (!w.result)
		goto out_waiting;
	if (w.err == -EOVERFLOW || !timeout_ns) {
		struct nxq_node *hit = w.hit;

		list_del(&w.link);
		err = w.err;
		nxq_waiter_set(dev, &w, 0, NULL);
		w.err = err;	/* uncounted, for the asks and the denial */
		w.hit = hit;
		if (err != -EOVERFLOW)
			nxq_ask_for(dev, &w, now);
		nxq_count_denial(h, bytes, err, w.hit);
		nxq_dispatch(dev);
		goto out_waiting;
	}
	if (check_add_overflow(now, timeout_ns, &deadline))
		deadline = U64_MAX;
	w.deadline_ns = deadline;
	nxq_ask_for(dev, &w, now);

	dev->waits++;
	for (;;) {
		err = nxq_sleep(dev, &w, deadline);
		if (!err) {
			err = w.result;
			break;
		}
		if (err == -ETIMEDOUT && !escalated && nxq_escalate(dev, &w)) {
			/* Wait once more for the killed holders to go. */
			escalated = true;
			now = ktime_get_ns();
			if (check_add_overflow(now, timeout_ns, &deadline))
				deadline = U64_MAX;
			continue;
		}
		list_del(&w.link);
		if (err == -ETIMEDOUT) {
			dev->timeouts++;
			nxq_count_denial(h, bytes, w.err, w.hit);
		}
		nxq_waiter_set(dev, &w, 0, NULL);
		nxq_dispatch(dev);
		break;
	}
out_waiting:
	if (timeout_ns)
		nxq_waiters_del(w.node);
out:
	if (charged)
		*charged = h->charge;
	spin_unlock(&dev->lock);
	return err;
}

/* Uncharge @bytes from @n and its ancestors. */
static void nxq_uncharge_path(struct nxq_node *n, u64 bytes)
{
	for (; n; n = n->parent) {
		WARN_ON_ONCE(n->usage < bytes);
		n->usage -= bytes;
	}
}

/* Dispatch after @h released bytes: on its path, or anywhere (residues). */
static void nxq_dispatch_holder(struct nxq_device *dev, struct nxq_holder *h)
{
	if (list_empty(&h->residue))
		nxq_dispatch_path(dev, h->node);
	else
		nxq_dispatch(dev);
}

static void nxq_uncharge_locked(struct nxq_holder *h, u64 bytes)
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
	WARN_ON_ONCE(dev->used < bytes);
	dev->used -= bytes;
	h->charge -= bytes;
	h->reclaimable = min(h->reclaimable, h->charge);
	if (h->ticket.open)
		h->ticket.bytes = min(h->ticket.bytes, h->charge);
}

/*
 * nxq_uncharge_locked() and nxq_dispatch_holder() in one walk, for a
 * holder with no residue: uncharge its path, dispatch if a waiter waits
 * on the path or on the device.
 */
static void nxq_uncharge_fast(struct nxq_holder *h, u64 bytes)
{
	struct nxq_device *dev = h->node->dev;
	bool blocked = dev->nr_dev_blocked;
	struct nxq_node *n;

	lockdep_assert_held(&dev->lock);
	for (n = h->node; n; n = n->parent) {
		WARN_ON_ONCE(n->usage < bytes);
		n->usage -= bytes;
		blocked |= n->nr_blocked;
	}
	WARN_ON_ONCE(dev->used < bytes);
	dev->used -= bytes;
	h->charge -= bytes;
	h->reclaimable = min(h->reclaimable, h->charge);
	if (h->ticket.open)
		h->ticket.bytes = min(h->ticket.bytes, h->charge);
	if (blocked)
		nxq_dispatch(dev);
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
	else if (list_empty(&h->residue))
		nxq_uncharge_fast(h, bytes);
	else
		nxq_uncharge_locked(h, bytes);
	if (!err && !list_empty(&h->residue))
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
		bool short_answer = released < h->ticket.bytes;

		if (released)
			nxq_uncharge_locked(h, released);
		h->ticket.open = false;
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

/**
 * nxq_holder_detach() - uncharge a holder completely and refuse it any
 * further charge
 * @h: the holder
 *
 * Idempotent.  Cancels the holder's own queued charges (-ENOENT), closes
 * its ticket (what it was asked moves on to other victims) and serves the
 * queue with what it released.  The holder's memory and node reference go
 * with its last nxq_holder_put().
 *
 * Context: takes the device lock.
 */
void nxq_holder_detach(struct nxq_holder *h)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_waiter *w, *tmp;
	bool woke = false, asked;

	spin_lock(&dev->lock);
	if (!h->detached) {
		asked = h->ticket.open;
		h->detached = true;
		list_del_init(&h->link);
		nxq_event(dev, NXQ_EV_HOLDER_REMOVED, NULL, h, h->charge, 0, 0);
		list_for_each_entry_safe(w, tmp, &dev->waiters, link) {
			if (w->h != h)
				continue;
			nxq_waiter_set(dev, w, 0, NULL);
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
		nxq_dispatch_holder(dev, h);
		if (asked) {
			dev->decline_gen++;
			nxq_reask(dev);
		}
	}
	spin_unlock(&dev->lock);
}
