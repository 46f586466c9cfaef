// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota ledger, layer 4: devices, budget nodes and holders (see
 * objects.h; their fields and locks in ledger_types.h).
 *
 * Size (over 800 lines): devices, budget nodes and holders share the
 * device lock and each other's lifetimes (a holder pins its node, a node
 * its device); splitting holders out (holder.c) is the next step, not
 * done yet because nxquotad compiles this file unchanged and both builds'
 * file lists move with it.
 */
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/lockdep.h>
#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/err.h>
#include <linux/kernel.h>

#include "objects.h"

/*
 * A node is needed while something references it, or while it carries a
 * budget for a key that is still alive.
 */
static bool nxq_node_needed(struct nxq_node *node)
{
	struct nxq_ledger *l = node->dev->ledger;
	bool budget;
	int i;

	lockdep_assert_held(&l->lock);
	if (node->refs)
		return true;
	if (l->ops && l->ops->key_dead && l->ops->key_dead(node->key))
		return false;
	spin_lock(&node->dev->lock);
	budget = node->max_set || node->min || node->kill_on_ignore;
	for (i = 0; i < NXQ_NR_LIMITS; i++)
		budget |= node->lim[i] != NXQ_LIMIT_UNSET;
	spin_unlock(&node->dev->lock);
	return budget;
}

static void nxq_node_free(struct nxq_node *node)
{
	struct nxq_ledger *l = node->dev->ledger;

	lockdep_assert_held(&l->lock);
	if (l->ops && l->ops->node_removed)
		l->ops->node_removed(node);
	xa_erase(&node->dev->nodes, node->id);
	if (l->ops && l->ops->key_put)
		l->ops->key_put(node->key);
	kfree_rcu(node, rcu);
}

/* Free @node if it is not needed, then its parent likewise. */
static void nxq_node_release(struct nxq_node *node)
{
	struct nxq_node *parent;

	lockdep_assert_held(&node->dev->ledger->lock);
	while (node && !nxq_node_needed(node)) {
		parent = node->parent;
		spin_lock(&node->dev->lock);
		if (WARN_ON_ONCE(node->usage))
			node->usage = 0;
		nxq_claim_changed(node, nxq_claim(node), 0);
		list_del_init(&node->sibling);
		node->dev->emin_gen++;
		spin_unlock(&node->dev->lock);
		nxq_node_free(node);
		if (!parent)
			break;
		WARN_ON_ONCE(!parent->refs);
		parent->refs--;
		node = parent;
	}
}

/**
 * nxq_ledger_init() - initialise an empty ledger
 * @l: the ledger
 * @ops: shell hooks, or NULL
 *
 * Context: any; the ledger is not in use yet.
 */
void nxq_ledger_init(struct nxq_ledger *l, const struct nxq_ledger_ops *ops)
{
	mutex_init(&l->reg_lock);
	mutex_init(&l->lock);
	INIT_LIST_HEAD(&l->devices);
	l->closing = false;
	l->ops = ops;
}

/**
 * nxq_ledger_destroy() - remove every device of a ledger with no holders
 * @l: the ledger
 *
 * Devices that still have holders are a caller bug and are leaked with a
 * warning rather than freed under their holders.
 *
 * Context: process context; sleeps; no holder is left.
 */
void nxq_ledger_destroy(struct nxq_ledger *l)
{
	struct nxq_device *dev;

	mutex_lock(&l->lock);
	l->closing = true;
	mutex_unlock(&l->lock);
	for (;;) {
		char key[NXQ_DEVICE_KEY_MAX];

		mutex_lock(&l->lock);
		dev = list_first_entry_or_null(&l->devices, struct nxq_device,
					       link);
		if (dev)
			strscpy(key, dev->key, sizeof(key));
		mutex_unlock(&l->lock);
		if (!dev)
			break;
		if (WARN_ON(nxq_device_remove(l, key)))
			break;
	}
	mutex_destroy(&l->lock);
	mutex_destroy(&l->reg_lock);
}

