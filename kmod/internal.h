/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota module internals shared by the shells: the one ledger, the
 * cgroup glue, the character device and sysfs.
 */
#ifndef _NXQ_INTERNAL_H
#define _NXQ_INTERNAL_H

#include "ledger.h"

struct cgroup;

/* Deepest cgroup level a holder may be registered from. */
#define NXQ_MAX_DEPTH	64

extern struct nxq_ledger nxq_ledger;

struct nxq_node *nxq_node_for_cgroup(struct nxq_device *dev,
				     struct cgroup *cgrp);
struct cgroup *nxq_current_cgroup(void);
struct cgroup *nxq_cgroup_from_path(const char *path);
int nxq_budget_set(const char *key, const char *path,
		   const struct nxq_budget_req *r, char *msg,
		   size_t msg_size);
/* Room for a refusal's message with its paths. */
#define NXQ_MSG_SIZE	640
void nxq_budget_refused(struct nxq_node *node,
			const struct nxq_budget_refusal *why, char *msg,
			size_t msg_size);
void nxq_cgroup_put(struct cgroup *cgrp);
void nxq_cgroup_key_put(void *key);
bool nxq_cgroup_key_dead(void *key);
int nxq_cgroup_key_path(void *key, char *buf, size_t size);
u32 nxq_cgroup_path_user(u64 id, char __user *ubuf, u32 size);

int nxq_parse_devt(const char *s, dev_t *devt);
int nxq_sysfs_init(void);
void nxq_sysfs_exit(void);
int nxq_sysfs_device_added(struct nxq_device *dev);
void nxq_sysfs_device_removed(struct nxq_device *dev);
void nxq_sysfs_node_init(void);
int nxq_sysfs_node_added(struct nxq_node *node);
void nxq_sysfs_node_removed(struct nxq_node *node);

void nxq_holder_signal(struct nxq_holder *h);
void nxq_holder_kill(struct nxq_holder *h);
int nxq_holder_follow(struct nxq_holder *h);
long nxq_cdev_owners(void);
int nxq_cdev_init(void);
void nxq_cdev_exit(void);

#endif /* _NXQ_INTERNAL_H */
