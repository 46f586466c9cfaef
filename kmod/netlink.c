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
 * refuses, are counted in the device's events_dropped, in all and by type
 * (nxq_event_lost()).
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
	GENL_SET_ERR_MSG(info, NXQ_ABI_MSG_ADMIN);
	return -EPERM;
}

/* The ABI's refusal of a request's arguments, as its extended ack. */
static void nxq_nl_fail(struct genl_info *info, const struct nxq_abi_fail *why)
{
	if (why->attr)
		NL_SET_BAD_ATTR(info->extack, why->attr);
	info->extack->_msg = why->msg;
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
static int nxq_nl_dump_start(struct netlink_callback *cb, u8 cmd,
			     unsigned int dev_attr)
{
	const struct nxq_abi_nlop *op = nxq_abi_nlop(cmd);
	struct nlattr *tb[NXQUOTA_A_BUDGET_DEVICE + 1];
	struct nxq_nl_scope *s;
	int err;

	BUILD_BUG_ON((int)NXQUOTA_A_BUDGET_DEVICE != (int)NXQUOTA_A_HOLDER_DEVICE);
	if (WARN_ON_ONCE(!op || op->maxattr != dev_attr))
		return -EINVAL;
	err = nlmsg_parse(cb->nlh, GENL_HDRLEN, tb, dev_attr, op->policy,
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
					    NXQ_ABI_MSG_NODEV);
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

/*
 * The one walk of every dump: the ledger's devices in list order, from
 * where the previous part stopped (cb->args[NXQ_NL_ARG_DEV]), skipping
 * those the scope's device filter does not name (@s NULL: no scope, no
 * filter).  For each, @fn puts its records into @skb from *@resume (the
 * saved cb->args[NXQ_NL_ARG_POS] for the first device it is given, 0 for
 * the next) and, when @skb is full, leaves *@resume where the next part
 * resumes and returns the error.  Under the ledger lock; the dump's
 * sequence is read under it, so a change after it flags the part.
 *
 * Return: what a dumpit returns (nxq_nl_dump_ret()).
 */
static int nxq_nl_dump_devices(struct sk_buff *skb, struct netlink_callback *cb,
			       struct nxq_nl_scope *s,
			       int (*fn)(struct sk_buff *skb,
					 struct netlink_callback *cb,
					 struct nxq_nl_scope *s,
					 struct nxq_device *dev,
					 unsigned long *resume))
{
	long pos = 0, start = cb->args[NXQ_NL_ARG_DEV];
	unsigned long resume = cb->args[NXQ_NL_ARG_POS];
	struct nxq_device *dev;
	int err = 0;

	mutex_lock(&nxq_ledger.lock);
	cb->seq = atomic_read(&nxq_nl_gen);
	list_for_each_entry(dev, &nxq_ledger.devices, link) {
		if (pos < start ||
		    (s && s->device[0] && strcmp(s->device, dev->key))) {
			pos++;
			continue;
		}
		err = fn(skb, cb, s, dev, &resume);
		if (err)
			break;
		resume = 0;
		pos++;
	}
	mutex_unlock(&nxq_ledger.lock);
	cb->args[NXQ_NL_ARG_DEV] = pos;
	cb->args[NXQ_NL_ARG_POS] = resume;
	return nxq_nl_dump_ret(skb, err);
}

/* ---- devices ---- */

/*
 * Put the attributes of one message (abi_genl.c decides which) into @skb:
 * every authority sends the same ones.
 */
static int nxq_nl_put_msg(struct sk_buff *skb, const struct nxq_abi_msg *m)
{
	const struct nxq_abi_attr *a;
	unsigned int i;
	int err = 0;

	for (i = 0; i < m->n && !err; i++) {
		a = &m->a[i];
		switch (a->kind) {
		case NXQ_ABI_U8:
			err = nla_put_u8(skb, a->type, a->v);
			break;
		case NXQ_ABI_U32:
			err = nla_put_u32(skb, a->type, a->v);
			break;
		case NXQ_ABI_U64:
			err = nla_put_u64_64bit(skb, a->type, a->v, m->pad);
			break;
		default:
			err = nla_put_string(skb, a->type, a->s);
			break;
		}
	}
	return err ? -EMSGSIZE : 0;
}

/* One dump message: the header, the attributes, or nothing if too big. */
static int nxq_nl_dump_msg(struct sk_buff *skb, struct netlink_callback *cb,
			   u8 cmd, const struct nxq_abi_msg *m)
{
	void *hdr;

	hdr = nxq_nl_dump_hdr(skb, cb, cmd);
	if (!hdr)
		return -EMSGSIZE;
	if (nxq_nl_put_msg(skb, m)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static int nxq_nl_put_device(struct sk_buff *skb, struct netlink_callback *cb,
			     struct nxq_device *dev)
{
	struct nxq_abi_msg m;
	char devt[32];

	lockdep_assert_held(&nxq_ledger.lock);
	snprintf(devt, sizeof(devt), "%u:%u", MAJOR(dev->devt),
		 MINOR(dev->devt));
	nxq_abi_device_msg(dev, devt, NULL, &m);
	return nxq_nl_dump_msg(skb, cb, NXQUOTA_CMD_DEVICE_GET, &m);
}

/* One message per device: nothing to resume inside a device. */
static int nxq_nl_device_one(struct sk_buff *skb, struct netlink_callback *cb,
			     struct nxq_nl_scope *s, struct nxq_device *dev,
			     unsigned long *resume)
{
	return nxq_nl_put_device(skb, cb, dev);
}

static int nxq_nl_device_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb)
{
	return nxq_nl_dump_devices(skb, cb, NULL, nxq_nl_device_one);
}

static int nxq_nl_device_add_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nxq_abi_fail why;
	struct nxq_device *dev;
	int err;

	err = nxq_nl_admin(skb, info);
	if (err)
		return err;
	if (GENL_REQ_ATTR_CHECK(info, NXQUOTA_A_DEVICE_KEY) ||
	    GENL_REQ_ATTR_CHECK(info, NXQUOTA_A_DEVICE_CAPACITY))
		return -EINVAL;
	dev = nxq_abi_device_add(&nxq_ledger, info->attrs, &why);
	if (IS_ERR(dev)) {
		if (why.msg)
			nxq_nl_fail(info, &why);
		return PTR_ERR(dev);
	}
	nxq_nl_changed();
	return 0;
}

static int nxq_nl_device_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nxq_abi_fail why;
	int err;

	err = nxq_nl_admin(skb, info);
	if (err)
		return err;
	if (GENL_REQ_ATTR_CHECK(info, NXQUOTA_A_DEVICE_KEY))
		return -EINVAL;
	err = nxq_device_remove(&nxq_ledger,
				nla_data(info->attrs[NXQUOTA_A_DEVICE_KEY]));
	err = nxq_abi_device_del_err(info->attrs, err, &why);
	if (why.msg)
		nxq_nl_fail(info, &why);
	if (!err)
		nxq_nl_changed();
	return err;
}

static int nxq_nl_device_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nxq_abi_fail why;
	int err;

	err = nxq_nl_admin(skb, info);
	if (err)
		return err;
	if (GENL_REQ_ATTR_CHECK(info, NXQUOTA_A_DEVICE_KEY))
		return -EINVAL;
	err = nxq_abi_device_set(&nxq_ledger, info->attrs, NULL, &why);
	if (err)
		nxq_nl_fail(info, &why);
	else
		nxq_nl_changed();
	return err;
}

