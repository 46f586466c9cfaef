// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota generic netlink: the family "nxquota", specified by
 * Documentation/netlink/specs/nxquota.yaml and described in
 * Documentation/userspace-api/nxquota-netlink.rst.
 *
 * Objects and lifetimes:
 *  - nxq_nl_family: registered by nxq_nl_init(), unregistered by
 *    nxq_nl_exit().  genl_unregister_family() waits for running do
 *    handlers; a dump in progress pins the module.
 *  - struct nxq_nl_scope: one per budget or holder dump in progress,
 *    allocated by the dump's start callback, freed by its done callback.
 *    It holds references on the caller's cgroup (non-admin callers only),
 *    pid namespace and cgroup namespace, all taken at start, when current
 *    is the process that asked: later parts of a dump may run in whatever
 *    process reads the socket.
 *
 * Locking: handlers take the ledger lock (mutex) for the device list and
 * each device's node xarray, and the device's spinlock inside it for the
 * counters and the holder list, never the other way round.  cgroup paths
 * are formatted with only the ledger lock held (cgroup_path_ns() takes
 * css_set_lock with interrupts off).  nxq_nl_event() runs from a device's
 * event work with no ledger lock held: it builds the message with
 * GFP_KERNEL and multicasts under rcu_read_lock(); nxq_nl_exit() clears
 * nxq_nl_live and waits for a grace period before unregistering, so no
 * event is sent through an unregistered family.
 *
 * Consistency: nxq_nl_gen counts the changes this file sees (every ledger
 * event and its own administration).  Each dump message carries it as the
 * dump's sequence, so a dump that spans such a change is flagged
 * NLM_F_DUMP_INTR and the reader starts again.
 *
 * Permissions: administration needs CAP_SYS_ADMIN in the initial user
 * namespace (nxq_nl_admin(), the same rule as sysfs), as does joining the
 * events group.  Without it a dump shows every device but only the budget
 * nodes and holders of the caller's own cgroup subtree, with pids and
 * paths as the caller's namespaces see them.  Budget paths given to
 * budget-set and budget-clear resolve relative to the caller's cgroup
 * namespace root, as in sysfs.
 *
 * Events that cannot be allocated, or that a listener's full socket
 * refuses, are counted in the device's events_dropped.
 */
#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/err.h>
#include <linux/kdev_t.h>
#include <linux/ktime.h>
#include <linux/limits.h>
#include <linux/netlink.h>
#include <linux/nsproxy.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "compat.h"
#include "internal.h"
#include "netlink.h"

#define NXQ_NL_KEY_LEN		(NXQ_DEVICE_KEY_MAX - 1)
#define NXQ_NL_PATH_LEN		(PATH_MAX - 1)

static atomic_t nxq_nl_gen = ATOMIC_INIT(1);
static bool nxq_nl_live;	/* WRITE_ONCE under init/exit, READ_ONCE + RCU */

static struct genl_family nxq_nl_family;

enum nxq_nl_mcgrp {
	NXQ_NL_MCGRP_EVENTS,
};

/**
 * nxq_nl_changed() - the ledger's changed hook: mark dumps in progress
 *
 * Context: any; an atomic increment.
 */
void nxq_nl_changed(void)
{
	atomic_inc(&nxq_nl_gen);
}

/* The administration rule, the same as sysfs's. */
static int nxq_nl_admin(struct sk_buff *skb, struct genl_info *info)
{
	if (netlink_capable(skb, CAP_SYS_ADMIN))
		return 0;
	GENL_SET_ERR_MSG(info, "needs CAP_SYS_ADMIN");
	return -EPERM;
}

/* ---- dump scope ---- */

struct nxq_nl_scope {
	struct cgroup *cgrp;		/* NULL: the caller sees everything */
	struct pid_namespace *pid_ns;
	struct cgroup_namespace *cgroup_ns;
	char device[NXQ_DEVICE_KEY_MAX];	/* filter; "" for every device */
	char *path;			/* PATH_MAX bytes of scratch */
};

/* cb->args[]: the scope, then where the next part of the dump resumes. */
enum {
	NXQ_NL_ARG_SCOPE,
	NXQ_NL_ARG_DEV,		/* index in the device list */
	NXQ_NL_ARG_POS,		/* node id, or index in the holder list */
};

static struct nxq_nl_scope *nxq_nl_scope(struct netlink_callback *cb)
{
	return (struct nxq_nl_scope *)cb->args[NXQ_NL_ARG_SCOPE];
}

static void nxq_nl_scope_free(struct nxq_nl_scope *s)
{
	if (s->cgrp)
		nxq_cgroup_put(s->cgrp);
	if (s->pid_ns)
		put_pid_ns(s->pid_ns);
	if (s->cgroup_ns)
		put_cgroup_ns(s->cgroup_ns);
	kfree(s->path);
	kfree(s);
}

/* A node key (a cgroup) is visible to @s if its cgroup is at or below. */
static bool nxq_nl_visible(const struct nxq_nl_scope *s, void *key)
{
	return !s->cgrp || cgroup_is_descendant(key, s->cgrp);
}

/*
 * Start a budget or holder dump: parse the optional device filter (the
 * core has validated the request against @policy already) and capture
 * who is asking.
 */
