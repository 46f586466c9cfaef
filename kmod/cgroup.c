// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota cgroup glue: budget nodes are keyed by cgroup v2 cgroups.
 *
 * A node holds one reference on its struct cgroup (the key) from creation
 * to nxq_cgroup_key_put(); a removed cgroup therefore stays allocated, as
 * an offline cgroup, until its node goes.  The ledger asks
 * nxq_cgroup_key_dead() to drop budgets left on removed cgroups.
 *
 * Budget paths come from root through sysfs or netlink and are resolved
 * by the kernel's cgroup_get_from_path(), relative to the writer's cgroup
 * namespace root.  A cgroup found by path may still be being created:
 * its directory is linked before its level and ancestors are filled in.
 * nxq_cgroup_from_path() therefore looks it up again by id, which finds
 * only cgroups whose kernfs node was activated, the last step of mkdir.
 */
#include <linux/cgroup.h>
#include <linux/sched.h>
#include <linux/err.h>
#include <linux/kernfs.h>
#include <linux/limits.h>
#include <linux/nsproxy.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

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
 * nxq_cgroup_from_path() - a fully created cgroup by path
 * @path: absolute, relative to the caller's cgroup namespace root
 *
 * Context: process context; sleeps.
 * Return: the cgroup with a reference, ERR_PTR(-ENOENT) if there is none
 * (or it is not yet, or no longer, online), -ENOMEM.
 */
struct cgroup *nxq_cgroup_from_path(const char *path)
{
	struct kernfs_node *kn;
	struct cgroup *cgrp;
	u64 id;

	cgrp = cgroup_get_from_path(path);
	if (IS_ERR(cgrp))	/* a file (ENOTDIR) is no cgroup either */
		return ERR_PTR(PTR_ERR(cgrp) == -ENOMEM ? -ENOMEM : -ENOENT);
	/* Set once, after the directory is linked: it may not be yet. */
	kn = READ_ONCE(cgrp->kn);
	id = kn ? kn->id : 0;
	cgroup_put(cgrp);
	if (!id)
		return ERR_PTR(-ENOENT);
	cgrp = cgroup_get_from_id(id);
	if (IS_ERR(cgrp))
		return ERR_PTR(PTR_ERR(cgrp) == -ENOMEM ? -ENOMEM : -ENOENT);
	/* Racy, as in nxq_cgroup_key_dead(): online only ever goes away. */
	if (!(data_race(cgrp->self.flags) & CSS_ONLINE)) {
		cgroup_put(cgrp);
		return ERR_PTR(-ENOENT);
	}
	return cgrp;
}

/**
 * nxq_budget_refused() - report a refused budget request
 * @node: its node
 * @why: nxq_node_apply()'s reason
 * @msg: set to the reason without paths (for netlink's extended ack), or
 *	NULL
 * @msg_size: its size
 *
 * The reason with the cgroups' paths goes to the kernel log (sysfs can
 * only return an errno; root's writes only, rate-limited).
 *
 * Context: process context; @node is referenced.
 */
void nxq_budget_refused(struct nxq_node *node,
			const struct nxq_budget_refusal *why, char *msg,
			size_t msg_size)
{
	char *line = kmalloc(NXQ_MSG_SIZE, GFP_KERNEL);

	if (line) {
		nxq_refusal_msg(node, why, line, NXQ_MSG_SIZE, true);
		pr_info_ratelimited("nxquota: %s: %s\n", node->dev->key, line);
		kfree(line);
	}
	if (msg && msg_size)
		nxq_refusal_msg(node, why, msg, msg_size, false);
}

/**
 * nxq_budget_set() - the one budget-setting function (sysfs, netlink)
 * @key: the device's key
 * @path: the cgroup's path, as nxq_cgroup_from_path() takes it
 * @r: what to set, or NULL to clear the cgroup's budget
 * @msg: set to why a budget was refused, without paths (see
 *	nxq_budget_refused()), else ""; may be NULL
 * @msg_size: its size
 *
 * Context: process context; takes the ledger lock.
 * Return: 0, -ENODEV (no device), -ENOENT (no such cgroup), -E2BIG (too
 * deep), -ENOMEM, or a refusal: -EINVAL (min above max), -ENOSPC (no
 * room for the guarantee).
 */