/**
 * nxq_device_key_valid() - check a device key's syntax
 * @key: NUL-terminated string
 *
 * Context: any.
 * Return: true if @key is 1..NXQ_DEVICE_KEY_MAX-1 characters of
 * [A-Za-z0-9._:-], and not "." or ".." (it names a sysfs directory).
 */
bool nxq_device_key_valid(const char *key)
{
	size_t i, n = strnlen(key, NXQ_DEVICE_KEY_MAX);

	if (n == 0 || n == NXQ_DEVICE_KEY_MAX || !strcmp(key, ".") ||
	    !strcmp(key, ".."))
		return false;
	for (i = 0; i < n; i++) {
		char c = key[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == ':' || c == '-'))
			return false;
	}
	return true;
}

static struct nxq_device *__nxq_device_find(struct nxq_ledger *l,
					    const char *key)
{
	struct nxq_device *dev;

	lockdep_assert_held(&l->lock);
	list_for_each_entry(dev, &l->devices, link)
		if (!strcmp(dev->key, key))
			return dev;
	return NULL;
}

/**
 * nxq_device_find() - look a device up by key
 * @l: the ledger, whose lock the caller holds
 * @key: the device key
 *
 * Context: the ledger lock is held.
 * Return: the device, valid while the ledger lock is held, or NULL.
 */
struct nxq_device *nxq_device_find(struct nxq_ledger *l, const char *key)
{
	return __nxq_device_find(l, key);
}

/* The event queues (event.h), allocated or not. */
static void nxq_device_free_events(struct nxq_device *dev)
{
	kfree(dev->ev_ring);
	kfree(dev->ev_vital);
	kfree(dev->ev_denied);
}

/**
 * nxq_device_add() - register a device
 * @l: the ledger, whose locks the caller must NOT hold
 * @key: its key, checked with nxq_device_key_valid()
 * @capacity: bytes
 * @devt: the character device whose open file proves access, or 0
 *
 * Serialised with nxq_device_remove() by the ledger's reg_lock, so a key
 * being removed is free only once its shell objects are gone.  The device
 * starts with default_max 0: top-level cgroups without a budget can charge
 * nothing on it until root says otherwise.
 *
 * Context: process context; sleeps.
 * Return: the device, or ERR_PTR(-EINVAL) for a bad key, -EEXIST if the
 * key is taken, -ENODEV while the ledger is being destroyed, -ENOMEM, or
 * the shell's error.
 */
struct nxq_device *nxq_device_add(struct nxq_ledger *l, const char *key,
				  u64 capacity, dev_t devt)
{
	struct nxq_device *dev;
	int err, i;

	if (!nxq_device_key_valid(key))
		return ERR_PTR(-EINVAL);
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return ERR_PTR(-ENOMEM);
	if (l->ops && l->ops->event) {
		dev->ev_ring = kcalloc(NXQ_EV_RING, sizeof(*dev->ev_ring),
				       GFP_KERNEL);
		dev->ev_vital = kcalloc(NXQ_EV_VITAL, sizeof(*dev->ev_vital),
					GFP_KERNEL);
		dev->ev_denied = kcalloc(NXQ_EV_DENIED_SLOTS,
					 sizeof(*dev->ev_denied), GFP_KERNEL);
		if (!dev->ev_ring || !dev->ev_vital || !dev->ev_denied) {
			nxq_device_free_events(dev);
			kfree(dev);
			return ERR_PTR(-ENOMEM);
		}
	}
	spin_lock_init(&dev->ev_lock);
	INIT_LIST_HEAD(&dev->ev_denied_list);
	INIT_WORK(&dev->ev_work, nxq_event_work);
	dev->ledger = l;
	strscpy(dev->key, key, sizeof(dev->key));
	spin_lock_init(&dev->lock);
	xa_init(&dev->nodes);
	INIT_LIST_HEAD(&dev->holders);
	INIT_LIST_HEAD(&dev->waiters);
	INIT_LIST_HEAD(&dev->blocked_nodes);
	INIT_LIST_HEAD(&dev->recalls);
	init_waitqueue_head(&dev->wq);
	dev->capacity = capacity;
	dev->emin_gen = 1;
	dev->devt = devt;
	dev->default_max = 0;
	atomic64_set(&dev->events_dropped, 0);
	for (i = 0; i < NXQ_EV_TYPES; i++)
		atomic64_set(&dev->events_dropped_type[i], 0);
	dev->ticket_timeout_ms = NXQ_TICKET_TIMEOUT_MS;

	mutex_lock(&l->reg_lock);
	mutex_lock(&l->lock);
	if (l->closing) {
		err = -ENODEV;
		goto fail;
	}
	if (__nxq_device_find(l, key)) {
		err = -EEXIST;
		goto fail;
	}
	if (l->ops && l->ops->device_added) {
		err = l->ops->device_added(dev);
		if (err)
			goto fail;
	}
	list_add_tail(&dev->link, &l->devices);
	nxq_event(dev, NXQ_EV_DEVICE_ADDED, NULL, NULL, capacity, 0, 0);
	mutex_unlock(&l->lock);
	mutex_unlock(&l->reg_lock);
	return dev;
fail:
	mutex_unlock(&l->lock);
	mutex_unlock(&l->reg_lock);
	nxq_device_free_events(dev);
	kfree(dev);
	return ERR_PTR(err);
}