static int nxq_nl_dump_start(struct netlink_callback *cb,
			     const struct nla_policy *policy,
			     unsigned int dev_attr)
{
	struct nlattr *tb[NXQUOTA_A_BUDGET_DEVICE + 1];
	struct nxq_nl_scope *s;
	int err;

	BUILD_BUG_ON((int)NXQUOTA_A_BUDGET_DEVICE != (int)NXQUOTA_A_HOLDER_DEVICE);
	err = nlmsg_parse(cb->nlh, GENL_HDRLEN, tb, dev_attr, policy,
			  cb->extack);
	if (err)
		return err;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->path = kmalloc(PATH_MAX, GFP_KERNEL);
	if (!s->path) {
		kfree(s);
		return -ENOMEM;
	}
	if (tb[dev_attr]) {
		nla_strscpy(s->device, tb[dev_attr], sizeof(s->device));
		mutex_lock(&nxq_ledger.lock);
		err = nxq_device_find(&nxq_ledger, s->device) ? 0 : -ENODEV;
		mutex_unlock(&nxq_ledger.lock);
		if (err) {
			NL_SET_ERR_MSG_ATTR(cb->extack, tb[dev_attr],
					    "no such device");
			kfree(s->path);
			kfree(s);
			return err;
		}
	}
	if (!netlink_capable(cb->skb, CAP_SYS_ADMIN))
		s->cgrp = nxq_current_cgroup();
	s->pid_ns = get_pid_ns(task_active_pid_ns(current));
	s->cgroup_ns = current->nsproxy->cgroup_ns;
	get_cgroup_ns(s->cgroup_ns);
	cb->args[NXQ_NL_ARG_SCOPE] = (long)s;
	return 0;
}

static int nxq_nl_dump_done(struct netlink_callback *cb)
{
	struct nxq_nl_scope *s = nxq_nl_scope(cb);

	if (s)
		nxq_nl_scope_free(s);
	return 0;
}

/* The value a dumpit returns after filling @skb, or failing with @err. */
static int nxq_nl_dump_ret(struct sk_buff *skb, int err)
{
	if (err && !skb->len)
		return err;	/* one record does not fit an empty buffer */
	return skb->len;
}

static void *nxq_nl_dump_hdr(struct sk_buff *skb, struct netlink_callback *cb,
			     u8 cmd)
{
	void *hdr;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &nxq_nl_family, NLM_F_MULTI, cmd);
	if (hdr)
		genl_dump_check_consistent(cb, hdr);
	return hdr;
}

/* ---- devices ---- */

struct nxq_nl_dev_counters {
	u64 capacity, used, denials, capacity_hits, tickets, bytes_asked;
	u64 bytes_released, kills, waits, timeouts, default_max, dropped;
	u32 ticket_timeout_ms, holders, waiters;
};

static int nxq_nl_put_device(struct sk_buff *skb, struct netlink_callback *cb,
			     struct nxq_device *dev)
{
	struct nxq_nl_dev_counters c;
	char devt[32];
	void *hdr;

	lockdep_assert_held(&nxq_ledger.lock);
	spin_lock(&dev->lock);
	c.capacity = dev->capacity;
	c.used = dev->used;
	c.denials = dev->denials;
	c.capacity_hits = dev->capacity_hits;
	c.tickets = dev->tickets;
	c.bytes_asked = dev->bytes_asked;
	c.bytes_released = dev->bytes_released;
	c.kills = dev->kills;
	c.waits = dev->waits;
	c.timeouts = dev->timeouts;
	c.ticket_timeout_ms = dev->ticket_timeout_ms;
	c.default_max = dev->default_max;
	c.waiters = dev->nr_waiters;
	spin_unlock(&dev->lock);
	c.holders = dev->nr_holders;
	c.dropped = atomic64_read(&dev->events_dropped);
	snprintf(devt, sizeof(devt), "%u:%u", MAJOR(dev->devt),
		 MINOR(dev->devt));

	hdr = nxq_nl_dump_hdr(skb, cb, NXQUOTA_CMD_DEVICE_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_string(skb, NXQUOTA_A_DEVICE_KEY, dev->key) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_DEVICE_CAPACITY, c.capacity,
			      NXQUOTA_A_DEVICE_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_DEVICE_USED, c.used,
			      NXQUOTA_A_DEVICE_PAD) ||
	    nla_put_u32(skb, NXQUOTA_A_DEVICE_HOLDERS, c.holders) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_DEVICE_DENIALS, c.denials,
			      NXQUOTA_A_DEVICE_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_DEVICE_CAPACITY_HITS,
			      c.capacity_hits, NXQUOTA_A_DEVICE_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_DEVICE_TICKETS, c.tickets,
			      NXQUOTA_A_DEVICE_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_DEVICE_BYTES_ASKED,
			      c.bytes_asked, NXQUOTA_A_DEVICE_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_DEVICE_BYTES_RELEASED,
			      c.bytes_released, NXQUOTA_A_DEVICE_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_DEVICE_KILLS, c.kills,
			      NXQUOTA_A_DEVICE_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_DEVICE_WAITS, c.waits,
			      NXQUOTA_A_DEVICE_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_DEVICE_TIMEOUTS, c.timeouts,
			      NXQUOTA_A_DEVICE_PAD) ||
	    nla_put_u32(skb, NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS,
			c.ticket_timeout_ms) ||
	    (dev->devt &&
	     nla_put_string(skb, NXQUOTA_A_DEVICE_DEVT, devt)) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_DEVICE_DEFAULT_MAX,
			      c.default_max, NXQUOTA_A_DEVICE_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_DEVICE_EVENTS_DROPPED,
			      c.dropped, NXQUOTA_A_DEVICE_PAD) ||
	    nla_put_u32(skb, NXQUOTA_A_DEVICE_WAITERS, c.waiters)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static int nxq_nl_device_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb)
{
	long pos = 0, start = cb->args[NXQ_NL_ARG_DEV];
	struct nxq_device *dev;
	int err = 0;

	mutex_lock(&nxq_ledger.lock);
	cb->seq = atomic_read(&nxq_nl_gen);
	list_for_each_entry(dev, &nxq_ledger.devices, link) {
		if (pos < start) {
			pos++;
			continue;
		}
		err = nxq_nl_put_device(skb, cb, dev);
		if (err)
			break;
		pos++;
	}
	mutex_unlock(&nxq_ledger.lock);
	cb->args[NXQ_NL_ARG_DEV] = pos;
	return nxq_nl_dump_ret(skb, err);
}

