// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota ledger, layer 3: pressure (see pressure.h).
 *
 * When a charge is not granted at once, tickets are opened on victims for
 * the shortfall (see Documentation/userspace-api/nxquota.rst), each
 * signalled through the holder_signal hook (an eventfd).  No ticket is
 * due sooner than the device's ticket_timeout_ms after it was opened or
 * raised.  A holder that answers short or lets its ticket expire is
 * passed by (declined_ns) for charges queued before that -- and, for
 * charges that will not wait a floor, queued up to ticket_timeout_ms
 * after -- and the shortfall moves on to the next victim at once.  Only a
 * RECALL ticket whose deadline passed can lead to a kill.
 */
#include <linux/ktime.h>
#include <linux/timekeeping.h>
#include <linux/overflow.h>
#include <linux/lockdep.h>
#include <linux/errno.h>

#include "pressure.h"

/* The most waiters one declined ticket re-asks for. */
#define NXQ_REASK_MAX	16

/* The deadline of a ticket asked now by an asker due at @deadline. */
static u64 nxq_ticket_deadline(struct nxq_device *dev, u64 deadline, u64 now)
{
	u64 floor;

	lockdep_assert_held(&dev->lock);
	floor = now + (u64)dev->ticket_timeout_ms * NSEC_PER_MSEC;
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
	v->debt = false;	/* a new ask carries what is owed */
	if (t->level == NXQ_TICKET_LEVEL_RECALL && list_empty(&v->recall_link))
		list_add_tail(&v->recall_link, &dev->recalls);
	else if (t->level != NXQ_TICKET_LEVEL_RECALL)
		list_del_init(&v->recall_link);
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
	bool unbudgeted;		/* only holders with no budget
					 * between their node and top
					 */
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

	lockdep_assert_held(&n->dev->lock);
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

	lockdep_assert_held(&n->dev->lock);
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
	if (vs->unbudgeted && nxq_budgeted_between(n, vs->top))
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

	lockdep_assert_held(&a->node->dev->lock);
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
 * Where a victim search looks: the device's holder list when its scope is
 * the device, else the holder lists of the nodes of the scope's subtree,
 * in pre-order.  At most NXQ_SCAN_MAX holders and nodes a pass.
 */
struct nxq_scan {
	struct nxq_device *dev;
	struct nxq_node *top;		/* NULL: the device's list */
	struct nxq_node *node;		/* whose holders are walked */
	struct nxq_holder *v;		/* the last looked at, or NULL */
	unsigned int seen;		/* holders and nodes looked at */
};

static void nxq_scan_start(struct nxq_scan *sc, struct nxq_device *dev,
			   struct nxq_node *top)
{
	lockdep_assert_held(&dev->lock);
	sc->dev = dev;
	sc->top = top;
	sc->node = top;
	sc->v = NULL;
	sc->seen = 0;
}

/* The node after @n in a pre-order walk of @top's subtree, or NULL. */
static struct nxq_node *nxq_subtree_next(struct nxq_node *n,
					 struct nxq_node *top)
{
	lockdep_assert_held(&n->dev->lock);
	if (!list_empty(&n->children))
		return list_first_entry(&n->children, struct nxq_node,
					sibling);
	for (; n != top; n = n->parent)
		if (!list_is_last(&n->sibling, &n->parent->children))
			return list_next_entry(n, sibling);
	return NULL;
}

/*
 * The next holder a victim search looks at (the first after
 * nxq_scan_start()), or NULL past the end of the scope or after
 * NXQ_SCAN_MAX holders and nodes.
 */
static struct nxq_holder *nxq_scan_next(struct nxq_scan *sc)
{
	struct nxq_device *dev = sc->dev;
	struct list_head *next;

	lockdep_assert_held(&dev->lock);
	if (!sc->top) {
		next = sc->v ? sc->v->link.next : dev->holders.next;
		if (next == &dev->holders || sc->seen >= NXQ_SCAN_MAX)
			return NULL;
		sc->seen++;
		dev->victim_visits++;
		sc->v = list_entry(next, struct nxq_holder, link);
		return sc->v;
	}
	for (;;) {
		if (sc->seen >= NXQ_SCAN_MAX)
			return NULL;
		next = sc->v ? sc->v->node_link.next : sc->node->holders.next;
		if (next != &sc->node->holders) {
			sc->seen++;
			dev->victim_visits++;
			sc->v = list_entry(next, struct nxq_holder, node_link);
			return sc->v;
		}
		sc->node = nxq_subtree_next(sc->node, sc->top);
		if (!sc->node)
			return NULL;
		sc->v = NULL;
		sc->seen++;
	}
}

/*
 * A search was cut short at @sc's position: the next one starts there.
 * On the device's list, the holders looked at move to its tail.  In a
 * subtree, the holders looked at of the node it stopped in move to that
 * node's tail, and every node from there up to the scope's top moves to
 * the tail of its parent's children, with the siblings before it: the
 * next search looks at the siblings it did not reach first, then the
 * rest of the node it stopped in.  The scope's top's own holders come
 * first in every search (they rotate when a search stops among them).
 */
static void nxq_scan_rotate(struct nxq_scan *sc)
{
	struct list_head *head;
	struct nxq_node *n;

	lockdep_assert_held(&sc->dev->lock);
	if (!sc->top) {
		head = &sc->dev->holders;
		if (sc->v && !list_is_last(&sc->v->link, head))
			list_bulk_move_tail(head, head->next, &sc->v->link);
		return;
	}
	if (!sc->node)
		return;		/* the whole subtree was looked at */
	head = &sc->node->holders;
	if (sc->v && !list_is_last(&sc->v->node_link, head))
		list_bulk_move_tail(head, head->next, &sc->v->node_link);
	for (n = sc->node; n != sc->top; n = n->parent) {
		head = &n->parent->children;
		list_bulk_move_tail(head, head->next, &n->sibling);
	}
}

/*
 * Ask victims for @shortfall bytes, counting what open tickets already
 * ask of them (asks for the same shortfall coalesce): first what they
 * report reclaimable, then the charge of holders not asked yet, then the
 * rest of anyone's charge, until the asks cover it.  At most
 * NXQ_MAX_VICTIMS holders a round, each at most once.  Each round is one
 * pass over the holders that keeps the best NXQ_MAX_VICTIMS in order.
 * The holders looked at are those of the search's scope only -- the
 * device's list for the device, the lists of the subtree's nodes under a
 * max -- and at most NXQ_SCAN_MAX of them (the order above holds among
 * them): at most 4 x NXQ_SCAN_MAX visits, O(NXQ_SCAN_MAX x depth), under
 * the lock.  When the scope holds more, the next search starts where this
 * one stopped (nxq_scan_rotate()).
 */
static void nxq_ask(struct nxq_device *dev, struct nxq_victims *vs,
		    u64 shortfall)
{
	struct nxq_holder *v, *cand[NXQ_MAX_VICTIMS];
	u64 pass, first = 0, want, can, asked = 0;
	int i, n, pos, round;
	struct nxq_scan sc, last;

	lockdep_assert_held(&dev->lock);
	dev->searches++;
	vs->excess_pass = ++dev->excess_pass;
	nxq_scan_start(&sc, dev, vs->top);
	while ((v = nxq_scan_next(&sc))) {
		if (v->ticket.open && nxq_victim_ok(vs, v))
			asked = size_add(asked, v->ticket.bytes);
	}
	if (asked >= shortfall)
		return;
	shortfall -= asked;
	last = sc;

	for (round = 0; round < 3 && shortfall; round++) {
		pass = ++dev->victim_pass;
		if (!round)
			first = pass;
		n = 0;
		nxq_scan_start(&sc, dev, vs->top);
		while ((v = nxq_scan_next(&sc))) {
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
	if (last.seen >= NXQ_SCAN_MAX)
		nxq_scan_rotate(&last);
}

/**
 * nxq_ask_for() - open tickets for a waiter that was not granted
 * @dev: the device
 * @w: the waiter, with err and hit set by the queue
 * @now: ktime_get_ns() when it was queued; or 0 for a no-wait charge
 *	that was never queued: the clock is read (and w->enqueued_ns set)
 *	only if a search is due, the coalescing check using the coarse
 *	clock, which never runs ahead (so it never searches sooner)
 *
 * Inside the constraint it hit: under a max, that subtree; the device,
 * its borrowers.  Coalesced (see struct nxq_ask_stamp).
 *
 * Context: the device lock is held.
 */
void nxq_ask_for(struct nxq_device *dev, struct nxq_waiter *w, u64 now)
{
	struct nxq_victims vs = {
		.asker = w->h,
		.deadline = w->deadline_ns,
	};
	u64 floor = (u64)dev->ticket_timeout_ms * NSEC_PER_MSEC;
	struct nxq_ask_stamp *st;
	bool impatient;
	u64 need, room, c;

	lockdep_assert_held(&dev->lock);
	impatient = !w->deadline_ns || w->deadline_ns - w->enqueued_ns < floor;
	if (w->err == -EDQUOT) {
		room = nxq_node_room(w->hit);
		/*
		 * A holder without an eventfd past its effective min, not a
		 * limit: nobody is asked for it.
		 */
		if (!w->h->priv && room >= w->bytes)
			return;
		vs.top = w->hit;
		/* default_max: only what is charged outside budgets */
		vs.unbudgeted = !w->hit->max_set;
		st = &w->hit->ask_max;
		vs.reason = NXQ_TICKET_REASON_MAX;
		vs.level = NXQ_TICKET_LEVEL_ASK;
	} else if (w->err == -ENOSPC) {
		room = dev->capacity > dev->used ? dev->capacity - dev->used : 0;
		vs.borrowers = true;
		st = &dev->ask_dev;
		vs.reason = NXQ_TICKET_REASON_DEVICE;
		vs.level = nxq_within_emin(w->h->node, w->bytes) ?
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
	if (impatient && st->ns && st->gen == dev->decline_gen &&
	    need <= st->shortfall) {
		c = now ?: ktime_get_coarse_ns();
		if (c < st->ns || c - st->ns < floor)
			return;
	}
	if (!now) {
		now = ktime_get_ns();
		w->enqueued_ns = now;
	}
	vs.now = now;
	/*
	 * Pass by holders that declined since this charge was queued.  A
	 * charge that will not wait a floor for the answer (no wait, or a
	 * shorter timeout) also passes by those that declined less than a
	 * floor before it: a loop of such charges asks a holder that
	 * answered short at most once per ticket_timeout_ms.
	 */
	vs.since = w->enqueued_ns;
	if (impatient)
		vs.since = w->enqueued_ns > floor ? w->enqueued_ns - floor : 1;
	st->ns = now;
	st->shortfall = need;
	st->gen = dev->decline_gen;
	nxq_ask(dev, &vs, need);
}

/**
 * nxq_reask() - let the first waiters ask again after a decline
 * @dev: the device
 *
 * Something asked was declined (a short or zero answer, a victim gone):
 * the first NXQ_REASK_MAX waiters ask again, past those who declined.
 *
 * Context: the device lock is held.
 */
void nxq_reask(struct nxq_device *dev)
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

/*
 * Does @v still owe what a RECALL asked, past the ticket's deadline?  A
 * debt paid (its charge came down to the line), or left by a holder that
 * borrows no more, is forgotten here.
 */
static bool nxq_owes(struct nxq_holder *v, struct nxq_victims *vs, u64 now)
{
	lockdep_assert_held(&v->node->dev->lock);
	if (!v->debt)
		return false;
	if (v->charge <= v->debt_line || v->detached || v->killed ||
	    !nxq_excess(vs, v->node)) {
		v->debt = false;
		list_del_init(&v->recall_link);
		return false;
	}
	return v->debt_deadline <= now;
}

static bool nxq_kill_policy(struct nxq_node *n)
{
	lockdep_assert_held(&n->dev->lock);
	for (; n; n = n->parent)
		if (n->kill_on_ignore)
			return true;
	return false;
}

/**
 * nxq_escalate() - a waiter's deadline passed: kill who ignored a RECALL
 * @dev: the device
 * @w: the waiter
 *
 * Kills the victims in its scope that let a RECALL ticket pass its
 * deadline (never sooner than the floor after it was opened or raised)
 * unanswered, where the policy says so; never the waiter's own process.
 * Looks only at the holders with an open RECALL ticket (dev->recalls),
 * not at every holder of the device.
 *
 * Context: the device lock is held; the kill hook must not sleep.
 * Return: true if any was killed.
 */
bool nxq_escalate(struct nxq_device *dev, struct nxq_waiter *w)
{
	const struct nxq_ledger_ops *ops = dev->ledger->ops;
	u64 now = ktime_get_ns();
	struct nxq_victims vs = {
		.asker = w->h,
		.now = 0,		/* expiry is checked below */
		.since = U64_MAX,
	};
	struct nxq_holder *v, *tmp;
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
	list_for_each_entry_safe(v, tmp, &dev->recalls, recall_link) {
		dev->escalate_visits++;
		if (!v->ticket.open && !nxq_owes(v, &vs, now))
			continue;
		if (v->ticket.open &&
		    (v->ticket.level != NXQ_TICKET_LEVEL_RECALL ||
		     v->ticket.deadline_ns > now ||
		     !nxq_victim_ok(&vs, v)))
			continue;
		if (!nxq_kill_policy(v->node))
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