/**
 * nxq_device_set_capacity() - change a device's capacity
 * @dev: the device
 * @capacity: bytes; may be below what is charged
 *
 * Context: takes the device lock.
 */
void nxq_device_set_capacity(struct nxq_device *dev, u64 capacity)
{
	spin_lock(&dev->lock);
	dev->capacity = capacity;
	dev->emin_gen++;
	nxq_dispatch(dev);
	spin_unlock(&dev->lock);
}

/**
 * nxq_device_set_default_max() - change the max of unbudgeted top-level
 * nodes
 * @dev: the device
 * @max: bytes, or NXQ_UNLIMITED
 *
 * Context: takes the device lock.
 */
void nxq_device_set_default_max(struct nxq_device *dev, u64 max)
{
	spin_lock(&dev->lock);
	dev->default_max = max;
	nxq_dispatch(dev);
	spin_unlock(&dev->lock);
}

/**
 * nxq_device_set_ticket_timeout() - change the floor of ticket deadlines
 * @dev: the device
 * @ms: 1..3600000
 *
 * Context: takes the device lock.
 * Return: 0, or -EINVAL out of range.
 */
int nxq_device_set_ticket_timeout(struct nxq_device *dev, u32 ms)
{
	if (!ms || ms > 3600 * 1000)
		return -EINVAL;
	spin_lock(&dev->lock);
	dev->ticket_timeout_ms = ms;
	spin_unlock(&dev->lock);
	return 0;
}

/**
 * nxq_device_remove() - unregister a device and every budget on it
 * @l: the ledger, whose locks the caller must NOT hold
 * @key: the device's key
 *
 * Context: process context; sleeps.
 * Return: 0, -ENOENT if no device has @key, or -EBUSY while holders (even
 * detached ones not yet freed) exist on it.
 */