static int nxq_nl_device_add_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *key = info->attrs[NXQUOTA_A_DEVICE_KEY];
	struct nlattr *devt_attr = info->attrs[NXQUOTA_A_DEVICE_DEVT];
	struct nxq_device *dev;
	dev_t devt = 0;
	int err;

	err = nxq_nl_admin(skb, info);
	if (err)
		return err;
	if (GENL_REQ_ATTR_CHECK(info, NXQUOTA_A_DEVICE_KEY) ||
	    GENL_REQ_ATTR_CHECK(info, NXQUOTA_A_DEVICE_CAPACITY))
		return -EINVAL;
	if (!nxq_device_key_valid(nla_data(key))) {
		NL_SET_ERR_MSG_ATTR(info->extack, key,
				    "a key is 1-63 characters of [A-Za-z0-9._:-]");
		return -EINVAL;
	}
	if (devt_attr && nxq_parse_devt(nla_data(devt_attr), &devt)) {
		NL_SET_ERR_MSG_ATTR(info->extack, devt_attr,
				    "a dev_t is MAJOR:MINOR, not 0:0");
		return -EINVAL;
	}
	dev = nxq_device_add(&nxq_ledger, nla_data(key),
			     nla_get_u64(info->attrs[NXQUOTA_A_DEVICE_CAPACITY]),
			     devt);
	if (IS_ERR(dev)) {
		if (PTR_ERR(dev) == -EEXIST)
			NL_SET_ERR_MSG_ATTR(info->extack, key,
					    "device already registered");
		return PTR_ERR(dev);
	}
	nxq_nl_changed();
	return 0;
}

static int nxq_nl_device_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *key = info->attrs[NXQUOTA_A_DEVICE_KEY];
	int err;

	err = nxq_nl_admin(skb, info);
	if (err)
		return err;
	if (GENL_REQ_ATTR_CHECK(info, NXQUOTA_A_DEVICE_KEY))
		return -EINVAL;
	err = nxq_device_remove(&nxq_ledger, nla_data(key));
	if (err == -ENOENT) {
		NL_SET_ERR_MSG_ATTR(info->extack, key, "no such device");
		return -ENODEV;
	}
	if (err == -EBUSY)
		NL_SET_ERR_MSG_ATTR(info->extack, key,
				    "holders are registered on the device");
	if (!err)
		nxq_nl_changed();
	return err;
}

static int nxq_nl_device_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *key = info->attrs[NXQUOTA_A_DEVICE_KEY];
	struct nlattr **a = info->attrs;
	struct nxq_device *dev;
	int err;

	err = nxq_nl_admin(skb, info);
	if (err)
		return err;
	if (GENL_REQ_ATTR_CHECK(info, NXQUOTA_A_DEVICE_KEY))
		return -EINVAL;
	if (!a[NXQUOTA_A_DEVICE_CAPACITY] && !a[NXQUOTA_A_DEVICE_DEFAULT_MAX] &&
	    !a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS]) {
		GENL_SET_ERR_MSG(info, "nothing to set: give capacity, default-max or ticket-timeout-ms");
		return -EINVAL;
	}
	if (a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS]) {
		u32 ms = nla_get_u32(a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS]);

		if (!ms || ms > 3600 * 1000) {
			NL_SET_ERR_MSG_ATTR(info->extack,
					    a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS],
					    "1 to 3600000 ms");
			return -EINVAL;
		}
	}
	mutex_lock(&nxq_ledger.lock);
	dev = nxq_device_find(&nxq_ledger, nla_data(key));
	if (dev) {
		if (a[NXQUOTA_A_DEVICE_CAPACITY])
			nxq_device_set_capacity(dev,
				nla_get_u64(a[NXQUOTA_A_DEVICE_CAPACITY]));
		if (a[NXQUOTA_A_DEVICE_DEFAULT_MAX])
			nxq_device_set_default_max(dev,
				nla_get_u64(a[NXQUOTA_A_DEVICE_DEFAULT_MAX]));
		if (a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS])
			nxq_device_set_ticket_timeout(dev,
				nla_get_u32(a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS]));
	} else {
		err = -ENODEV;
	}
	mutex_unlock(&nxq_ledger.lock);
	if (err)
		NL_SET_ERR_MSG_ATTR(info->extack, key, "no such device");
	else
		nxq_nl_changed();
	return err;
}