/* ---- budget nodes ---- */

static int nxq_nl_put_budget(struct sk_buff *skb, struct netlink_callback *cb,
			     struct nxq_nl_scope *s, struct nxq_node *node)
{
	struct nxq_abi_msg m;
	int path_len;

	lockdep_assert_held(&nxq_ledger.lock);
	path_len = cgroup_path_ns(node->key, s->path, PATH_MAX, s->cgroup_ns);
	nxq_abi_budget_msg(node, path_len >= 0 && path_len < PATH_MAX ?
			   s->path : NULL, &m);
	return nxq_nl_dump_msg(skb, cb, NXQUOTA_CMD_BUDGET_GET, &m);
}

static int nxq_nl_budget_start(struct netlink_callback *cb)
{
	struct nxq_device *dev;
	int err;

	err = nxq_nl_dump_start(cb, NXQUOTA_CMD_BUDGET_GET,
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

/* The visible nodes of @dev from node id *@resume. */
static int nxq_nl_budget_one(struct sk_buff *skb, struct netlink_callback *cb,
			     struct nxq_nl_scope *s, struct nxq_device *dev,
			     unsigned long *resume)
{
	unsigned long id = *resume;
	struct nxq_node *node;
	int err = 0;

	xa_for_each_start(&dev->nodes, id, node, id) {
		if (!nxq_nl_visible(s, node->key))
			continue;
		err = nxq_nl_put_budget(skb, cb, s, node);
		if (err)
			break;
	}
	*resume = id;
	return err;
}

static int nxq_nl_budget_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb)
{
	return nxq_nl_dump_devices(skb, cb, nxq_nl_scope(cb),
				   nxq_nl_budget_one);
}

/* Set (@r) or clear (NULL) a budget through nxq_budget_set(). */
static int nxq_nl_budget(struct sk_buff *skb, struct genl_info *info,
			 const struct nxq_budget_req *r)
{
	struct nlattr **a = info->attrs;
	struct nxq_abi_fail why;
	char msg[NXQ_NL_MSG];
	int err;

	err = nxq_nl_admin(skb, info);
	if (err)
		return err;
	if (GENL_REQ_ATTR_CHECK(info, NXQUOTA_A_BUDGET_DEVICE) ||
	    GENL_REQ_ATTR_CHECK(info, NXQUOTA_A_BUDGET_CGROUP_PATH))
		return -EINVAL;
	err = nxq_abi_budget_path(a, &why);
	if (err) {
		nxq_nl_fail(info, &why);
		return err;
	}
	err = nxq_budget_set(nla_data(a[NXQUOTA_A_BUDGET_DEVICE]),
			     nla_data(a[NXQUOTA_A_BUDGET_CGROUP_PATH]), r, msg,
			     sizeof(msg));
	if (nxq_abi_budget_err(a, err, &why) && why.msg)
		nxq_nl_fail(info, &why);
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
	struct nxq_budget_req r;
	struct nxq_abi_fail why;
	int err;

	err = nxq_abi_budget_req(info->attrs, &r, &why);
	if (err) {
		nxq_nl_fail(info, &why);
		return err;
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
	struct pid *owner = h->owner;
	struct nxq_abi_msg m;
	u32 pid = 0;

	lockdep_assert_held(&h->node->dev->lock);
	/* The char device's holders carry their process as a struct pid. */
	if (owner) {
		rcu_read_lock();
		pid = pid_nr_ns(owner, s->pid_ns);
		rcu_read_unlock();
	}
	nxq_abi_holder_msg(h, pid, &m);
	return nxq_nl_dump_msg(skb, cb, NXQUOTA_CMD_HOLDER_GET, &m);
}

static int nxq_nl_holder_start(struct netlink_callback *cb)
{
	return nxq_nl_dump_start(cb, NXQUOTA_CMD_HOLDER_GET,
				 NXQUOTA_A_HOLDER_DEVICE);
}

/* The visible holders of @dev from the *@resume-th in its list. */
static int nxq_nl_holder_one(struct sk_buff *skb, struct netlink_callback *cb,
			     struct nxq_nl_scope *s, struct nxq_device *dev,
			     unsigned long *resume)
{
	unsigned long idx = 0;
	struct nxq_holder *h;
	int err = 0;

	spin_lock(&dev->lock);
	list_for_each_entry(h, &dev->holders, link) {
		if (idx < *resume || !nxq_nl_visible(s, h->node->key)) {
			idx++;
			continue;
		}
		err = nxq_nl_put_holder(skb, cb, s, h);
		if (err)
			break;
		idx++;
	}
	spin_unlock(&dev->lock);
	*resume = idx;
	return err;
}

static int nxq_nl_holder_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb)
{
	return nxq_nl_dump_devices(skb, cb, nxq_nl_scope(cb),
				   nxq_nl_holder_one);
}

/* ---- events ---- */

/* type, pid, reason; device; cgroup id, bytes, value, timestamp */
static size_t nxq_nl_event_size(void)
{
	return nla_total_size(sizeof(u32)) * 3 +
	       nla_total_size(NXQ_DEVICE_KEY_MAX) +
	       nla_total_size_64bit(sizeof(u64)) * 5;
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
	struct nxq_abi_msg m;
	struct sk_buff *skb;
	u32 type;
	void *hdr;
	int err;

	type = nxq_abi_event_msg(ev, &m);
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
	if (!hdr || nxq_nl_put_msg(skb, &m)) {
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
	nxq_event_lost(ev);
}

/* ---- the family ---- */

/*
 * The handlers of the operations; everything else about them (policy,
 * maxattr, do or dump, the administration's) is the ABI's table,
 * generated from the spec (abi_genl.c), from which nxq_nl_init() builds
 * the family's ops.
 */
struct nxq_nl_handlers {
	u8 cmd;
	int (*doit)(struct sk_buff *skb, struct genl_info *info);
	int (*start)(struct netlink_callback *cb);
	int (*dumpit)(struct sk_buff *skb, struct netlink_callback *cb);
	int (*done)(struct netlink_callback *cb);
};

static const struct nxq_nl_handlers nxq_nl_handlers[] = {
	{ NXQUOTA_CMD_DEVICE_GET, .dumpit = nxq_nl_device_dumpit },
	{ NXQUOTA_CMD_DEVICE_ADD, .doit = nxq_nl_device_add_doit },
	{ NXQUOTA_CMD_DEVICE_DEL, .doit = nxq_nl_device_del_doit },
	{ NXQUOTA_CMD_DEVICE_SET, .doit = nxq_nl_device_set_doit },
	{ NXQUOTA_CMD_BUDGET_GET, .start = nxq_nl_budget_start,
	  .dumpit = nxq_nl_budget_dumpit, .done = nxq_nl_dump_done },
	{ NXQUOTA_CMD_BUDGET_SET, .doit = nxq_nl_budget_set_doit },
	{ NXQUOTA_CMD_BUDGET_CLEAR, .doit = nxq_nl_budget_clear_doit },
	{ NXQUOTA_CMD_HOLDER_GET, .start = nxq_nl_holder_start,
	  .dumpit = nxq_nl_holder_dumpit, .done = nxq_nl_dump_done },
};

/*
 * Plain genl_ops, not split ops: they exist on every kernel we build for
 * (split ops only from 6.2), and each command here is either a do or a
 * dump, so one policy per command is all the split form would give.
 * Commands before resv_start_op (0: none) skip strict validation, so
 * every request is validated strictly: unknown attributes, trailing
 * bytes and wrong lengths are refused.  The administration's check is
 * each handler's (CAP_SYS_ADMIN in the initial user namespace, not
 * GENL_ADMIN_PERM's CAP_NET_ADMIN).
 */
static struct genl_ops nxq_nl_ops[NXQ_ABI_NR_NLOPS] __ro_after_init;

/* Fill nxq_nl_ops from the ABI's table and the handlers above. */
static int nxq_nl_build_ops(void)
{
	unsigned int i, k;

	BUILD_BUG_ON(ARRAY_SIZE(nxq_nl_handlers) != NXQ_ABI_NR_NLOPS);
	for (i = 0; i < NXQ_ABI_NR_NLOPS; i++) {
		const struct nxq_abi_nlop *op = &nxq_abi_nlops[i];
		const struct nxq_nl_handlers *h = NULL;

		for (k = 0; k < ARRAY_SIZE(nxq_nl_handlers); k++)
			if (nxq_nl_handlers[k].cmd == op->cmd)
				h = &nxq_nl_handlers[k];
		if (WARN_ON(!h || !h->doit != !op->doit ||
			    !h->dumpit != !op->dumpit))
			return -EINVAL;
		nxq_nl_ops[i] = (struct genl_ops) {
			.cmd = op->cmd,
			.doit = h->doit,
			.start = h->start,
			.dumpit = h->dumpit,
			.done = h->done,
			.policy = op->policy,
			.maxattr = op->maxattr,
		};
	}
	return 0;
}

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

	err = nxq_nl_build_ops();
	if (err)
		return err;
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