int nxq_device_remove(struct nxq_ledger *l, const char *key)
{
	struct nxq_device *dev;
	struct nxq_node *node;
	unsigned long id;

	mutex_lock(&l->reg_lock);
	mutex_lock(&l->lock);
	dev = __nxq_device_find(l, key);
	if (!dev) {
		mutex_unlock(&l->lock);
		mutex_unlock(&l->reg_lock);
		return -ENOENT;
	}
	if (dev->nr_holders) {
		mutex_unlock(&l->lock);
		mutex_unlock(&l->reg_lock);
		return -EBUSY;
	}
	dev->dead = true;
	list_del(&dev->link);
	nxq_event(dev, NXQ_EV_DEVICE_REMOVED, NULL, NULL, 0, 0, 0);
	/* No holders: every reference left is a child's; free leaves first. */
	while (!xa_empty(&dev->nodes)) {
		bool progress = false;

		xa_for_each(&dev->nodes, id, node) {
			if (node->refs)
				continue;
			progress = true;
			spin_lock(&dev->lock);
			nxq_claim_changed(node, nxq_claim(node), 0);
			list_del_init(&node->sibling);
			dev->emin_gen++;
			spin_unlock(&dev->lock);
			if (node->parent)
				node->parent->refs--;
			nxq_node_free(node);
		}
		if (WARN_ON_ONCE(!progress))
			break;
	}
	mutex_unlock(&l->lock);

	/*
	 * Shell handlers may wait for the ledger lock: delete without it,
	 * but under reg_lock, so the key cannot be registered again until
	 * its directory is gone.
	 */
	if (l->ops && l->ops->device_removed)
		l->ops->device_removed(dev);
	mutex_unlock(&l->reg_lock);
	xa_destroy(&dev->nodes);
	WARN_ON_ONCE(dev->used);
	/* Nothing queues events any more: send what is left, then free. */
	flush_work(&dev->ev_work);
	/* A charge may still use it under RCU through a holder found so. */
	synchronize_rcu();
	nxq_device_free_events(dev);
	kfree(dev);
	return 0;
}

/**
 * nxq_device_prune() - free every node of a device that is not needed
 * @dev: the device; the ledger lock is held
 *
 * Removes budgets left on dead keys.  O(nodes); slow paths only.
 *
 * Context: the ledger lock is held; takes the device lock.
 */
void nxq_device_prune(struct nxq_device *dev)
{
	struct nxq_node *node;
	unsigned long id;
	bool again;

	lockdep_assert_held(&dev->ledger->lock);
	do {
		again = false;
		xa_for_each(&dev->nodes, id, node) {
			if (!nxq_node_needed(node)) {
				nxq_node_release(node);
				again = true;
				break;
			}
		}
	} while (again);
}

/**
 * nxq_node_put() - drop a reference taken by nxq_node_get()
 * @node: the node; the ledger lock is held
 *
 * Context: the ledger lock is held; takes the device lock.
 */
void nxq_node_put(struct nxq_node *node)
{
	lockdep_assert_held(&node->dev->ledger->lock);
	if (WARN_ON_ONCE(!node->refs))
		return;
	node->refs--;
	nxq_node_release(node);
}

/**
 * nxq_node_prune() - free a node that is no longer needed
 * @node: the node; the ledger lock is held
 *
 * Called after its budget was cleared or its key died.
 *
 * Context: the ledger lock is held; takes the device lock.
 */
void nxq_node_prune(struct nxq_node *node)
{
	lockdep_assert_held(&node->dev->ledger->lock);
	nxq_node_release(node);
}

/**
 * nxq_node_find() - look a node up by id
 * @dev: the device; the ledger lock is held
 * @id: the key's id
 *
 * Context: the ledger lock is held.
 * Return: the node (no reference taken) or NULL.
 */
struct nxq_node *nxq_node_find(struct nxq_device *dev, u64 id)
{
	lockdep_assert_held(&dev->ledger->lock);
	return xa_load(&dev->nodes, id);
}

/**
 * nxq_node_get() - find or create the node for @id under @parent
 * @dev: the device; the ledger lock is held and the device is not dead
 * @parent: the parent node (the caller holds a reference), or NULL for
 *	the root of the tree
 * @id: the key's id
 * @key: the key; on success the ledger owns one reference to it when it
 *	created the node, else the caller keeps its own
 *
 * Context: the ledger lock is held; sleeps (allocates).
 * Return: the node with a reference taken, ERR_PTR(-EINVAL) if @id exists
 * under another parent or a second root is asked for, -ENOMEM, or the
 * shell's error.
 */