/* ---- budget nodes ---- */

struct nxq_nl_node_counters {
	u64 tickets, bytes_asked, bytes_released, kills;
	bool kill_on_ignore;
	u32 lim[NXQ_NR_LIMITS];
};

static int nxq_nl_put_budget(struct sk_buff *skb, struct netlink_callback *cb,
			     struct nxq_nl_scope *s, struct nxq_node *node)
{
	struct nxq_nl_node_counters c;
	struct nxq_budget b;
	int path_len, i;
	void *hdr;

	lockdep_assert_held(&nxq_ledger.lock);
	nxq_node_budget(node, &b);
	spin_lock(&node->dev->lock);
	c.tickets = node->tickets;
	c.bytes_asked = node->bytes_asked;
	c.bytes_released = node->bytes_released;
	c.kills = node->kills;
	c.kill_on_ignore = node->kill_on_ignore;
	for (i = 0; i < NXQ_NR_LIMITS; i++)
		c.lim[i] = nxq_node_limit(node, i);
	spin_unlock(&node->dev->lock);
	path_len = cgroup_path_ns(node->key, s->path, PATH_MAX, s->cgroup_ns);

	hdr = nxq_nl_dump_hdr(skb, cb, NXQUOTA_CMD_BUDGET_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_string(skb, NXQUOTA_A_BUDGET_DEVICE, node->dev->key) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_CGROUP_ID, node->id,
			      NXQUOTA_A_BUDGET_PAD) ||
	    (path_len >= 0 && path_len < PATH_MAX &&
	     nla_put_string(skb, NXQUOTA_A_BUDGET_CGROUP_PATH, s->path)) ||
	    (node->parent &&
	     nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_PARENT_ID,
			       node->parent->id, NXQUOTA_A_BUDGET_PAD)) ||
	    (b.max_set &&
	     nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_MAX, b.max,
			       NXQUOTA_A_BUDGET_PAD)) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_EFFECTIVE_MAX,
			      b.effective_max, NXQUOTA_A_BUDGET_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_MIN, b.min,
			      NXQUOTA_A_BUDGET_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_CLAIMED, b.claimed,
			      NXQUOTA_A_BUDGET_PAD) ||
	    nla_put_u8(skb, NXQUOTA_A_BUDGET_OVERCOMMITTED, b.overcommitted) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_EFFECTIVE_MIN,
			      b.effective_min, NXQUOTA_A_BUDGET_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_CURRENT, b.current_bytes,
			      NXQUOTA_A_BUDGET_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_BORROWED, b.borrowed,
			      NXQUOTA_A_BUDGET_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_HEADROOM, b.headroom,
			      NXQUOTA_A_BUDGET_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_MAX_HITS, b.max_hits,
			      NXQUOTA_A_BUDGET_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_DENIALS, b.denials,
			      NXQUOTA_A_BUDGET_PAD) ||
	    nla_put_u32(skb, NXQUOTA_A_BUDGET_HOLDERS, node->nr_holders) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_TICKETS, c.tickets,
			      NXQUOTA_A_BUDGET_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_BYTES_ASKED,
			      c.bytes_asked, NXQUOTA_A_BUDGET_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_BYTES_RELEASED,
			      c.bytes_released, NXQUOTA_A_BUDGET_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_BUDGET_KILLS, c.kills,
			      NXQUOTA_A_BUDGET_PAD) ||
	    nla_put_u8(skb, NXQUOTA_A_BUDGET_KILL_ON_IGNORE,
		       c.kill_on_ignore) ||
	    nla_put_u32(skb, NXQUOTA_A_BUDGET_HOLDERS_MAX,
			c.lim[NXQ_LIM_HOLDERS]) ||
	    nla_put_u32(skb, NXQUOTA_A_BUDGET_WAITERS_MAX,
			c.lim[NXQ_LIM_WAITERS]) ||
	    nla_put_u32(skb, NXQUOTA_A_BUDGET_PRIORITY_MAX,
			c.lim[NXQ_LIM_PRIORITY]) ||
	    nla_put_u32(skb, NXQUOTA_A_BUDGET_WAIT_MAX_MS,
			c.lim[NXQ_LIM_WAIT_MS])) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static const struct nla_policy nxq_nl_budget_get_policy[] = {
	[NXQUOTA_A_BUDGET_DEVICE] = { .type = NLA_NUL_STRING,
				      .len = NXQ_NL_KEY_LEN },
};

static int nxq_nl_budget_start(struct netlink_callback *cb)
{
	struct nxq_device *dev;
	int err;

	err = nxq_nl_dump_start(cb, nxq_nl_budget_get_policy,
				NXQUOTA_A_BUDGET_DEVICE);
	if (err)
		return err;
	/*
	 * A budget whose cgroup was removed goes with it: drop those before
	 * showing the budgets (the dump walks every node anyway).
	 */
	mutex_lock(&nxq_ledger.lock);
	list_for_each_entry(dev, &nxq_ledger.devices, link)
		nxq_device_prune(dev);
	mutex_unlock(&nxq_ledger.lock);
	return 0;
}

