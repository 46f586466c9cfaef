// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota sysfs: a budget node's directory, devices/<KEY>/nodes/<ID>/
 * (the rest of /sys/kernel/nxquota is sysfs.c's; see its header for the
 * objects, locking and access).  Each node's struct nxq_node_kobj is
 * created and deleted by the ledger's node hooks and freed by its kobject
 * release.  Its files name a cgroup and its usage: root's only (0400,
 * 0600 where writable).
 */
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/err.h>

#include "internal.h"
#include "sysfs.h"

/* ---- devices/<KEY>/nodes/<ID>/ ---- */

static ssize_t path_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	struct cgroup *cgrp = to_node(kobj)->key;
	int len;

	len = cgroup_path(cgrp, buf, PAGE_SIZE - 1);
	if (len < 0)
		return len;
	if (len >= PAGE_SIZE - 1)
		return -ENAMETOOLONG;
	len = strlen(buf);
	return len + sysfs_emit_at(buf, len, "\n");
}

static struct kobj_attribute nxq_path_attr = __ATTR(path, 0400, path_show,
						    NULL);

/*
 * A file that shows one field of the node's budget (nxq_node_budget(),
 * under the device lock), "max" for unlimited where @_is_max: its show
 * function and its attribute, @_mode 0400 or 0600 with @_store.  "#_name",
 * not __stringify(): "current" must not expand as the macro.
 */
#define NXQ_NODE_BUDGET(_name, _field, _is_max, _mode, _store)		\
static ssize_t node_##_name##_show(struct kobject *kobj,		\
				   struct kobj_attribute *attr, char *buf) \
{									\
	struct nxq_budget b;						\
									\
	nxq_node_budget(to_node(kobj), &b);				\
	return nxq_emit_u64(buf, b._field, _is_max);			\
}									\
static struct kobj_attribute nxq_node_##_name##_attr = {		\
	.attr = { .name = #_name, .mode = _mode },			\
	.show = node_##_name##_show,					\
	.store = _store,						\
}

#define NXQ_NODE_COUNTER(name)						\
static ssize_t node_##name##_show(struct kobject *kobj,			\
				  struct kobj_attribute *attr, char *buf) \
{									\
	struct nxq_node *node = to_node(kobj);				\
	u64 v;								\
									\
	spin_lock(&node->dev->lock);					\
	v = node->name;							\
	spin_unlock(&node->dev->lock);					\
	return nxq_emit_u64(buf, v, false);				\
}									\
static struct kobj_attribute nxq_node_##name##_attr =			\
	__ATTR(name, 0400, node_##name##_show, NULL)

NXQ_NODE_COUNTER(tickets);
NXQ_NODE_COUNTER(bytes_asked);
NXQ_NODE_COUNTER(bytes_released);
NXQ_NODE_COUNTER(kills);

static ssize_t node_holders_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	/* Informational; the ledger lock guards it, a stale read is fine. */
	return sysfs_emit(buf, "%u\n", data_race(to_node(kobj)->nr_holders));
}

NXQ_NODE_BUDGET(effective_min, effective_min, false, 0400, NULL);
NXQ_NODE_BUDGET(effective_max, effective_max, true, 0400, NULL);
NXQ_NODE_BUDGET(claimed, claimed, false, 0400, NULL);
NXQ_NODE_BUDGET(overcommitted, overcommitted, false, 0400, NULL);
NXQ_NODE_BUDGET(current, current_bytes, false, 0400, NULL);
NXQ_NODE_BUDGET(borrowed, borrowed, false, 0400, NULL);
NXQ_NODE_BUDGET(max_hits, max_hits, false, 0400, NULL);
NXQ_NODE_BUDGET(denials, denials, false, 0400, NULL);
static struct kobj_attribute nxq_node_holders_attr =
	__ATTR(holders, 0400, node_holders_show, NULL);

/*
 * One file per field of the budget table a node keeps (nxq_abi_fields,
 * named as the spec names them), filled in once by nxq_sysfs_node_init():
 * a limit's reads the limit that binds the node (its own, inherited or the
 * default; "max" for none) and is read-only, set_budget sets it; the
 * others read the node's own value (the default without one; "max" for
 * NXQ_UNLIMITED where the field reads "max") and are written as
 * set_budget's word would be, checked as set_budget checks it.
 */
static struct kobj_attribute nxq_node_field_attrs[NXQ_NR_BUDGET_FIELDS];
static struct attribute *nxq_node_field_list[NXQ_NR_BUDGET_FIELDS + 1];