struct nxq_node *nxq_node_get(struct nxq_device *dev, struct nxq_node *parent,
			      u64 id, void *key)
{
	struct nxq_ledger *l = dev->ledger;
	struct nxq_node *node;
	int err;

	lockdep_assert_held(&l->lock);
	node = xa_load(&dev->nodes, id);
	if (node) {
		if (node->parent != parent)
			return ERR_PTR(-EINVAL);
		node->refs++;
		return node;
	}

	/* A tenant's registration makes nodes: its memory cgroup pays. */
	node = kzalloc(sizeof(*node), GFP_KERNEL_ACCOUNT);
	if (!node)
		return ERR_PTR(-ENOMEM);
	node->dev = dev;
	node->parent = parent;
	node->id = id;
	node->key = key;
	node->max = NXQ_UNLIMITED;
	memset32(node->lim, NXQ_LIMIT_UNSET, NXQ_NR_LIMITS);
	INIT_LIST_HEAD(&node->children);
	INIT_LIST_HEAD(&node->sibling);
	INIT_LIST_HEAD(&node->holders);
	INIT_LIST_HEAD(&node->blocked_link);
	node->refs = 1;
	err = xa_insert(&dev->nodes, id, node, GFP_KERNEL_ACCOUNT);
	if (err)
		goto fail;
	if (l->ops && l->ops->node_added) {
		err = l->ops->node_added(node);
		if (err) {
			xa_erase(&dev->nodes, id);
			goto fail;
		}
	}
	if (parent) {
		parent->refs++;
		spin_lock(&dev->lock);
		list_add_tail(&node->sibling, &parent->children);
		spin_unlock(&dev->lock);
	}
	return node;
fail:
	kfree(node);
	return ERR_PTR(err);
}

/* nxq_node_set_max() under the device lock: no dispatch. */
static void __nxq_node_set_max(struct nxq_node *node, u64 max)
{
	struct nxq_device *dev = node->dev;
	bool was_budgeted = nxq_budgeted(node);

	lockdep_assert_held(&dev->lock);
	node->max = max;
	node->max_set = true;
	nxq_kind_changed(node, node->min, was_budgeted);
	nxq_event(dev, NXQ_EV_BUDGET_CHANGED, node, NULL, max, node->min, 0);
	if (node->usage > max)
		nxq_ask_budget(node, node->usage - max);
}

/**
 * nxq_node_set_max() - set a node's hard cap
 * @node: the node
 * @max: bytes, or NXQ_UNLIMITED
 *
 * Lowering max below the node's usage takes nothing back: it refuses
 * further charges and opens NXQ_TICKET_REASON_BUDGET tickets on the
 * subtree's holders for the excess.  Raising it serves waiters.  The max
 * becomes the node's own: the node has a budget, and default_max no
 * longer binds its subtree.  No check (nxq_node_apply() checks).
 *
 * Context: takes the device lock.
 */
void nxq_node_set_max(struct nxq_node *node, u64 max)
{
	struct nxq_device *dev = node->dev;

	spin_lock(&dev->lock);
	__nxq_node_set_max(node, max);
	nxq_dispatch(dev);
	spin_unlock(&dev->lock);
}

/* nxq_node_set_min() under the device lock: no dispatch. */
static void __nxq_node_set_min(struct nxq_node *node, u64 min)
{
	bool was_claiming = node->min, was_budgeted = nxq_budgeted(node);
	u64 old_claim = nxq_claim(node);

	lockdep_assert_held(&node->dev->lock);
	node->min = min;
	nxq_claim_changed(node, old_claim, nxq_claim(node));
	nxq_kind_changed(node, was_claiming, was_budgeted);
	node->dev->emin_gen++;
	nxq_event(node->dev, NXQ_EV_BUDGET_CHANGED, node, NULL,
		  node->max_set ? node->max : NXQ_UNLIMITED, min, 0);
}

