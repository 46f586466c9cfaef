/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger, layer 4: the objects -- the ledger, its devices, their
 * budget nodes and holders: creation, lookup, budgets, lifetimes (see
 * ledger_types.h).  Setting a budget or a capacity serves the queue and
 * asks for what a lowered max takes back, so this layer sits above
 * pressure; it calls nothing of charge.c, its sibling.  objects.c has
 * the ledger, devices and nodes' lifetimes, budget.c nodes' budgets and
 * refusal messages, holder.c holders.
 */
#ifndef _NXQ_OBJECTS_H
#define _NXQ_OBJECTS_H

#include "pressure.h"

void nxq_ledger_init(struct nxq_ledger *l, const struct nxq_ledger_ops *ops);
void nxq_ledger_destroy(struct nxq_ledger *l);

bool nxq_device_key_valid(const char *key);
struct nxq_device *nxq_device_add(struct nxq_ledger *l, const char *key,
				  u64 capacity, dev_t devt);
struct nxq_device *nxq_device_find(struct nxq_ledger *l, const char *key);
int nxq_device_remove(struct nxq_ledger *l, const char *key);
void nxq_device_set_capacity(struct nxq_device *dev, u64 capacity);
void nxq_device_set_default_max(struct nxq_device *dev, u64 max);
int nxq_device_set_ticket_timeout(struct nxq_device *dev, u32 ms);
void nxq_device_prune(struct nxq_device *dev);

struct nxq_node *nxq_node_get(struct nxq_device *dev, struct nxq_node *parent,
			      u64 id, void *key);
struct nxq_node *nxq_node_find(struct nxq_device *dev, u64 id);
void nxq_node_put(struct nxq_node *node);
void nxq_node_prune(struct nxq_node *node);
void nxq_node_set_max(struct nxq_node *node, u64 max);
void nxq_node_set_min(struct nxq_node *node, u64 min);
void nxq_node_set_kill_on_ignore(struct nxq_node *node, bool on);
void nxq_node_clear_budget(struct nxq_node *node);
int nxq_node_check(struct nxq_node *node, const struct nxq_budget_req *r,
		   struct nxq_budget_refusal *why);
int nxq_node_apply(struct nxq_node *node, const struct nxq_budget_req *r,
		   struct nxq_budget_refusal *why);
/* Longest node path nxq_refusal_msg() prints, NUL included. */
#define NXQ_PATH_MSG	256
void nxq_refusal_msg(struct nxq_node *node,
		     const struct nxq_budget_refusal *why, char *buf,
		     size_t size, bool paths);

struct nxq_holder *nxq_holder_create(struct nxq_node *node, u32 priority,
				     void *priv, struct pid *owner, u32 tgid,
				     int *err);
int nxq_holder_rehome(struct nxq_holder *h, struct nxq_node *node);
void nxq_holder_detach(struct nxq_holder *h);
void nxq_holder_put(struct nxq_holder *h,
		    void (*free_priv)(struct nxq_holder *h));
void nxq_holder_end(struct nxq_holder *h,
		    void (*free_priv)(struct nxq_holder *h));

#endif /* _NXQ_OBJECTS_H */
