// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota character device: /dev/nxquota and its ioctls.
 *
 * Each open file owns a struct nxq_file, freed at release.  Holders live
 * in the file's xarray (one reference each) from NXQ_IOC_HOLDER_REGISTER
 * to NXQ_IOC_HOLDER_UNREGISTER or release, which detach (uncharge) them.
 * An ioctl working on a holder takes its own reference under the xarray
 * lock, so a holder unregistered by another thread stays valid, detached,
 * until that ioctl is done.  The file pins the module (fops.owner), so the
 * module cannot be unloaded while any process has /dev/nxquota open.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/eventfd.h>
#include <linux/xarray.h>
#include <linux/cgroup.h>
#include <linux/err.h>
#include <linux/pid.h>
#include <linux/sched/signal.h>

#include "internal.h"
#include "compat.h"

/* Holders one open file may have. */
#define NXQ_MAX_HOLDERS_PER_FILE	4096

struct nxq_file {
	struct mutex lock;		/* serialises register/unregister */
	struct xarray holders;		/* id -> holder; own xa_lock */
	unsigned int nr_holders;	/* lock */
	u32 next_id;			/* lock */
};

static int nxq_copy_in(void *karg, size_t ksize, size_t ver0,
		       void __user *uarg, u32 *usize)
{
	int err;

	if (get_user(*usize, (u32 __user *)uarg))
		return -EFAULT;
	if (*usize < ver0)
		return -EINVAL;
	if (*usize > PAGE_SIZE)
		return -E2BIG;
	err = copy_struct_from_user(karg, ksize, uarg, *usize);
	return err;
}

static int nxq_copy_out(void __user *uarg, const void *karg, size_t ksize,
			u32 usize)
{
	return copy_to_user(uarg, karg, min_t(size_t, ksize, usize)) ?
		-EFAULT : 0;
}

static void nxq_free_holder_priv(struct nxq_holder *h)
{
	if (h->priv)
		eventfd_ctx_put(h->priv);
	put_pid(h->owner);
}

/**
 * nxq_holder_signal() - the ledger's holder_signal hook: add 1 to the
 * holder's eventfd
 * @h: a holder with an eventfd; the device lock is held
 */
void nxq_holder_signal(struct nxq_holder *h)
{
	nxq_eventfd_signal(h->priv);
}

/**
 * nxq_holder_kill() - the ledger's holder_kill hook: SIGKILL the process
 * that registered the holder
 * @h: the holder; the device lock is held
 */
void nxq_holder_kill(struct nxq_holder *h)
{
	kill_pid(h->owner, SIGKILL, 1);
}

static struct nxq_holder *nxq_file_holder(struct nxq_file *f, u64 id)
{
	struct nxq_holder *h;

	if (!id || id > U32_MAX)
		return NULL;
	xa_lock(&f->holders);
	h = xa_load(&f->holders, id);
	if (h)
		kref_get(&h->ref);
	xa_unlock(&f->holders);
	return h;
}

static void nxq_file_holder_put(struct nxq_holder *h)
{
	nxq_holder_put(h, nxq_free_holder_priv);
}

static long nxq_ioc_version(void __user *uarg)
{
	struct nxq_version a;
	u32 usize;
	int err;

	err = nxq_copy_in(&a, sizeof(a), NXQ_VERSION_SIZE_VER0, uarg, &usize);
	if (err)
		return err;
	a.abi_version = NXQ_ABI_VERSION;
	a.features = NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_STATUS |
		     NXQ_FEAT_CHARGE_WAIT | NXQ_FEAT_TICKETS;
	return nxq_copy_out(uarg, &a, sizeof(a), usize);
}

