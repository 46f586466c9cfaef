// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota ledger, layer 4: holders -- creation, moves between nodes,
 * detach and the last put (see objects.h; their fields and locks in
 * ledger_types.h).  A holder holds a reference on its node (objects.c),
 * and one on each node it left a residue on.
 */
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/lockdep.h>
#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/err.h>
#include <linux/kernel.h>

#include "objects.h"

/**
 * nxq_holder_create() - create a holder charged to @node
 * @node: its node; the caller's reference is transferred to the holder
 * @priority: 0..NXQ_PRIORITY_MAX
 * @priv: the caller's data, handed back to nxq_holder_put()'s free_priv;
 *	NULL for a holder that cannot be asked (no eventfd)
 * @owner: a reference on the owning process, for holder_kill; the
 *	holder's now, dropped by the caller's free_priv
 * @tgid: the owning process's id in the initial pid namespace, for reports
 * @err: set on failure
 *
 * Checks the node's priority_max and, on every node of the path, its
 * holders_max against the holders of its subtree.  The holder's memory is
 * charged to the caller's memory cgroup.
 *
 * Context: the ledger lock is held; takes the device lock.
 * Return: the holder with one reference, or NULL with *@err -EPERM
 * (priority above priority_max), -EMFILE (a holders_max reached) or
 * -ENOMEM; the node reference then stays the caller's.
 */
struct nxq_holder *nxq_holder_create(struct nxq_node *node, u32 priority,
				     void *priv, struct pid *owner, u32 tgid,
				     int *err)
{
	struct nxq_device *dev = node->dev;
	struct nxq_holder *h;
	struct nxq_node *n;

	lockdep_assert_held(&dev->ledger->lock);
	h = kzalloc(sizeof(*h), GFP_KERNEL_ACCOUNT);
	if (!h) {
		*err = -ENOMEM;
		return NULL;
	}
	spin_lock(&dev->lock);
	*err = 0;
	if (priority > nxq_node_limit(node, NXQ_LIM_PRIORITY_MAX))
		*err = -EPERM;
	if (!*err && nxq_holders_full(node))
		*err = -EMFILE;
	if (*err) {
		spin_unlock(&dev->lock);
		kfree(h);
		return NULL;
	}
	kref_init(&h->ref);
	INIT_LIST_HEAD(&h->residue);
	INIT_LIST_HEAD(&h->waiters);
	INIT_LIST_HEAD(&h->recall_link);
	h->node = node;
	h->priority = priority;
	h->priv = priv;
	h->owner = owner;
	h->tgid = tgid;
	node->nr_holders++;
	for (n = node; n; n = n->parent)
		n->subtree_holders++;
	dev->nr_holders++;
	list_add_tail(&h->link, &dev->holders);
	list_add_tail(&h->node_link, &node->holders);
	nxq_event(dev, NXQ_EV_HOLDER_ADDED, NULL, h, 0, priority, 0);
	spin_unlock(&dev->lock);
	return h;
}

/**
 * nxq_holder_rehome() - charge a holder's next charges to another node
 * @h: the holder, attached
 * @node: the node of the cgroup its process moved to; the caller's
 *	reference is transferred to the holder on success
 *
 * What the holder charged so far stays on its old node (as a struct
 * nxq_residue, released first by later uncharges), as memcg v2 leaves a
 * moved task's pages charged where they were.  The move is checked as a
 * registration at @node is: @node's priority_max, and every holders_max
 * on its path against its subtree's holders with this one counted at
 * @node (a move inside a subtree does not count it twice).  A move that
 * would break one is refused and the holder stays where it was, with its
 * charge; it is charged nothing more until its process is back or room
 * is made (every charge is refused the same way).
 *
 * Context: the ledger lock is held; takes the device lock.
 * Return: 0, -ENOENT if detached or already on @node (the reference then
 * stays the caller's), -EPERM (its priority above @node's priority_max),
 * -EMFILE (a holders_max on @node's path reached), or -ENOMEM.
 */
