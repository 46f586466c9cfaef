// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota cgroup glue: budget nodes are keyed by cgroup v2 cgroups.
 *
 * A node holds one reference on its struct cgroup (the key) from creation
 * to nxq_cgroup_key_put(); a removed cgroup therefore stays allocated, as
 * an offline cgroup, until its node goes.  The ledger asks
 * nxq_cgroup_key_dead() to drop budgets left on removed cgroups.
 */
#include <linux/cgroup.h>
#include <linux/sched.h>
#include <linux/err.h>

#include "internal.h"
#include "netlink.h"

/**
 * nxq_current_cgroup() - the caller's cgroup on the default hierarchy
 *
 * Return: the cgroup, with a reference the caller drops with
 * nxq_cgroup_put().
 */
struct cgroup *nxq_current_cgroup(void)
{
	struct cgroup *cgrp;

	rcu_read_lock();
	do {
		cgrp = task_dfl_cgroup(current);
	} while (!css_tryget(&cgrp->self));
	rcu_read_unlock();
	return cgrp;
}

/**
 * nxq_cgroup_put() - drop a cgroup reference
 * @cgrp: the cgroup
 */
void nxq_cgroup_put(struct cgroup *cgrp)
{
	cgroup_put(cgrp);
}

/**
 * nxq_node_for_cgroup() - find or create the node chain for a cgroup
 * @dev: the device; the ledger lock is held
 * @cgrp: the cgroup; the caller keeps its reference
 *
 * Creates a node for @cgrp and each of its ancestors that lacks one.
 *
 * Return: @cgrp's node with a reference taken, ERR_PTR(-E2BIG) if @cgrp
 * is nested deeper than NXQ_MAX_DEPTH, or -ENOMEM.
 */
struct nxq_node *nxq_node_for_cgroup(struct nxq_device *dev,
				     struct cgroup *cgrp)
{
	struct nxq_node *node = NULL, *parent = NULL;
	int level;

	lockdep_assert_held(&dev->ledger->lock);
	if (cgrp->level > NXQ_MAX_DEPTH)
		return ERR_PTR(-E2BIG);
	for (level = 0; level <= cgrp->level; level++) {
		struct cgroup *c = cgroup_ancestor(cgrp, level);
		bool exists = nxq_node_find(dev, cgroup_id(c));

		/* A node created here owns a reference on its cgroup. */
		if (!exists)
			cgroup_get(c);
		node = nxq_node_get(dev, parent, cgroup_id(c), c);
		if (IS_ERR(node)) {
			if (!exists)
				cgroup_put(c);
			break;
		}
		if (parent)
			nxq_node_put(parent);
		parent = node;
	}
	if (IS_ERR(node) && parent)
		nxq_node_put(parent);
	return node;
}

static void nxq_cgroup_key_put(void *key)
{
	cgroup_put(key);
}

static bool nxq_cgroup_key_dead(void *key)
{
	struct cgroup *cgrp = key;

	/*
	 * Not css_is_dying(): on some kernels it tests CSS_DYING, which only
	 * subsystem states get.  A cgroup's own state loses CSS_ONLINE in
	 * cgroup_destroy_locked() on every kernel we support.  A racy read:
	 * the flag only ever goes from set to clear, and a stale "alive"
	 * keeps a budget until the next prune.
	 */
	return !(data_race(cgrp->self.flags) & CSS_ONLINE);
}

const struct nxq_ledger_ops nxq_cgroup_ledger_ops = {
	.key_put	= nxq_cgroup_key_put,
	.key_dead	= nxq_cgroup_key_dead,
	.device_added	= nxq_sysfs_device_added,
	.device_removed	= nxq_sysfs_device_removed,
	.node_added	= nxq_sysfs_node_added,
	.node_removed	= nxq_sysfs_node_removed,
	.holder_kill	= nxq_holder_kill,
	.holder_signal	= nxq_holder_signal,
	.event		= nxq_nl_event,
};