static long nxq_ioc_register(struct nxq_file *f, void __user *uarg)
{
	struct eventfd_ctx *efd = NULL;
	struct nxq_holder_reg a;
	struct nxq_holder *h = NULL;
	struct nxq_device *dev;
	struct nxq_node *node;
	struct cgroup *cgrp;
	struct pid *owner;
	u32 usize, id;
	int err;

	err = nxq_copy_in(&a, sizeof(a), NXQ_HOLDER_REG_SIZE_VER0, uarg,
			  &usize);
	if (err)
		return err;
	if (a.flags & ~NXQ_HOLDER_FLAGS_ALL ||
	    a.priority > NXQ_PRIORITY_MAX)
		return -EINVAL;
	if (strnlen(a.device, sizeof(a.device)) == sizeof(a.device) ||
	    !a.device[0])
		return -EINVAL;
	if (a.eventfd >= 0) {
		efd = eventfd_ctx_fdget(a.eventfd);
		if (IS_ERR(efd))
			return PTR_ERR(efd);
	} else if (a.eventfd != -1) {
		return -EBADF;
	}

	mutex_lock(&f->lock);
	if (f->nr_holders >= NXQ_MAX_HOLDERS_PER_FILE) {
		err = -EMFILE;
		goto out_unlock;
	}

	cgrp = nxq_current_cgroup();
	mutex_lock(&nxq_ledger.lock);
	dev = nxq_device_find(&nxq_ledger, a.device);
	if (!dev) {
		err = -ENODEV;
	} else {
		node = nxq_node_for_cgroup(dev, cgrp);
		if (IS_ERR(node)) {
			err = PTR_ERR(node);
		} else {
			owner = get_task_pid(current, PIDTYPE_TGID);
			h = nxq_holder_create(node, a.priority, efd, owner,
					      task_tgid_nr(current));
			if (!h) {
				put_pid(owner);
				nxq_node_put(node);
				err = -ENOMEM;
			}
		}
	}
	mutex_unlock(&nxq_ledger.lock);
	nxq_cgroup_put(cgrp);
	if (!h)
		goto out_unlock;
	efd = NULL;	/* the holder's now */

	err = xa_alloc_cyclic(&f->holders, &id, h, XA_LIMIT(1, INT_MAX),
			      &f->next_id, GFP_KERNEL);
	if (err < 0)
		goto out_put;
	a.holder_id = id;
	err = nxq_copy_out(uarg, &a, sizeof(a), usize);
	if (err) {
		xa_erase(&f->holders, id);
		goto out_put;
	}
	f->nr_holders++;
	mutex_unlock(&f->lock);
	return 0;

out_put:
	nxq_file_holder_put(h);
out_unlock:
	mutex_unlock(&f->lock);
	if (efd)
		eventfd_ctx_put(efd);
	return err;
}

static long nxq_ioc_unregister(struct nxq_file *f, void __user *uarg)
{
	struct nxq_holder_id a;
	struct nxq_holder *h = NULL;
	u32 usize;
	int err;

	err = nxq_copy_in(&a, sizeof(a), NXQ_HOLDER_ID_SIZE_VER0, uarg,
			  &usize);
	if (err)
		return err;
	if (a.flags)
		return -EINVAL;
	mutex_lock(&f->lock);
	if (a.holder_id && a.holder_id <= U32_MAX)
		h = xa_erase(&f->holders, a.holder_id);
	if (h)
		f->nr_holders--;
	mutex_unlock(&f->lock);
	if (!h)
		return -ENOENT;
	nxq_holder_detach(h);
	nxq_file_holder_put(h);
	return 0;
}

static long nxq_ioc_charge(struct nxq_file *f, void __user *uarg,
			   bool uncharge)
{
	struct nxq_holder *h;
	struct nxq_charge a;
	u32 usize;
	int err;

	err = nxq_copy_in(&a, sizeof(a), NXQ_CHARGE_SIZE_VER0, uarg, &usize);
	if (err)
		return err;
	if (uncharge) {
		if (a.flags || a.timeout_ns)
			return -EINVAL;
	} else {
		if (a.flags & ~NXQ_CHARGE_FLAGS_ALL)
			return -EINVAL;
		if ((a.flags & NXQ_CHARGE_NOWAIT) &&
		    (a.flags & NXQ_CHARGE_WAIT))
			return -EINVAL;
		if (!!(a.flags & NXQ_CHARGE_WAIT) != !!a.timeout_ns)
			return -EINVAL;
	}
	/* Fail on an unwritable argument before anything changes. */
	err = nxq_copy_out(uarg, &a, sizeof(a), usize);
	if (err)
		return err;
	h = nxq_file_holder(f, a.holder_id);
	if (!h)
		return -ENOENT;
	if (uncharge)
		err = nxq_uncharge(h, a.bytes, &a.charged);
	else
		err = nxq_charge(h, a.bytes, a.timeout_ns, &a.charged);
	if (!err) {
		err = nxq_copy_out(uarg, &a, sizeof(a), usize);
		/* Unmapped meanwhile: a charge is undone, nothing is lost. */
		if (err && !uncharge)
			nxq_uncharge(h, a.bytes, NULL);
	}
	nxq_file_holder_put(h);
	return err;
}

static long nxq_ioc_reclaimable(struct nxq_file *f, void __user *uarg)
{
	struct nxq_reclaimable a;
	struct nxq_holder *h;
	u32 usize;
	int err;

	err = nxq_copy_in(&a, sizeof(a), NXQ_RECLAIMABLE_SIZE_VER0, uarg,
			  &usize);
	if (err)
		return err;
	if (a.flags)
		return -EINVAL;
	h = nxq_file_holder(f, a.holder_id);
	if (!h)
		return -ENOENT;
	err = nxq_set_reclaimable(h, a.bytes);
	nxq_file_holder_put(h);
	return err;
}

static long nxq_ioc_status(struct nxq_file *f, void __user *uarg)
{
	struct nxq_budget b;
	struct nxq_status a;
	struct nxq_holder *h;
	u32 usize;
	int err;

	err = nxq_copy_in(&a, sizeof(a), NXQ_STATUS_SIZE_VER0, uarg, &usize);
	if (err)
		return err;
	if (a.flags)
		return -EINVAL;
	h = nxq_file_holder(f, a.holder_id);
	if (!h)
		return -ENOENT;
	nxq_holder_budget(h, &b, &a.holder_charge, &a.holder_reclaimable);
	a.cgroup_id = h->node->id;
	nxq_file_holder_put(h);
	a.node_current = b.current_bytes;
	a.node_max = b.max;
	a.node_min = b.min;
	a.node_effective_min = b.effective_min;
	a.headroom = b.headroom;
	a.device_capacity = b.capacity;
	a.device_used = b.used;
	return nxq_copy_out(uarg, &a, sizeof(a), usize);
}