static int nxq_nl_budget_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb)
{
	struct nxq_nl_scope *s = nxq_nl_scope(cb);
	long pos = 0, start = cb->args[NXQ_NL_ARG_DEV];
	unsigned long id = cb->args[NXQ_NL_ARG_POS];
	struct nxq_device *dev;
	struct nxq_node *node;
	int err = 0;

	mutex_lock(&nxq_ledger.lock);
	cb->seq = atomic_read(&nxq_nl_gen);
	list_for_each_entry(dev, &nxq_ledger.devices, link) {
		if (pos < start || (s->device[0] && strcmp(s->device, dev->key))) {
			pos++;
			continue;
		}
		xa_for_each_start(&dev->nodes, id, node, id) {
			if (!nxq_nl_visible(s, node->key))
				continue;
			err = nxq_nl_put_budget(skb, cb, s, node);
			if (err)
				break;
		}
		if (err)
			break;
		id = 0;
		pos++;
	}
	mutex_unlock(&nxq_ledger.lock);
	cb->args[NXQ_NL_ARG_DEV] = pos;
	cb->args[NXQ_NL_ARG_POS] = id;
	return nxq_nl_dump_ret(skb, err);
}

static const unsigned int nxq_nl_limit_attr[NXQ_NR_LIMITS] = {
	[NXQ_LIM_HOLDERS]	= NXQUOTA_A_BUDGET_HOLDERS_MAX,
	[NXQ_LIM_WAITERS]	= NXQUOTA_A_BUDGET_WAITERS_MAX,
	[NXQ_LIM_PRIORITY]	= NXQUOTA_A_BUDGET_PRIORITY_MAX,
	[NXQ_LIM_WAIT_MS]	= NXQUOTA_A_BUDGET_WAIT_MAX_MS,
};

/* Set (@r) or clear (NULL) a budget through nxq_budget_set(). */
static int nxq_nl_budget(struct sk_buff *skb, struct genl_info *info,
			 const struct nxq_budget_req *r)
{
	struct nlattr *key = info->attrs[NXQUOTA_A_BUDGET_DEVICE];
	struct nlattr *path = info->attrs[NXQUOTA_A_BUDGET_CGROUP_PATH];
	char msg[NXQ_NL_MSG];
	int err;

	err = nxq_nl_admin(skb, info);
	if (err)
		return err;
	if (GENL_REQ_ATTR_CHECK(info, NXQUOTA_A_BUDGET_DEVICE) ||
	    GENL_REQ_ATTR_CHECK(info, NXQUOTA_A_BUDGET_CGROUP_PATH))
		return -EINVAL;
	if (*(char *)nla_data(path) != '/') {
		NL_SET_ERR_MSG_ATTR(info->extack, path,
				    "a cgroup path starts with /");
		return -EINVAL;
	}
	err = nxq_budget_set(nla_data(key), nla_data(path), r, msg,
			     sizeof(msg));
	if (err == -ENOENT)
		NL_SET_ERR_MSG_ATTR(info->extack, path, "no such cgroup");
	else if (err == -ENODEV)
		NL_SET_ERR_MSG_ATTR(info->extack, key, "no such device");
	else if (err == -EINVAL && msg[0])
		nxq_nl_set_err_msg(info->extack, msg, "min is above max");
	else if (err == -ENOSPC && msg[0])
		nxq_nl_set_err_msg(info->extack, msg,
				   "no room for this guarantee under its ancestors or on the device (or overcommit)");
	if (!err)
		nxq_nl_changed();
	return err;
}

static int nxq_nl_budget_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **a = info->attrs;
	struct nxq_budget_req r = {};
	int i;

	if (a[NXQUOTA_A_BUDGET_MAX]) {
		r.set_max = true;
		r.max = nla_get_u64(a[NXQUOTA_A_BUDGET_MAX]);
	}
	if (a[NXQUOTA_A_BUDGET_MIN]) {
		r.set_min = true;
		r.min = nla_get_u64(a[NXQUOTA_A_BUDGET_MIN]);
	}
	r.overcommit = nla_get_flag(a[NXQUOTA_A_BUDGET_OVERCOMMIT]);
	if (a[NXQUOTA_A_BUDGET_KILL_ON_IGNORE]) {
		r.set_kill = true;
		r.kill_on_ignore = nla_get_u8(a[NXQUOTA_A_BUDGET_KILL_ON_IGNORE]);
	}
	for (i = 0; i < NXQ_NR_LIMITS; i++) {
		struct nlattr *la = a[nxq_nl_limit_attr[i]];

		if (!la)
			continue;
		r.lim[i] = nla_get_u32(la);
		if (!nxq_limit_valid(i, r.lim[i])) {
			NL_SET_ERR_MSG_ATTR(info->extack, la, "out of range");
			return -EINVAL;
		}
		r.set_lim |= BIT(i);
	}
	if (!r.set_max && !r.set_min && !r.set_kill && !r.set_lim) {
		GENL_SET_ERR_MSG(info, "nothing to set: give max, min, kill-on-ignore or a limit");
		return -EINVAL;
	}
	return nxq_nl_budget(skb, info, &r);
}