/**
 * nxq_node_set_min() - set a node's guarantee
 * @node: the node
 * @min: bytes; 0 for none of its own (it then claims its children's
 *	guarantees, and shares its parent's unclaimed one)
 *
 * Serves waiters: a larger guarantee may let a holder without an eventfd
 * charge more.  No check (nxq_node_apply() checks).
 *
 * Context: takes the device lock.
 */
void nxq_node_set_min(struct nxq_node *node, u64 min)
{
	spin_lock(&node->dev->lock);
	__nxq_node_set_min(node, min);
	nxq_dispatch(node->dev);
	spin_unlock(&node->dev->lock);
}

/**
 * nxq_node_set_kill_on_ignore() - set a node's escalation policy
 * @node: the node
 * @on: kill holders at or below it that ignore tickets past a deadline
 *
 * Context: takes the device lock.
 */
void nxq_node_set_kill_on_ignore(struct nxq_node *node, bool on)
{
	spin_lock(&node->dev->lock);
	node->kill_on_ignore = on;
	spin_unlock(&node->dev->lock);
}

/**
 * nxq_node_clear_budget() - forget a node's max, min, kill policy and
 * limits, and free it if nothing else needs it
 * @node: the node; the ledger lock is held; @node may be freed
 *
 * Context: the ledger lock is held; takes the device lock.
 */
void nxq_node_clear_budget(struct nxq_node *node)
{
	struct nxq_device *dev = node->dev;
	bool was_budgeted;

	lockdep_assert_held(&dev->ledger->lock);
	spin_lock(&dev->lock);
	__nxq_node_set_min(node, 0);
	was_budgeted = nxq_budgeted(node);
	node->max = NXQ_UNLIMITED;
	node->max_set = false;
	nxq_kind_changed(node, false, was_budgeted);
	nxq_event(dev, NXQ_EV_BUDGET_CHANGED, node, NULL, NXQ_UNLIMITED, 0, 0);
	node->kill_on_ignore = false;
	memset32(node->lim, NXQ_LIMIT_UNSET, NXQ_NR_LIMITS);
	nxq_dispatch(dev);	/* a cleared max may free room, or bind */
	spin_unlock(&dev->lock);
	nxq_node_prune(node);
}

/* The nearest ancestor whose claim is its own min, or the root. */
static struct nxq_node *nxq_claim_top(struct nxq_node *node)
{
	struct nxq_node *a;

	for (a = node->parent; a; a = a->parent)
		if (a->min || !a->parent)
			return a;
	return NULL;
}

/*
 * The claims under each ancestor of @node if its min became @min, as
 * nxq_claim_changed() would carry them up: refused where one would pass
 * NXQ_BYTES_MAX.  Each term is at most that, so the sums cannot wrap.
 * O(depth).
 */
static int nxq_claims_bounded(struct nxq_node *node, u64 min,
			      struct nxq_budget_refusal *why)
{
	u64 old = nxq_claim(node), new = min ?: node->children_min, sum;
	struct nxq_node *p;

	for (p = node->parent; p && old != new; p = p->parent) {
		sum = p->children_min - old + new;
		if (sum > NXQ_BYTES_MAX) {
			why->why = NXQ_REFUSE_BOUND;
			why->node = p;
			why->value = sum;
			why->limit = NXQ_BYTES_MAX;
			return -EOVERFLOW;
		}
		old = nxq_claim(p);
		new = p->min ?: sum;
	}
	return 0;
}

/**
 * nxq_node_check() - would a budget request leave a possible budget?
 * @node: the node
 * @r: the request
 * @why: filled in when refused
 *
 * Refused: a min above the max; a min, or the guarantees under any
 * ancestor, above NXQ_BYTES_MAX (-EOVERFLOW, overcommit or not); a min
 * above the device's capacity; and,
 * unless @r->overcommit, a min below what the node's children claim, or
 * one that makes the guarantees under its nearest ancestor with a min of
 * its own (or on the device) add up to more than that min (or the
 * capacity).  A request that does not raise a claim is never refused for
 * an overcommit that is already there.
 *
 * Context: the device lock is held.
 * Return: 0, -EINVAL (min above max), -EOVERFLOW (past NXQ_BYTES_MAX) or
 * -ENOSPC (no room for the guarantee).
 */