static long nxq_ioc_ticket_read(struct nxq_file *f, void __user *uarg)
{
	struct nxq_ticket_state t;
	struct nxq_ticket a;
	struct nxq_holder *h;
	u32 usize;
	int err;

	err = nxq_copy_in(&a, sizeof(a), NXQ_TICKET_SIZE_VER0, uarg, &usize);
	if (err)
		return err;
	if (a.flags)
		return -EINVAL;
	h = nxq_file_holder(f, a.holder_id);
	if (!h)
		return -ENOENT;
	err = nxq_ticket_read(h, &t);
	nxq_file_holder_put(h);
	if (err)
		return err;
	a.generation = t.generation;
	a.bytes = t.bytes;
	a.deadline_ns = t.deadline_ns;
	a.reason = t.reason;
	a.level = t.level;
	return nxq_copy_out(uarg, &a, sizeof(a), usize);
}

static long nxq_ioc_ticket_answer(struct nxq_file *f, void __user *uarg)
{
	struct nxq_ticket_answer a;
	struct nxq_holder *h;
	u32 usize;
	int err;

	err = nxq_copy_in(&a, sizeof(a), NXQ_TICKET_ANSWER_SIZE_VER0, uarg,
			  &usize);
	if (err)
		return err;
	if (a.flags)
		return -EINVAL;
	err = nxq_copy_out(uarg, &a, sizeof(a), usize);	/* writable? */
	if (err)
		return err;
	h = nxq_file_holder(f, a.holder_id);
	if (!h)
		return -ENOENT;
	err = nxq_ticket_answer(h, a.generation, a.released, &a.charged);
	nxq_file_holder_put(h);
	if (err)
		return err;
	return nxq_copy_out(uarg, &a, sizeof(a), usize);
}

#define NXQ_CMD(cmd)	((cmd) & ~IOCSIZE_MASK)

static long nxq_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct nxq_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (NXQ_CMD(cmd)) {
	case NXQ_CMD(NXQ_IOC_VERSION):
		return nxq_ioc_version(uarg);
	case NXQ_CMD(NXQ_IOC_HOLDER_REGISTER):
		return nxq_ioc_register(f, uarg);
	case NXQ_CMD(NXQ_IOC_HOLDER_UNREGISTER):
		return nxq_ioc_unregister(f, uarg);
	case NXQ_CMD(NXQ_IOC_CHARGE):
		return nxq_ioc_charge(f, uarg, false);
	case NXQ_CMD(NXQ_IOC_UNCHARGE):
		return nxq_ioc_charge(f, uarg, true);
	case NXQ_CMD(NXQ_IOC_SET_RECLAIMABLE):
		return nxq_ioc_reclaimable(f, uarg);
	case NXQ_CMD(NXQ_IOC_STATUS):
		return nxq_ioc_status(f, uarg);
	case NXQ_CMD(NXQ_IOC_TICKET_READ):
		return nxq_ioc_ticket_read(f, uarg);
	case NXQ_CMD(NXQ_IOC_TICKET_ANSWER):
		return nxq_ioc_ticket_answer(f, uarg);
	default:
		return -ENOTTY;
	}
}

static int nxq_open(struct inode *inode, struct file *file)
{
	struct nxq_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	xa_init_flags(&f->holders, XA_FLAGS_ALLOC1);
	file->private_data = f;
	return nonseekable_open(inode, file);
}

static int nxq_release(struct inode *inode, struct file *file)
{
	struct nxq_file *f = file->private_data;
	struct nxq_holder *h;
	unsigned long id;

	xa_for_each(&f->holders, id, h) {
		xa_erase(&f->holders, id);
		nxq_holder_detach(h);
		nxq_file_holder_put(h);
	}
	xa_destroy(&f->holders);
	mutex_destroy(&f->lock);
	kfree(f);
	return 0;
}

static const struct file_operations nxq_fops = {
	.owner		= THIS_MODULE,
	.open		= nxq_open,
	.release	= nxq_release,
	.unlocked_ioctl	= nxq_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

static struct miscdevice nxq_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= NXQ_DEVICE_NAME,
	.fops	= &nxq_fops,
	.mode	= 0666,
};

/**
 * nxq_cdev_init() - register /dev/nxquota
 *
 * Return: 0 or a negative errno from misc_register().
 */
int nxq_cdev_init(void)
{
	return misc_register(&nxq_misc);
}

/**
 * nxq_cdev_exit() - unregister /dev/nxquota
 */
void nxq_cdev_exit(void)
{
	misc_deregister(&nxq_misc);
}
