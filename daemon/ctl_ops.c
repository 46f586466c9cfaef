// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's control socket, its operations: devices, budgets and
 * holders, the module's kmod/netlink.c handlers against the daemon's
 * ledger and state file.  Each gets one parsed request (struct ctl_req,
 * ctl.h), already allowed by ctl.c (its sender, and CAP_SYS_ADMIN for
 * what changes something), and answers a do with its return (ctl.c acks
 * it) or a dump through ctl_dump_one() and ctl_dump_done().  A change is
 * applied, the state file written, and if that fails the change is undone
 * and refused with the write's errno -- in one turn of the loop.
 */
#include <linux/types.h>
#include <linux/nxquota.h>
#include <linux/genetlink.h>
#include <stdio.h>
#include <sys/sysmacros.h>
#include <net/netlink.h>

#include "nxqd.h"
#include "ctl.h"

/* A change that could not be saved: undone, and the ack says so. */
static int ctl_unsaved(struct ctl_req *r, int err)
{
	snprintf(r->msg_buf, sizeof(r->msg_buf),
		 "the change could not be saved in %s (%s): it is undone",
		 nxqd_state_dir(), strerror(-err));
	r->ext._msg = r->msg_buf;
	return err;
}

/* ---- devices ------------------------------------------------------------- */

int ctl_device_dump(struct ctl_req *r)
{
	struct nxq_abi_refusals ref;
	struct nxq_device *dev;
	struct nxq_abi_msg m;
	char devt[32];

	nxqd_proc_reap();

	mutex_lock(&nxqd_ledger.lock);
	list_for_each_entry(dev, &nxqd_ledger.devices, link) {
		snprintf(devt, sizeof(devt), "%u:%u", major(dev->devt),
			 minor(dev->devt));
		nxqd_client_refusals(dev->key, &ref);
		ref.creds += ctl_creds_refused();
		nxq_abi_device_msg(dev, devt, &ref, &m);
		ctl_dump_one(r, NXQUOTA_CMD_DEVICE_GET, &m);
	}
	mutex_unlock(&nxqd_ledger.lock);
	ctl_dump_done(r);
	return 0;
}

int ctl_device_add(struct ctl_req *r)
{
	struct nlattr *key = r->tb[NXQUOTA_A_DEVICE_KEY];
	struct nxq_abi_fail why;
	struct nxq_device *dev;
	int err;

	if (ctl_missing(r, NXQUOTA_A_DEVICE_KEY) ||
	    ctl_missing(r, NXQUOTA_A_DEVICE_CAPACITY))
		return -EINVAL;
	dev = nxq_abi_device_add(&nxqd_ledger, r->tb, &why);
	if (IS_ERR(dev))
		return ctl_fail(r, &why, PTR_ERR(dev));
	err = nxqd_state_save(NULL);
	if (err) {
		nxq_device_remove(&nxqd_ledger, nla_data(key));
		return ctl_unsaved(r, err);
	}
	return 0;
}

int ctl_device_del(struct ctl_req *r)
{
	const char *key;
	struct nxq_abi_fail why;
	struct nxq_device *dev;
	int err = 0;

	if (ctl_missing(r, NXQUOTA_A_DEVICE_KEY))
		return -EINVAL;
	key = nla_data(r->tb[NXQUOTA_A_DEVICE_KEY]);
	/* what nxq_device_remove() would refuse, before the file changes */
	mutex_lock(&nxqd_ledger.lock);
	dev = nxq_device_find(&nxqd_ledger, key);
	if (!dev)
		err = -ENOENT;
	else if (dev->nr_holders)
		err = -EBUSY;
	mutex_unlock(&nxqd_ledger.lock);
	if (!err) {
		err = nxqd_state_save(key);
		if (err)
			return ctl_unsaved(r, err);
		err = nxq_device_remove(&nxqd_ledger, key);
		if (err)
			nxqd_state_save(NULL);	/* it stays: so does its line */
	}
	return ctl_fail(r, &why, nxq_abi_device_del_err(r->tb, err, &why));
}

int ctl_device_set(struct ctl_req *r)
{
	struct nxq_abi_device_vals was;
	struct nxq_abi_fail why;
	int err;

	if (ctl_missing(r, NXQUOTA_A_DEVICE_KEY))
		return -EINVAL;
	err = nxq_abi_device_set(&nxqd_ledger, r->tb, &was, &why);
	if (err)
		return ctl_fail(r, &why, err);
	err = nxqd_state_save(NULL);
	if (err) {
		nxq_abi_device_reset(&nxqd_ledger,
				     nla_data(r->tb[NXQUOTA_A_DEVICE_KEY]), &was);
		return ctl_unsaved(r, err);
	}
	return 0;
}

/* ---- budget nodes --------------------------------------------------------- */

/* The dumps' device filter, as nxq_nl_dump_start(): -ENODEV if unknown. */
static int ctl_filter(struct ctl_req *r, int attr, const char **key)
{
	*key = NULL;
	if (!r->tb[attr])
		return 0;
	*key = nla_data(r->tb[attr]);
	if (nxq_device_find(&nxqd_ledger, *key))
		return 0;
	NL_SET_ERR_MSG_ATTR(&r->ext, r->tb[attr], NXQ_ABI_MSG_NODEV);
	return -ENODEV;
}