int nxq_node_check(struct nxq_node *node, const struct nxq_budget_req *r,
		   struct nxq_budget_refusal *why)
{
	int err;

	struct nxq_device *dev = node->dev;
	u64 max, min, old_claim, new_claim, total, limit;
	struct nxq_node *a;

	lockdep_assert_held(&dev->lock);
	memset(why, 0, sizeof(*why));
	why->node = node;
	max = r->set_max ? r->max :
	      (node->max_set ? node->max : NXQ_UNLIMITED);
	min = r->set_min ? r->min : node->min;
	if ((r->set_max || r->set_min) && min > max) {
		why->why = NXQ_REFUSE_MIN_ABOVE_MAX;
		why->value = min;
		why->limit = max;
		return -EINVAL;
	}
	if (!r->set_min)
		return 0;
	if (min > NXQ_BYTES_MAX) {
		why->why = NXQ_REFUSE_BOUND;
		why->value = min;
		why->limit = NXQ_BYTES_MAX;
		return -EOVERFLOW;
	}
	err = nxq_claims_bounded(node, min, why);
	if (err)
		return err;
	if (min > dev->capacity) {
		why->why = NXQ_REFUSE_MIN_ABOVE_DEVICE;
		why->value = min;
		why->limit = dev->capacity;
		return -ENOSPC;
	}
	if (r->overcommit)
		return 0;
	if (min && node->children_min > min && (!node->min || min < node->min)) {
		why->why = NXQ_REFUSE_CHILDREN;
		why->value = node->children_min;
		why->limit = min;
		return -ENOSPC;
	}
	old_claim = nxq_claim(node);
	new_claim = min ?: node->children_min;
	a = nxq_claim_top(node);
	if (!a || new_claim <= old_claim)
		return 0;
	total = a->children_min - old_claim + new_claim;
	limit = a->parent ? a->min : dev->capacity;
	if (total <= limit)
		return 0;
	why->why = a->parent ? NXQ_REFUSE_PARENT : NXQ_REFUSE_DEVICE;
	why->node = a;
	why->value = total;
	why->limit = limit;
	return -ENOSPC;
}

/**
 * nxq_node_apply() - check and apply a budget request to a node
 * @node: the node, referenced
 * @r: what to change
 * @why: set when refused (nxq_node_check())
 *
 * The one budget-setting function behind sysfs and netlink: checked and
 * applied under one hold of the device lock, so a refused request
 * changes nothing and two requests cannot pass their checks together.
 *
 * Context: takes the device lock.
 * Return: 0, or nxq_node_check()'s errno.
 */
int nxq_node_apply(struct nxq_node *node, const struct nxq_budget_req *r,
		   struct nxq_budget_refusal *why)
{
	struct nxq_device *dev = node->dev;
	int i, err;

