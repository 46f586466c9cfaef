/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota sysfs: what sysfs.c (the root, devices/, devices/<KEY>/) and
 * sysfs_node.c (devices/<KEY>/nodes/<ID>/) share: the kobject wrappers of
 * devices and nodes, and the helpers of a write of one size or field.
 */
#ifndef _NXQ_SYSFS_H
#define _NXQ_SYSFS_H

#include <linux/kobject.h>
#include <linux/types.h>
#include <linux/nxquota.h>

struct nxq_device;
struct nxq_node;

struct nxq_dev_kobj {
	struct kobject kobj;
	struct kobject *nodes;
	struct nxq_device *dev;
};

struct nxq_node_kobj {
	struct kobject kobj;
	struct nxq_node *node;
};

#define to_dev(k)	(container_of(k, struct nxq_dev_kobj, kobj)->dev)
#define to_node(k)	(container_of(k, struct nxq_node_kobj, kobj)->node)

int nxq_store_field(const char *buf, size_t count, enum nxq_budget_field f,
		    u64 *v);
ssize_t nxq_emit_u64(char *buf, u64 v, bool is_max);

#endif /* _NXQ_SYSFS_H */