static int nxq_nl_budget_clear_doit(struct sk_buff *skb,
				    struct genl_info *info)
{
	return nxq_nl_budget(skb, info, NULL);
}

/* ---- holders ---- */

static int nxq_nl_put_holder(struct sk_buff *skb, struct netlink_callback *cb,
			     struct nxq_nl_scope *s, struct nxq_holder *h)
{
	struct nxq_ticket_state *t = &h->ticket;
	struct pid *owner = h->owner;
	u32 pid = 0;
	void *hdr;

	lockdep_assert_held(&h->node->dev->lock);
	/* The char device's holders carry their process as a struct pid. */
	if (owner) {
		rcu_read_lock();
		pid = pid_nr_ns(owner, s->pid_ns);
		rcu_read_unlock();
	}
	hdr = nxq_nl_dump_hdr(skb, cb, NXQUOTA_CMD_HOLDER_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_string(skb, NXQUOTA_A_HOLDER_DEVICE, h->node->dev->key) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_HOLDER_CGROUP_ID, h->node->id,
			      NXQUOTA_A_HOLDER_PAD) ||
	    nla_put_u32(skb, NXQUOTA_A_HOLDER_PID, pid) ||
	    nla_put_u32(skb, NXQUOTA_A_HOLDER_PRIORITY, h->priority) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_HOLDER_CHARGE, h->charge,
			      NXQUOTA_A_HOLDER_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_HOLDER_RECLAIMABLE,
			      h->reclaimable, NXQUOTA_A_HOLDER_PAD) ||
	    nla_put_u8(skb, NXQUOTA_A_HOLDER_TICKET_OPEN, t->open) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_HOLDER_TICKET_GENERATION,
			      t->generation, NXQUOTA_A_HOLDER_PAD) ||
	    (t->open &&
	     (nla_put_u64_64bit(skb, NXQUOTA_A_HOLDER_TICKET_BYTES, t->bytes,
				NXQUOTA_A_HOLDER_PAD) ||
	      nla_put_u32(skb, NXQUOTA_A_HOLDER_TICKET_REASON, t->reason) ||
	      nla_put_u32(skb, NXQUOTA_A_HOLDER_TICKET_LEVEL, t->level) ||
	      nla_put_u64_64bit(skb, NXQUOTA_A_HOLDER_TICKET_DEADLINE_NS,
				t->deadline_ns, NXQUOTA_A_HOLDER_PAD)))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static const struct nla_policy nxq_nl_holder_get_policy[] = {
	[NXQUOTA_A_HOLDER_DEVICE] = { .type = NLA_NUL_STRING,
				      .len = NXQ_NL_KEY_LEN },
};

static int nxq_nl_holder_start(struct netlink_callback *cb)
{
	return nxq_nl_dump_start(cb, nxq_nl_holder_get_policy,
				 NXQUOTA_A_HOLDER_DEVICE);
}

static int nxq_nl_holder_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb)
{
	struct nxq_nl_scope *s = nxq_nl_scope(cb);
	long pos = 0, start = cb->args[NXQ_NL_ARG_DEV];
	long skip = cb->args[NXQ_NL_ARG_POS], idx = 0;
	struct nxq_device *dev;
	struct nxq_holder *h;
	int err = 0;

	mutex_lock(&nxq_ledger.lock);
	cb->seq = atomic_read(&nxq_nl_gen);
	list_for_each_entry(dev, &nxq_ledger.devices, link) {
		if (pos < start || (s->device[0] && strcmp(s->device, dev->key))) {
			pos++;
			continue;
		}
		idx = 0;
		spin_lock(&dev->lock);
		list_for_each_entry(h, &dev->holders, link) {
			if (idx < skip || !nxq_nl_visible(s, h->node->key)) {
				idx++;
				continue;
			}
			err = nxq_nl_put_holder(skb, cb, s, h);
			if (err)
				break;
			idx++;
		}
		spin_unlock(&dev->lock);
		if (err)
			break;
		skip = 0;
		idx = 0;
		pos++;
	}
	mutex_unlock(&nxq_ledger.lock);
	cb->args[NXQ_NL_ARG_DEV] = pos;
	cb->args[NXQ_NL_ARG_POS] = idx;
	return nxq_nl_dump_ret(skb, err);
}

/* ---- events ---- */

static u32 nxq_nl_event_type(enum nxq_event_type type)
{
	switch (type) {
	case NXQ_EV_DEVICE_ADDED:
		return NXQUOTA_EVENT_TYPE_DEVICE_ADDED;
	case NXQ_EV_DEVICE_REMOVED:
		return NXQUOTA_EVENT_TYPE_DEVICE_REMOVED;
	case NXQ_EV_BUDGET_CHANGED:
		return NXQUOTA_EVENT_TYPE_BUDGET_CHANGED;
	case NXQ_EV_DENIED:
		return NXQUOTA_EVENT_TYPE_DENIED;
	case NXQ_EV_TICKET_ISSUED:
		return NXQUOTA_EVENT_TYPE_TICKET_ISSUED;
	case NXQ_EV_TICKET_ANSWERED:
		return NXQUOTA_EVENT_TYPE_TICKET_ANSWERED;
	case NXQ_EV_KILLED:
		return NXQUOTA_EVENT_TYPE_KILLED;
	case NXQ_EV_HOLDER_ADDED:
	case NXQ_EV_HOLDER_REMOVED:
		/* Not multicast; they only mark dumps spanning them. */
		return 0;
	}
	return 0;
}