int nxq_budget_set(const char *key, const char *path,
		   const struct nxq_budget_req *r, char *msg,
		   size_t msg_size)
{
	struct nxq_budget_refusal why;
	struct nxq_device *dev;
	struct nxq_node *node;
	struct cgroup *cgrp;
	int err = 0;

	if (msg && msg_size)
		msg[0] = '\0';
	cgrp = nxq_cgroup_from_path(path);
	if (IS_ERR(cgrp))
		return PTR_ERR(cgrp);
	mutex_lock(&nxq_ledger.lock);
	dev = nxq_device_find(&nxq_ledger, key);
	if (!dev) {
		err = -ENODEV;
		goto out;
	}
	nxq_device_prune(dev);
	if (r) {
		node = nxq_node_for_cgroup(dev, cgrp);
		if (IS_ERR(node)) {
			err = PTR_ERR(node);
			goto out;
		}
		err = nxq_node_apply(node, r, &why);
		if (err)
			nxq_budget_refused(node, &why, msg, msg_size);
		nxq_node_put(node);
	} else {
		node = nxq_node_find(dev, cgroup_id(cgrp));
		if (node)
			nxq_node_clear_budget(node);
	}
out:
	mutex_unlock(&nxq_ledger.lock);
	cgroup_put(cgrp);
	return err;
}

/**
 * nxq_node_for_cgroup() - find or create the node chain for a cgroup
 * @dev: the device; the ledger lock is held
 * @cgrp: the cgroup; the caller keeps its reference
 *
 * Creates a node for @cgrp and each of its ancestors that lacks one.
 *
 * @cgrp must be fully created (a task's cgroup, or one from
 * nxq_cgroup_from_path()); an ancestor found missing all the same gives
 * -ENOENT rather than a NULL dereference.
 *
 * Context: the ledger lock is held.
 * Return: @cgrp's node with a reference taken, ERR_PTR(-E2BIG) if @cgrp
 * is nested deeper than NXQ_MAX_DEPTH, -ENOENT, or -ENOMEM.
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
		bool exists;

		if (!c || !c->kn) {
			node = ERR_PTR(-ENOENT);
			break;
		}
		exists = nxq_node_find(dev, cgroup_id(c));

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

/**
 * nxq_cgroup_key_put() - the ledger's key_put hook: a node's cgroup goes
 * @key: the struct cgroup a node held a reference on
 */
void nxq_cgroup_key_put(void *key)
{
	cgroup_put(key);
}

/**
 * nxq_cgroup_key_path() - the ledger's key_path hook: a node's cgroup path
 * @key: the node's struct cgroup
 * @buf: where the path goes, NUL-terminated
 * @size: its size
 *
 * Return: the path's length, or a negative errno (cgroup_path()'s).
 */
int nxq_cgroup_key_path(void *key, char *buf, size_t size)
{
	return cgroup_path(key, buf, size);
}

/**
 * nxq_cgroup_path_user() - write a cgroup's path, as the caller sees it
 * @id: the cgroup's id
 * @ubuf: the caller's buffer
 * @size: its size
 *
 * The path relative to the caller's cgroup namespace, as
 * /proc/self/cgroup shows it, NUL-terminated.  A cgroup above the
 * namespace's root (a container's parent) is not named: newer kernels'
 * cgroup_get_from_id() does not find it, and a path that climbs ("/..")
 * is not written on any.  Refusal path only: cgroup_path_ns() takes
 * cgroup_mutex, as a netlink dump's paths do.
 *
 * Context: process context; sleeps.
 * Return: the path's length, 0 with nothing written when the cgroup is
 * gone or outside the namespace, the path does not fit, or the copy
 * faults.
 */
u32 nxq_cgroup_path_user(u64 id, char __user *ubuf, u32 size)
{
	struct cgroup *cgrp;
	char *buf;
	int len = -ENOENT;

	cgrp = cgroup_get_from_id(id);
	if (IS_ERR(cgrp))
		return 0;
	/*
	 * Whole, then measured: kernels differ in what a truncated
	 * cgroup_path_ns() returns (the full length, or the cut one).
	 */
	buf = kmalloc(PATH_MAX, GFP_KERNEL);
	if (buf)
		len = cgroup_path_ns(cgrp, buf, PATH_MAX,
				     current->nsproxy->cgroup_ns);
	cgroup_put(cgrp);
	if (len < 0 || len >= PATH_MAX - 1 || (u32)len >= size)
		len = 0;
	else if (!strncmp(buf, "/..", 3) && (!buf[3] || buf[3] == '/'))
		len = 0;	/* above the namespace's root */
	else if (copy_to_user(ubuf, buf, len + 1))
		len = 0;
	kfree(buf);
	return len;
}

/**
 * nxq_cgroup_key_dead() - the ledger's key_dead hook: is a node's cgroup
 * removed?
 * @key: the node's struct cgroup
 *
 * Return: true once the cgroup is offline.
 */
bool nxq_cgroup_key_dead(void *key)
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