static ssize_t node_field_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	struct nxq_node *node = to_node(kobj);
	enum nxq_budget_field f = attr - nxq_node_field_attrs;
	const struct nxq_abi_field *d = &nxq_abi_fields[f];
	bool has;
	u64 v;

	spin_lock(&node->dev->lock);
	has = nxq_abi_node_field(node, f, &v);
	spin_unlock(&node->dev->lock);
	if (!has)
		v = d->dflt;
	if (d->lim >= 0 && v == U32_MAX)
		return sysfs_emit(buf, "max\n");
	return nxq_emit_u64(buf, v, d->parse == NXQ_PARSE_SIZE_MAX);
}

static ssize_t node_field_store(struct kobject *kobj,
				struct kobj_attribute *attr, const char *buf,
				size_t count)
{
	struct nxq_node *node = to_node(kobj);
	enum nxq_budget_field f = attr - nxq_node_field_attrs;
	struct nxq_budget_refusal why;
	struct nxq_budget_req r = {};
	u64 v;
	int err = nxq_store_field(buf, count, f, &v);

	if (!err)
		err = nxq_abi_req_put(&r, f, v);
	if (err)
		return err;
	/* Checked as set_budget checks it; only the device lock is taken. */
	err = nxq_node_apply(node, &r, &why);
	if (err) {
		nxq_budget_refused(node, &why, NULL, 0);
		return err;
	}
	return count;
}

/**
 * nxq_sysfs_node_init() - the fields' files, from the spec's table
 *
 * Context: module init, before any node exists.
 */
void nxq_sysfs_node_init(void)
{
	struct kobj_attribute *a;
	int f, n = 0;

	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++) {
		if (!nxq_abi_fields[f].kept)
			continue;
		a = &nxq_node_field_attrs[f];
		sysfs_attr_init(&a->attr);
		a->attr.name = nxq_abi_fields[f].name;
		a->show = node_field_show;
		if (nxq_abi_fields[f].lim >= 0) {
			a->attr.mode = 0400;
		} else {
			a->attr.mode = 0600;
			a->store = node_field_store;
		}
		nxq_node_field_list[n++] = &a->attr;
	}
}

static struct attribute *nxq_node_attrs[] = {
	&nxq_path_attr.attr,
	&nxq_node_effective_min_attr.attr,
	&nxq_node_effective_max_attr.attr,
	&nxq_node_claimed_attr.attr,
	&nxq_node_overcommitted_attr.attr,
	&nxq_node_current_attr.attr,
	&nxq_node_borrowed_attr.attr,
	&nxq_node_max_hits_attr.attr,
	&nxq_node_denials_attr.attr,
	&nxq_node_holders_attr.attr,
	&nxq_node_tickets_attr.attr,
	&nxq_node_bytes_asked_attr.attr,
	&nxq_node_bytes_released_attr.attr,
	&nxq_node_kills_attr.attr,
	NULL,
};

static const struct attribute_group nxq_node_group = {
	.attrs = nxq_node_attrs,
};

static const struct attribute_group nxq_node_field_group = {
	.attrs = nxq_node_field_list,
};

static const struct attribute_group *nxq_node_groups[] = {
	&nxq_node_group,
	&nxq_node_field_group,
	NULL,
};

static void nxq_node_kobj_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct nxq_node_kobj, kobj));
}

static const struct kobj_type nxq_node_ktype = {
	.release	= nxq_node_kobj_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= nxq_node_groups,
};

/**
 * nxq_sysfs_node_added() - create nodes/<ID>/
 * @node: the new node; the ledger lock is held
 *
 * Return: 0, -ENOMEM, or kobject_add()'s error.
 */
int nxq_sysfs_node_added(struct nxq_node *node)
{
	struct nxq_dev_kobj *dk = node->dev->priv;
	struct nxq_node_kobj *nk;
	int err;

	if (!dk)
		return 0;
	nk = kzalloc(sizeof(*nk), GFP_KERNEL);
	if (!nk)
		return -ENOMEM;
	nk->node = node;
	err = kobject_init_and_add(&nk->kobj, &nxq_node_ktype, dk->nodes,
				   "%llu", node->id);
	if (err) {
		kobject_put(&nk->kobj);
		return err;
	}
	node->priv = nk;
	return 0;
}

/**
 * nxq_sysfs_node_removed() - delete nodes/<ID>/
 * @node: the node about to be freed; the ledger lock is held
 */
void nxq_sysfs_node_removed(struct nxq_node *node)
{
	struct nxq_node_kobj *nk = node->priv;

	if (!nk)
		return;
	kobject_del(&nk->kobj);
	kobject_put(&nk->kobj);
	node->priv = NULL;
}