/* type, pid, reason; device; cgroup id, bytes, value, timestamp */
static size_t nxq_nl_event_size(void)
{
	return nla_total_size(sizeof(u32)) * 3 +
	       nla_total_size(NXQ_DEVICE_KEY_MAX) +
	       nla_total_size_64bit(sizeof(u64)) * 4;
}

/**
 * nxq_nl_listening() - the ledger's listening hook: does anyone listen?
 *
 * A racy look (a listener that joins now sees the events from its join
 * on); it spares the ledger queueing events nobody gets, as a refused
 * charge in a loop would.
 *
 * Context: any; does not sleep (RCU).
 * Return: true if the family is registered and the events group has a
 * listener.
 */
bool nxq_nl_listening(void)
{
	return READ_ONCE(nxq_nl_live) &&
	       genl_has_listeners(&nxq_nl_family, &init_net,
				  NXQ_NL_MCGRP_EVENTS) > 0;
}

/**
 * nxq_nl_event() - send a ledger event to the "events" multicast group
 * @ev: the event
 *
 * The ledger's event hook, called from the device's event work with no
 * ledger lock held (the ledger queues events under its locks and sends
 * them after).  Allocates with GFP_KERNEL.  Events are sent in
 * the initial network namespace only, and only when someone listens; an
 * event that cannot be allocated is dropped (listeners see the gap as a
 * missing event, not as an error).
 */
void nxq_nl_event(const struct nxq_event *ev)
{
	struct sk_buff *skb;
	u32 type;
	void *hdr;
	int err;

	type = nxq_nl_event_type(ev->type);
	if (!type)
		return;
	/* A racy first look; checked again under RCU before sending. */
	if (!READ_ONCE(nxq_nl_live) ||
	    !genl_has_listeners(&nxq_nl_family, &init_net,
				NXQ_NL_MCGRP_EVENTS))
		return;
	skb = genlmsg_new(nxq_nl_event_size(), GFP_KERNEL);
	if (!skb)
		goto dropped;
	hdr = genlmsg_put(skb, 0, 0, &nxq_nl_family, 0, NXQUOTA_CMD_EVENT);
	if (!hdr ||
	    nla_put_u32(skb, NXQUOTA_A_EVENT_TYPE, type) ||
	    (ev->device &&
	     nla_put_string(skb, NXQUOTA_A_EVENT_DEVICE, ev->device)) ||
	    (ev->cgroup_id &&
	     nla_put_u64_64bit(skb, NXQUOTA_A_EVENT_CGROUP_ID, ev->cgroup_id,
			       NXQUOTA_A_EVENT_PAD)) ||
	    (ev->tgid && nla_put_u32(skb, NXQUOTA_A_EVENT_PID, ev->tgid)) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_EVENT_BYTES, ev->bytes,
			      NXQUOTA_A_EVENT_PAD) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_EVENT_VALUE, ev->value,
			      NXQUOTA_A_EVENT_PAD) ||
	    nla_put_u32(skb, NXQUOTA_A_EVENT_REASON, ev->reason) ||
	    nla_put_u64_64bit(skb, NXQUOTA_A_EVENT_TIMESTAMP_NS,
			      ev->ts_ns, NXQUOTA_A_EVENT_PAD)) {
		nlmsg_free(skb);
		goto dropped;
	}
	genlmsg_end(skb, hdr);
	rcu_read_lock();
	if (!READ_ONCE(nxq_nl_live)) {
		rcu_read_unlock();
		nlmsg_free(skb);
		return;
	}
	/* -ESRCH: nobody listened after all; -ENOBUFS: a socket was full. */
	err = genlmsg_multicast(&nxq_nl_family, skb, 0, NXQ_NL_MCGRP_EVENTS,
				GFP_ATOMIC);
	rcu_read_unlock();
	if (err != -ENOBUFS)
		return;
dropped:
	if (ev->dropped)
		atomic64_inc(ev->dropped);
}

/* ---- the family ---- */

static const struct nla_policy nxq_nl_device_policy[] = {
	[NXQUOTA_A_DEVICE_KEY] = { .type = NLA_NUL_STRING,
				   .len = NXQ_NL_KEY_LEN },
	[NXQUOTA_A_DEVICE_CAPACITY] = { .type = NLA_U64 },
	[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS] = { .type = NLA_U32 },
	[NXQUOTA_A_DEVICE_DEFAULT_MAX] = { .type = NLA_U64 },
};

static const struct nla_policy nxq_nl_device_add_policy[] = {
	[NXQUOTA_A_DEVICE_KEY] = { .type = NLA_NUL_STRING,
				   .len = NXQ_NL_KEY_LEN },
	[NXQUOTA_A_DEVICE_CAPACITY] = { .type = NLA_U64 },
	[NXQUOTA_A_DEVICE_DEVT] = { .type = NLA_NUL_STRING, .len = 31 },
};

