// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota ledger, layer 2: the fair wait queue (see waitq.h).
 *
 * Order: a waiter's key is its enqueue time minus priority x
 * NXQ_AGING_NS, so priority is worth a bounded head start and everyone
 * ages at the same rate; equal keys keep arrival order (seq).  The order
 * never changes once queued.
 *
 * The rule is that of one pass over the queue in that order: a waiter is
 * granted if it fits its own path (nxq_fits()) and no waiter before it is
 * held up by a constraint on its path (a node, or the device when its
 * nodes fit); otherwise it is held up by the first constraint it does not
 * fit, or by the first on its path that holds up an earlier waiter.
 *
 * Each constraint keeps the waiters it holds up in a tree, in key order
 * (node->blocked, dev->blocked); its head is the earliest, and does not
 * fit that constraint itself (a waiter is held up by a constraint that
 * another holds up only if that other is earlier).  So "a waiter before
 * it is held up by C" is "C's head is before it": O(depth) for any waiter,
 * and the queue is never walked whole.  Nothing in the queue can be
 * granted between two changes of the ledger: whatever makes room (a
 * release on a path, a raised max or min, the capacity, a head that
 * leaves) walks the trees of the constraints it touched, in key order,
 * from their heads; a tree whose head still does not fit its constraint
 * is done, as everyone behind that head is held up by it.  A walk costs
 * the waiters it grants or moves, plus one per tree: a tenant's waiters
 * cost a neighbour nothing, and a tenant's own refused, timed-out or
 * cancelled charges cost O(depth), whatever others have queued.
 *
 * Whoever grants or cancels a queued waiter sets w->result under the lock
 * and calls its w->done (nxq_waiter_settle()): one waiter is told, not
 * the queue.  How it waits meanwhile is its shell's (charge.c).
 */
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/errno.h>

#include "waitq.h"