int ctl_budget_dump(struct ctl_req *r)
{
	struct nxq_device *dev;
	struct nxq_node *node;
	struct nxq_abi_msg m;
	unsigned long id;
	const char *key;
	int err;

	nxqd_proc_reap();

	mutex_lock(&nxqd_ledger.lock);
	err = ctl_filter(r, NXQUOTA_A_BUDGET_DEVICE, &key);
	if (err) {
		mutex_unlock(&nxqd_ledger.lock);
		return err;
	}
	list_for_each_entry(dev, &nxqd_ledger.devices, link) {
		if (key && strcmp(key, dev->key))
			continue;
		/* a budget whose cgroup was removed goes with it */
		nxq_device_prune(dev);
		xa_for_each(&dev->nodes, id, node) {
			nxq_abi_budget_msg(node, nxqd_cgroup_key_path(node->key),
					   &m);
			nxqd_backstop_budget_msg(dev->key, node->id, &m);
			ctl_dump_one(r, NXQUOTA_CMD_BUDGET_GET, &m);
		}
	}
	mutex_unlock(&nxqd_ledger.lock);
	ctl_dump_done(r);
	return 0;
}

/* A node's budget as it was, to put back if its change is not saved. */
struct ctl_budget_was {
	bool had;
	struct nxq_budget_req req;
};

static void ctl_budget_snap(const char *key, const char *path,
			    struct ctl_budget_was *was)
{
	struct nxq_device *dev;
	struct nxq_node *node;
	u64 id = nxqd_cgroup_id(path);

	memset(was, 0, sizeof(*was));
	mutex_lock(&nxqd_ledger.lock);
	dev = nxq_device_find(&nxqd_ledger, key);
	node = dev && id ? nxq_node_find(dev, id) : NULL;
	if (node) {
		/* what was accepted once is put back as it was */
		spin_lock(&dev->lock);
		was->had = nxq_abi_node_req(node, &was->req);
		spin_unlock(&dev->lock);
	}
	mutex_unlock(&nxqd_ledger.lock);
}

static int ctl_budget(struct ctl_req *r, const struct nxq_budget_req *b)
{
	struct nlattr *key = r->tb[NXQUOTA_A_BUDGET_DEVICE];
	struct nlattr *path = r->tb[NXQUOTA_A_BUDGET_CGROUP_PATH];
	struct ctl_budget_was was;
	struct nxq_abi_fail why;
	int err;

	if (ctl_missing(r, NXQUOTA_A_BUDGET_DEVICE) ||
	    ctl_missing(r, NXQUOTA_A_BUDGET_CGROUP_PATH))
		return -EINVAL;
	err = nxq_abi_budget_path(r->tb, &why);
	if (err)
		return ctl_fail(r, &why, err);
	ctl_budget_snap(nla_data(key), nla_data(path), &was);
	err = nxqd_budget_set(nla_data(key), nla_data(path), b, r->msg_buf,
			      sizeof(r->msg_buf));
	if (r->msg_buf[0])
		r->ext._msg = r->msg_buf;
	else if (err)
		ctl_fail(r, &why, nxq_abi_budget_err(r->tb, err, &why));
	if (err)
		return err;
	err = nxqd_state_save(NULL);
	if (err) {
		nxqd_budget_set(nla_data(key), nla_data(path), NULL, NULL, 0);
		if (was.had)
			nxqd_budget_set(nla_data(key), nla_data(path),
					&was.req, NULL, 0);
		return ctl_unsaved(r, err);
	}
	return 0;
}

int ctl_budget_set(struct ctl_req *r)
{
	struct nxq_budget_req b;
	struct nxq_abi_fail why;
	int err;

	err = nxq_abi_budget_req(r->tb, &b, &why);
	if (err)
		return ctl_fail(r, &why, err);
	return ctl_budget(r, &b);
}

int ctl_budget_clear(struct ctl_req *r)
{
	return ctl_budget(r, NULL);
}

/* ---- holders --------------------------------------------------------------- */

int ctl_holder_dump(struct ctl_req *r)
{
	struct nxq_device *dev;
	struct nxq_holder *h;
	struct nxq_abi_msg m;
	const char *key;
	int err;

	nxqd_proc_reap();

	mutex_lock(&nxqd_ledger.lock);
	err = ctl_filter(r, NXQUOTA_A_HOLDER_DEVICE, &key);
	if (err) {
		mutex_unlock(&nxqd_ledger.lock);
		return err;
	}
	list_for_each_entry(dev, &nxqd_ledger.devices, link) {
		if (key && strcmp(key, dev->key))
			continue;
		spin_lock(&dev->lock);
		list_for_each_entry(h, &dev->holders, link) {
			nxq_abi_holder_msg(h, h->tgid, &m);
			ctl_dump_one(r, NXQUOTA_CMD_HOLDER_GET, &m);
		}
		spin_unlock(&dev->lock);
	}
	mutex_unlock(&nxqd_ledger.lock);
	ctl_dump_done(r);
	return 0;
}