static const struct nla_policy nxq_nl_budget_set_policy[] = {
	[NXQUOTA_A_BUDGET_DEVICE] = { .type = NLA_NUL_STRING,
				      .len = NXQ_NL_KEY_LEN },
	[NXQUOTA_A_BUDGET_CGROUP_PATH] = { .type = NLA_NUL_STRING,
					   .len = NXQ_NL_PATH_LEN },
	[NXQUOTA_A_BUDGET_MAX] = { .type = NLA_U64 },
	[NXQUOTA_A_BUDGET_MIN] = { .type = NLA_U64 },
	[NXQUOTA_A_BUDGET_KILL_ON_IGNORE] = NLA_POLICY_MAX(NLA_U8, 1),
	[NXQUOTA_A_BUDGET_HOLDERS_MAX] = { .type = NLA_U32 },
	[NXQUOTA_A_BUDGET_WAITERS_MAX] = { .type = NLA_U32 },
	[NXQUOTA_A_BUDGET_PRIORITY_MAX] = { .type = NLA_U32 },
	[NXQUOTA_A_BUDGET_WAIT_MAX_MS] = { .type = NLA_U32 },
	[NXQUOTA_A_BUDGET_OVERCOMMIT] = { .type = NLA_FLAG },
};

/*
 * Plain genl_ops, not split ops: they exist on every kernel we build for
 * (split ops only from 6.2), and each command here is either a do or a
 * dump, so one policy per command is all the split form would give.
 * Commands before resv_start_op (0: none) skip strict validation, so
 * every request is validated strictly: unknown attributes, trailing
 * bytes and wrong lengths are refused.
 */
static const struct genl_ops nxq_nl_ops[] = {
	{
		.cmd		= NXQUOTA_CMD_DEVICE_GET,
		.dumpit		= nxq_nl_device_dumpit,
	},
	{
		.cmd		= NXQUOTA_CMD_DEVICE_ADD,
		.doit		= nxq_nl_device_add_doit,
		.policy		= nxq_nl_device_add_policy,
		.maxattr	= NXQUOTA_A_DEVICE_DEVT,
	},
	{
		.cmd		= NXQUOTA_CMD_DEVICE_DEL,
		.doit		= nxq_nl_device_del_doit,
		.policy		= nxq_nl_device_policy,
		.maxattr	= NXQUOTA_A_DEVICE_KEY,
	},
	{
		.cmd		= NXQUOTA_CMD_DEVICE_SET,
		.doit		= nxq_nl_device_set_doit,
		.policy		= nxq_nl_device_policy,
		.maxattr	= NXQUOTA_A_DEVICE_DEFAULT_MAX,
	},
	{
		.cmd		= NXQUOTA_CMD_BUDGET_GET,
		.start		= nxq_nl_budget_start,
		.dumpit		= nxq_nl_budget_dumpit,
		.done		= nxq_nl_dump_done,
		.policy		= nxq_nl_budget_get_policy,
		.maxattr	= NXQUOTA_A_BUDGET_DEVICE,
	},
	{
		.cmd		= NXQUOTA_CMD_BUDGET_SET,
		.doit		= nxq_nl_budget_set_doit,
		.policy		= nxq_nl_budget_set_policy,
		.maxattr	= NXQUOTA_A_BUDGET_OVERCOMMIT,
	},
	{
		.cmd		= NXQUOTA_CMD_BUDGET_CLEAR,
		.doit		= nxq_nl_budget_clear_doit,
		.policy		= nxq_nl_budget_set_policy,
		.maxattr	= NXQUOTA_A_BUDGET_CGROUP_PATH,
	},
	{
		.cmd		= NXQUOTA_CMD_HOLDER_GET,
		.start		= nxq_nl_holder_start,
		.dumpit		= nxq_nl_holder_dumpit,
		.done		= nxq_nl_dump_done,
		.policy		= nxq_nl_holder_get_policy,
		.maxattr	= NXQUOTA_A_HOLDER_DEVICE,
	},
};

/* Events name cgroups and pids of every container: admins only. */
static const struct genl_multicast_group nxq_nl_mcgrps[] = {
	[NXQ_NL_MCGRP_EVENTS] = { .name = NXQUOTA_MCGRP_EVENTS,
				  .flags = GENL_MCAST_CAP_SYS_ADMIN },
};

static struct genl_family nxq_nl_family __ro_after_init = {
	.name		= NXQUOTA_FAMILY_NAME,
	.version	= NXQUOTA_FAMILY_VERSION,
	.netnsok	= true,
	.parallel_ops	= true,
	.module		= THIS_MODULE,
	.ops		= nxq_nl_ops,
	.n_ops		= ARRAY_SIZE(nxq_nl_ops),
	.resv_start_op	= 0,
	.mcgrps		= nxq_nl_mcgrps,
	.n_mcgrps	= ARRAY_SIZE(nxq_nl_mcgrps),
};

/**
 * nxq_nl_init() - register the generic netlink family "nxquota"
 *
 * Return: 0 or genl_register_family()'s negative errno.
 */
int nxq_nl_init(void)
{
	int err;

	err = genl_register_family(&nxq_nl_family);
	if (err)
		return err;
	WRITE_ONCE(nxq_nl_live, true);
	return 0;
}

/**
 * nxq_nl_exit() - unregister the family; events after this are dropped
 */
void nxq_nl_exit(void)
{
	WRITE_ONCE(nxq_nl_live, false);
	synchronize_rcu();	/* no nxq_nl_event() is still multicasting */
	genl_unregister_family(&nxq_nl_family);
}