static bool nxq_before(const struct nxq_waiter *a, const struct nxq_waiter *b)
{
	return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

static bool nxq_rb_less(struct rb_node *a, const struct rb_node *b)
{
	return nxq_before(rb_entry(a, struct nxq_waiter, rb),
			  rb_entry(b, struct nxq_waiter, rb));
}

/* The earliest waiter a constraint holds up, or NULL. */
static struct nxq_waiter *nxq_head(struct rb_root_cached *t)
{
	struct rb_node *n = rb_first_cached(t);

	return n ? rb_entry(n, struct nxq_waiter, rb) : NULL;
}

/**
 * nxq_enqueue() - queue a waiter in key order
 * @dev: the device
 * @w: the waiter; its h and enqueued_ns are set
 *
 * In no constraint's tree yet (nxq_waiter_set()).  O(1) for priority 0,
 * which goes to the tail; a waiter with priority passes at most those
 * queued in the last priority x NXQ_AGING_NS.
 *
 * Context: the device lock is held.
 */
void nxq_enqueue(struct nxq_device *dev, struct nxq_waiter *w)
{
	struct nxq_waiter *pos;

	lockdep_assert_held(&dev->lock);
	w->key = (s64)w->enqueued_ns -
		 (s64)w->h->priority * (s64)NXQ_AGING_NS;
	w->seq = ++dev->waiter_seq;
	w->blk_node = NULL;
	w->blk_dev = false;
	dev->nr_waiters++;
	list_add_tail(&w->hlink, &w->h->waiters);
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
 * @w: a queued waiter, in no tree (nxq_waiter_set() with 0)
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
	list_del_init(&w->hlink);
	dev->nr_waiters--;
}

/*
 * Take @w out of the tree it is in.  True if it was that tree's head and
 * others remain: they may be granted now.
 */
static bool nxq_unlist(struct nxq_device *dev, struct nxq_waiter *w)
{
	struct nxq_node *b = w->blk_node, *n;
	bool head;

	if (b) {
		head = rb_first_cached(&b->blocked) == &w->rb;
		rb_erase_cached(&w->rb, &b->blocked);
		if (!--b->nr_blocked)
			list_del_init(&b->blocked_link);
		for (n = w->qnode; n; n = n->parent)
			n->queued_below -= w->bytes;
		w->blk_node = NULL;
		w->qnode = NULL;
		return head && b->nr_blocked;
	}
	if (w->blk_dev) {
		head = rb_first_cached(&dev->blocked) == &w->rb;
		rb_erase_cached(&w->rb, &dev->blocked);
		dev->nr_dev_blocked--;
		dev->blocked_bytes -= w->bytes;
		w->blk_dev = false;
		return head && dev->nr_dev_blocked;
	}
	return false;
}

/**
 * nxq_waiter_set() - record why a waiter waits
 * @dev: the device
 * @w: the waiter
 * @err: -EDQUOT (held up by @hit), -ENOSPC (by the capacity), another
 *	errno, or 0 to take it out of its tree before it leaves the queue
 * @hit: with -EDQUOT, the node
 *
 * Moves it to the tree of the constraint that holds it up.  Each node
 * counts its tree (nr_blocked), the device its own (nr_dev_blocked): a
 * charge whose path has none skips the queue, a release on a path with
 * none walks nothing.  It does not walk the tree it left (see
 * nxq_waiter_leave()).
 *
 * Context: the device lock is held.
 */
void nxq_waiter_set(struct nxq_device *dev, struct nxq_waiter *w,
		    int err, struct nxq_node *hit)
{
	struct nxq_node *n;

	lockdep_assert_held(&dev->lock);
	nxq_unlist(dev, w);
	w->err = err;
	w->hit = hit;
	if (err == -EDQUOT && hit) {
		w->blk_node = hit;
		w->qnode = w->h->node;
		rb_add_cached(&w->rb, &hit->blocked, nxq_rb_less);
		if (!hit->nr_blocked++)
			list_add_tail(&hit->blocked_link, &dev->blocked_nodes);
		for (n = w->qnode; n; n = n->parent)
			n->queued_below += w->bytes;
	} else if (err == -ENOSPC) {
		w->blk_dev = true;
		rb_add_cached(&w->rb, &dev->blocked, nxq_rb_less);
		dev->nr_dev_blocked++;
		dev->blocked_bytes += w->bytes;
	}
}

/*
 * Is a waiter before @w held up by a constraint on @w's path?  Then say
 * which in *hit (the first from @w's node up; NULL: the device).
 */
/*
 * Someone other than its charger settles a queued waiter: @result set
 * (0 granted, <0 why not), out of the queue, its shell told.
 */
static void nxq_waiter_settle(struct nxq_device *dev, struct nxq_waiter *w,
			      int result)
{
	w->result = result;
	nxq_dequeue(dev, w);
	if (w->done)
		w->done(w);
}

static int nxq_held_behind(struct nxq_device *dev, struct nxq_waiter *w,
			   struct nxq_node **hit)
{
	struct nxq_waiter *x;
	struct nxq_node *n;

	for (n = w->h->node; n; n = n->parent) {
		x = nxq_head(&n->blocked);
		if (x && x != w && nxq_before(x, w)) {
			*hit = n;
			return -EDQUOT;
		}
	}
	x = nxq_head(&dev->blocked);
	if (x && x != w && nxq_before(x, w)) {
		*hit = NULL;
		return -ENOSPC;
	}
	return 0;
}

/**
 * nxq_waiter_check() - may a waiter be granted now?
 * @dev: the device
 * @w: a waiter, queued or not (a no-wait charge: key and seq say where it
 *	would go)
 * @hit: set to the node that holds it up with -EDQUOT, else NULL
 *
 * It fits its path and nobody before it is held up on that path.
 * O(depth); changes nothing.
 *
 * Context: the device lock is held.
 * Return: 0, or why not: -EDQUOT, -ENOSPC, -EOVERFLOW.
 */
int nxq_waiter_check(struct nxq_device *dev, struct nxq_waiter *w,
		     struct nxq_node **hit)
{
	int err;

	lockdep_assert_held(&dev->lock);
	err = nxq_fits(w->h, w->bytes, hit);
	if (!err)
		err = nxq_held_behind(dev, w, hit);
	return err;
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

/* The trees a walk looks at: every one, a path's and the device's, or one. */
struct nxq_walk {
	struct nxq_device *dev;
	u64 pass;
	bool all;
	struct nxq_node *path;		/* its nodes' trees, and the device's */
	struct nxq_node *one;		/* this node's tree only */
};	/* none of all, path, one: the device's tree only */

/* The earliest head of the walk's trees that is not done, and its tree. */
static struct nxq_waiter *nxq_walk_next(struct nxq_walk *k,
					struct nxq_node **q)
{
	struct nxq_device *dev = k->dev;
	struct nxq_waiter *best = NULL, *x;
	struct nxq_node *n;

#define NXQ_CONSIDER(node)						\
	do {								\
		if ((node)->nr_blocked && (node)->blocked_pass != k->pass) { \
			x = nxq_head(&(node)->blocked);			\
			if (!best || nxq_before(x, best)) {		\
				best = x;				\
				*q = (node);				\
			}						\
		}							\
	} while (0)

	if (k->all)
		list_for_each_entry(n, &dev->blocked_nodes, blocked_link)
			NXQ_CONSIDER(n);
	else if (k->path)
		for (n = k->path; n; n = n->parent)
			NXQ_CONSIDER(n);
	else if (k->one)
		NXQ_CONSIDER(k->one);
#undef NXQ_CONSIDER
	if (!k->one && dev->nr_dev_blocked && dev->blocked_pass != k->pass) {
		x = nxq_head(&dev->blocked);
		if (!best || nxq_before(x, best)) {
			best = x;
			*q = NULL;
		}
	}
	return best;
}

/* Grant what can be granted in the walk's trees, in key order. */
static void nxq_walk(struct nxq_walk *k)
{
	struct nxq_device *dev = k->dev;
	struct nxq_node *q, *hit;
	struct nxq_waiter *w;
	int err;

	k->pass = ++dev->dispatch_pass;
	while ((w = nxq_walk_next(k, &q))) {
		dev->dispatch_visits++;
		err = nxq_waiter_check(dev, w, &hit);
		if (!err || err == -EOVERFLOW) {
			/* granted; or a counter would wrap: never */
			nxq_waiter_set(dev, w, 0, NULL);
			if (!err)
				nxq_commit(w->h, w->bytes);
			w->err = err;
			nxq_waiter_settle(dev, w, err);
			continue;
		}
		if ((err == -EDQUOT && q && hit == q) ||
		    (err == -ENOSPC && !q)) {
			/* still its tree's head: everyone behind it waits */
			if (q)
				q->blocked_pass = k->pass;
			else
				dev->blocked_pass = k->pass;
			continue;
		}
		nxq_waiter_set(dev, w, err, hit);
		/* The head of the tree it moved to: that tree is done too. */
		if (w->blk_node && nxq_head(&w->blk_node->blocked) == w)
			w->blk_node->blocked_pass = k->pass;
		else if (w->blk_dev && nxq_head(&dev->blocked) == w)
			dev->blocked_pass = k->pass;
	}
}

/**
 * nxq_dispatch() - grant queued charges that fit, in queue order
 * @dev: the device
 *
 * Walks every constraint's tree: after a change that may make room
 * anywhere (a min, the capacity, default_max, a max set or cleared).
 * O(trees + waiters granted or moved), each step O(trees); nothing when
 * the queue is empty.
 *
 * Context: the device lock is held.
 */
void nxq_dispatch(struct nxq_device *dev)
{
	struct nxq_walk k = { .dev = dev, .all = true };

	lockdep_assert_held(&dev->lock);
	if (list_empty(&dev->waiters))
		return;
	nxq_walk(&k);
}

/**
 * nxq_dispatch_path() - dispatch after a release on @node's path
 * @dev: the device
 * @node: where bytes were released
 *
 * Only a waiter held up by a node of that path, or by the device, can be
 * granted by it: the walk looks at those trees alone, whatever else is
 * queued.
 *
 * Context: the device lock is held.
 */
void nxq_dispatch_path(struct nxq_device *dev, struct nxq_node *node)
{
	struct nxq_walk k = { .dev = dev, .path = node };

	lockdep_assert_held(&dev->lock);
	if (nxq_path_blocked(dev, node))
		nxq_walk(&k);
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
 * nxq_waiter_leave() - a waiter leaves the queue ungranted
 * @dev: the device
 * @w: the waiter, timed out or interrupted (nxq_dequeue() next)
 *
 * Out of its tree; if it was the head, those behind it may fit now: that
 * tree is walked.  A waiter that was not the head changes nobody's
 * chances: O(log n).
 *
 * Context: the device lock is held.
 */
void nxq_waiter_leave(struct nxq_device *dev, struct nxq_waiter *w)
{
	struct nxq_walk k = { .dev = dev, .one = w->blk_node };
	int err = w->err;
	struct nxq_node *hit = w->hit;

	lockdep_assert_held(&dev->lock);
	if (nxq_unlist(dev, w))
		nxq_walk(&k);
	w->err = err;	/* for the asks and the denial */
	w->hit = hit;
}

/**
 * nxq_waiters_rehome() - a holder with queued charges moved to a new node
 * @dev: the device
 * @h: the holder, on its new node
 * @old: its node before
 *
 * Its waiters are held up by constraints of the old path: each is looked
 * at again on the new one (granted, or put in the tree that holds it up
 * now), then the old path's trees, whose heads may have left, are walked.
 *
 * Context: the device lock is held.
 */
void nxq_waiters_rehome(struct nxq_device *dev, struct nxq_holder *h,
			struct nxq_node *old)
{
	struct nxq_waiter *w, *tmp;
	struct nxq_node *hit;
	int err;

	lockdep_assert_held(&dev->lock);
	if (list_empty(&h->waiters))
		return;
	list_for_each_entry_safe(w, tmp, &h->waiters, hlink) {
		nxq_waiter_set(dev, w, 0, NULL);
		err = nxq_waiter_check(dev, w, &hit);
		if (err && err != -EOVERFLOW) {
			nxq_waiter_set(dev, w, err, hit);
			continue;
		}
		if (!err)
			nxq_commit(h, w->bytes);
		w->err = err;
		nxq_waiter_settle(dev, w, err);
	}
	nxq_dispatch_path(dev, old);
}

/**
 * nxq_queued_ahead() - bytes of the other charges queued on the same
 * constraint
 * @dev: the device
 * @me: the waiter asking (queued or not)
 *
 * Together they are what the constraint lacks: with -EDQUOT, those of
 * every waiter held up by a node whose own node is under me->hit; with
 * -ENOSPC, those of the device's tree.  O(1).
 *
 * Context: the device lock is held.
 * Return: bytes.
 */
u64 nxq_queued_ahead(struct nxq_device *dev, struct nxq_waiter *me)
{
	u64 sum = 0;

	lockdep_assert_held(&dev->lock);
	if (me->err == -EDQUOT && me->hit) {
		sum = me->hit->queued_below;
		if (me->blk_node)
			sum -= me->bytes;
	} else if (me->err == -ENOSPC) {
		sum = dev->blocked_bytes;
		if (me->blk_dev)
			sum -= me->bytes;
	}
	return sum;
}

/**
 * nxq_waiters_cancel() - cancel a holder's queued charges
 * @dev: the device
 * @h: the holder, being detached
 *
 * Each of its waiters leaves the queue with result -ENOENT, and its shell
 * is told; the caller walks the holder's path (nxq_dispatch_holder()),
 * where the trees they leave are.
 *
 * Context: the device lock is held.
 */
void nxq_waiters_cancel(struct nxq_device *dev, struct nxq_holder *h)
{
	struct nxq_waiter *w, *tmp;

	lockdep_assert_held(&dev->lock);
	list_for_each_entry_safe(w, tmp, &h->waiters, hlink) {
		nxq_waiter_set(dev, w, 0, NULL);
		nxq_waiter_settle(dev, w, -ENOENT);
	}
}