	spin_lock(&dev->lock);
	err = nxq_node_check(node, r, why);
	if (err)
		goto out;
	if (r->set_max)
		__nxq_node_set_max(node, r->max);
	if (r->set_min)
		__nxq_node_set_min(node, r->min);
	if (r->set_kill)
		node->kill_on_ignore = r->kill_on_ignore;
	for (i = 0; i < NXQ_NR_LIMITS; i++)
		if (r->set_lim & BIT(i))
			node->lim[i] = r->lim[i];
	nxq_dispatch(dev);
out:
	spin_unlock(&dev->lock);
	return err;
}

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
	if (priority > nxq_node_limit(node, NXQ_LIM_PRIORITY))
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
	else if (h->priority > nxq_node_limit(node, NXQ_LIM_PRIORITY))
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
	bool woke, asked;

	spin_lock(&dev->lock);
	if (!h->detached) {
		asked = h->ticket.open;
		h->detached = true;
		list_del_init(&h->link);
		list_del_init(&h->node_link);
		nxq_event(dev, NXQ_EV_HOLDER_REMOVED, NULL, h, h->charge, 0, 0);
		woke = nxq_waiters_cancel(dev, h);
		if (h->charge)
			nxq_uncharge_locked(h, h->charge);
		h->reclaimable = 0;
		h->ticket.open = false;
		list_del_init(&h->recall_link);
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

/* @v as the size suffixes read it back: "4G", "1536K", "max", bytes. */
static const char *nxq_fmt_bytes(u64 v, char *buf, size_t size)
{
	static const char sfx[] = "KMGTPE";
	int i = -1;

	if (v == NXQ_UNLIMITED)
		return "max";
	while (v && !(v & 1023) && i < 5) {
		v >>= 10;
		i++;
	}
	if (i < 0)
		snprintf(buf, size, "%llu", (unsigned long long)v);
	else
		snprintf(buf, size, "%llu%c", (unsigned long long)v, sfx[i]);
	return buf;
}

/* A node's path through the shell's key_path hook, or "#ID". */
static const char *nxq_node_name(struct nxq_node *node, char *buf,
				 size_t size)
{
	const struct nxq_ledger_ops *ops = node->dev->ledger->ops;

	if (!ops || !ops->key_path || ops->key_path(node->key, buf, size) < 0)
		snprintf(buf, size, "#%llu", (unsigned long long)node->id);
	return buf;
}

/**
 * nxq_refusal_msg() - say why a budget request was refused
 * @node: the node of the request
 * @why: what nxq_node_apply() filled in
 * @buf: the message, NUL-terminated
 * @size: its size
 * @paths: name the nodes (for a log or the daemon's reply); without,
 *	the message fits netlink's 80 bytes of a formatted extended ack
 *
 * One line naming the values and the way out, for the shells to pass on.
 *
 * Context: process context; the nodes are referenced.
 */
void nxq_refusal_msg(struct nxq_node *node,
		     const struct nxq_budget_refusal *why, char *buf,
		     size_t size, bool paths)
{
	char *p = paths ? kmalloc(2 * NXQ_PATH_MSG, GFP_KERNEL) : NULL;
	char v[24], l[24];
	const char *path = "", *apath = "an ancestor", *sep = "";

	if (p) {
		path = nxq_node_name(node, p, NXQ_PATH_MSG);
		apath = nxq_node_name(why->node, p + NXQ_PATH_MSG,
				      NXQ_PATH_MSG);
		sep = ": ";
	}
	nxq_fmt_bytes(why->value, v, sizeof(v));
	nxq_fmt_bytes(why->limit, l, sizeof(l));
	switch (why->why) {
	case NXQ_REFUSE_MIN_ABOVE_MAX:
		snprintf(buf, size, "%s%smin %s is above its max %s", path, sep,
			 v, l);
		break;
	case NXQ_REFUSE_MIN_ABOVE_DEVICE:
		snprintf(buf, size, "%s%smin %s is above the device's capacity %s",
			 path, sep, v, l);
		break;
	case NXQ_REFUSE_CHILDREN:
		snprintf(buf, size,
			 "%s%smin %s is below its children's guarantees, %s (or overcommit)",
			 path, sep, l, v);
		break;
	case NXQ_REFUSE_PARENT:
		snprintf(buf, size,
			 "%s%sguarantees under %s would be %s, above its min %s (or overcommit)",
			 path, sep, apath, v, l);
		break;
	case NXQ_REFUSE_DEVICE:
		snprintf(buf, size,
			 "%s%sguarantees on the device would be %s, above its %s (or overcommit)",
			 path, sep, v, l);
		break;
	case NXQ_REFUSE_BOUND:
		snprintf(buf, size,
			 "%s%sguarantees under %s would be %s, above the most the ledger counts, %s",
			 path, sep, apath, v, l);
		break;
	default:
		snprintf(buf, size, "%s%sbudget refused", path, sep);
	}
	kfree(p);
}
