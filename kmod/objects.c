// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota ledger, layer 4: the ledger, its devices and the lifetimes of
 * budget nodes (see objects.h; their fields and locks in
 * ledger_types.h).  A node's budget is budget.c's, holders are holder.c's;
 * the three share the device lock and each other's lifetimes (a holder
 * pins its node, a node its device).
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
	INIT_DELAYED_WORK(&dev->ev_work, nxq_event_work);
	dev->ev_denied_gap_ns = NXQ_EV_DENIED_GAP_MS * NSEC_PER_MSEC;
	dev->ledger = l;
	strscpy(dev->key, key, sizeof(dev->key));
	spin_lock_init(&dev->lock);
	xa_init(&dev->nodes);
	INIT_LIST_HEAD(&dev->holders);
	INIT_LIST_HEAD(&dev->waiters);
	INIT_LIST_HEAD(&dev->blocked_nodes);
	INIT_LIST_HEAD(&dev->recalls);
	dev->capacity = capacity;
	dev->emin_gen = 1;
	dev->devt = devt;
	/* what the spec's device table says a new device starts with */
	dev->default_max = NXQUOTA_DEFAULT_MAX_DEFAULT;
	atomic64_set(&dev->events_dropped, 0);
	for (i = 0; i < NXQ_EV_TYPES; i++)
		atomic64_set(&dev->events_dropped_type[i], 0);
	dev->ticket_timeout_ms = NXQUOTA_TICKET_TIMEOUT_MS_DEFAULT;

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
 * @ms: milliseconds, within the spec's bounds (the device table's lo and
 *	hi, which nxq_abi_dev_put(), every door's way here, checks)
 *
 * Context: takes the device lock.
 * Return: 0.
 */
int nxq_device_set_ticket_timeout(struct nxq_device *dev, u32 ms)
{
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
	nxq_event_flush(dev, true);
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