int nxq_holder_rehome(struct nxq_holder *h, struct nxq_node *node)
{
	struct nxq_device *dev = node->dev;
	struct nxq_residue *r, *cur;
	struct nxq_node *old, *n, *drop = NULL;
	int err = 0;

	lockdep_assert_held(&dev->ledger->lock);
	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		return -ENOMEM;
	spin_lock(&dev->lock);
	old = h->node;
	if (h->detached || old == node)
		err = -ENOENT;
	else if (h->priority > nxq_node_limit(node, NXQ_LIM_PRIORITY_MAX))
		err = -EPERM;
	if (err) {
		spin_unlock(&dev->lock);
		kfree(r);
		return err;
	}
	/* Counted out of the old path, then checked as a newcomer at @node. */
	old->nr_holders--;
	for (n = old; n; n = n->parent)
		n->subtree_holders--;
	if (nxq_holders_full(node)) {
		old->nr_holders++;
		for (n = old; n; n = n->parent)
			n->subtree_holders++;
		spin_unlock(&dev->lock);
		kfree(r);
		return -EMFILE;
	}
	/* One residue per earlier node (it keeps the holder's reference). */
	list_for_each_entry(cur, &h->residue, link) {
		if (cur->node == old) {
			drop = old;	/* cur holds one already */
			break;
		}
	}
	if (drop) {
		cur->bytes += h->charge - h->residue_bytes;
	} else {
		r->node = old;
		r->bytes = h->charge - h->residue_bytes;
		list_add_tail(&r->link, &h->residue);
		r = NULL;
	}
	h->residue_bytes = h->charge;
	node->nr_holders++;
	for (n = node; n; n = n->parent)
		n->subtree_holders++;
	h->node = node;
	list_move_tail(&h->node_link, &node->holders);
	nxq_waiters_rehome(dev, h, old);
	spin_unlock(&dev->lock);
	kfree(r);
	if (drop)
		nxq_node_put(drop);
	return 0;
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
	bool asked;

	spin_lock(&dev->lock);
	if (!h->detached) {
		asked = h->ticket.open;
		h->detached = true;
		list_del_init(&h->link);
		list_del_init(&h->node_link);
		nxq_event(dev, NXQ_EV_HOLDER_REMOVED, NULL, h, h->charge, 0, 0);
		nxq_waiters_cancel(dev, h);
		if (h->charge)
			nxq_uncharge_locked(h, h->charge);
		h->reclaimable = 0;
		h->ticket.open = false;
		list_del_init(&h->recall_link);
		nxq_dispatch_holder(dev, h);
		if (asked) {
			dev->decline_gen++;
			nxq_reask(dev);
		}
	}
	spin_unlock(&dev->lock);
}

/*
 * The last reference to @h is gone and the ledger lock is held: detach the
 * holder if it is not yet, free it, and drop the lock.
 */
static void nxq_holder_free_locked(struct nxq_holder *h,
				   void (*free_priv)(struct nxq_holder *h))
{
	struct nxq_ledger *l = h->node->dev->ledger;
	struct nxq_residue *r, *tmp;
	struct nxq_node *node, *n;

	lockdep_assert_held(&l->lock);
	nxq_holder_detach(h);
	node = h->node;
	spin_lock(&node->dev->lock);
	node->nr_holders--;
	for (n = node; n; n = n->parent)
		n->subtree_holders--;
	spin_unlock(&node->dev->lock);
	node->dev->nr_holders--;
	list_for_each_entry_safe(r, tmp, &h->residue, link) {
		list_del(&r->link);
		nxq_node_put(r->node);
		kfree(r);
	}
	nxq_node_put(node);
	mutex_unlock(&l->lock);
	if (free_priv)
		free_priv(h);
	kfree_rcu(h, rcu);
}

/**
 * nxq_holder_put() - drop a holder reference
 * @h: the holder
 * @free_priv: called with the holder when it is freed, to release its
 *	priv and owner, or NULL
 *
 * The last reference detaches the holder if needed and frees it; it takes
 * the ledger lock, so the caller must not hold it.
 *
 * Context: process context; may sleep.
 */
void nxq_holder_put(struct nxq_holder *h,
		    void (*free_priv)(struct nxq_holder *h))
{
	struct nxq_ledger *l = h->node->dev->ledger;

	if (!refcount_dec_and_mutex_lock(&h->ref.refcount, &l->lock))
		return;
	nxq_holder_free_locked(h, free_priv);
}

/**
 * nxq_holder_end() - detach a holder and drop a reference, as one step
 * @h: the holder
 * @free_priv: as for nxq_holder_put()
 *
 * nxq_holder_detach() and nxq_holder_put() under one hold of the ledger
 * lock: whoever reads the ledger under that lock (a dump of the holders,
 * a device's removal, a node's holder count) sees the holder attached and
 * counted, or gone; never uncharged and out of the list but still counted,
 * which would make a device's removal fail with -EBUSY after its last
 * holder had left.  When another reference is held (a request in flight)
 * the holder is detached now and freed at that reference's put.
 *
 * Context: process context; may sleep.  Takes the ledger lock: the caller
 * must not hold it.
 */
void nxq_holder_end(struct nxq_holder *h,
		    void (*free_priv)(struct nxq_holder *h))
{
	struct nxq_ledger *l = h->node->dev->ledger;

	mutex_lock(&l->lock);
	nxq_holder_detach(h);
	if (!refcount_dec_and_test(&h->ref.refcount)) {
		mutex_unlock(&l->lock);
		return;
	}
	nxq_holder_free_locked(h, free_priv);
}
