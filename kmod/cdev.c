// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota character device: /dev/nxquota and its ioctls.
 *
 * Each open file owns a struct nxq_file, freed at release.  Holders live
 * in the file's xarray (one reference each) from NXQ_IOC_HOLDER_REGISTER
 * to NXQ_IOC_HOLDER_UNREGISTER, the exit of the process that registered
 * them, or release, each of which detaches (uncharges) them.  An ioctl
 * working on a holder takes its own reference under the xarray lock, so a
 * holder unregistered by another thread stays valid, detached, until that
 * ioctl is done.  The file pins the module (fops.owner), so the module
 * cannot be unloaded while any process has /dev/nxquota open.
 *
 * Holders belong to a process.  A holder is found only by the thread
 * group that registered it: another process sharing the file (a forked
 * child, a process the fd was passed to) gets -ENOENT for its id.  Each
 * process that registers on a file has a struct nxq_owner there, from
 * its first registration to its exit (or the file's release), which ends
 * that process's holders, whoever else still has the file open:
 *  - in the exiting task itself, before the parent can reap it: ->flush
 *    is called for each descriptor when the last task of a files table
 *    exits (exit_files(), before exit_notify()); when the thread group is
 *    dead by then, the owner ends there (nxq_flush());
 *  - else, by the file's exit work: the owner waits on the process's
 *    struct pid (wait_pidfd, the queue pidfd_poll() sleeps on and the exit
 *    path wakes once the whole thread group is gone), whose wake queues
 *    the work.  That is the case of a process that no longer had the file
 *    in its files table when it died, or shared its table with a process
 *    outside its thread group (CLONE_FILES).
 * See Documentation/design.rst for why this and not an mmu_notifier or a
 * file per holder.
 *
 * Dispatch is table-driven: one head copies the argument in, checks its
 * size, its reserved flags and the writability of what is copied out,
 * and looks the holder up, before the command's handler runs.  The rules
 * of each command are the ABI's table (abi.c), which nxquotad applies
 * too; this file has only the handlers.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/eventfd.h>
#include <linux/xarray.h>
#include <linux/cgroup.h>
#include <linux/err.h>
#include <linux/pid.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/sched/signal.h>
#include <linux/indirect_call_wrapper.h>

#include "internal.h"
#include "compat.h"

/* Holders one open file may have. */
#define NXQ_MAX_HOLDERS_PER_FILE	4096

struct nxq_file {
	struct mutex lock;		/* register/unregister, owners */
	struct xarray holders;		/* id -> holder; own xa_lock */
	unsigned int nr_holders;	/* lock */
	u32 next_id;			/* lock */
	struct list_head owners;	/* lock: struct nxq_owner */
	struct work_struct exit_work;	/* ends the owners that are gone */
};

/**
 * struct nxq_owner - a process that registered on a file, until it exits
 * @link: in nxq_file.owners
 * @pid: the process (its thread group's pid), a reference
 * @wqe: on @pid's wait_pidfd queue; its wake queues @f's exit work
 * @f: the file
 *
 * Freed with its process's holders on @f: at the process's exit
 * (nxq_owner_end()) or at the file's release.
 */
struct nxq_owner {
	struct list_head link;
	struct pid *pid;
	struct wait_queue_entry wqe;
	struct nxq_file *f;
};

/* Owners that exist, on all files (the owners file in sysfs). */
static atomic_long_t nxq_nr_owners = ATOMIC_LONG_INIT(0);

/**
 * nxq_cdev_owners() - how many struct nxq_owner exist
 *
 * One per (open file, process that registered on it and has not exited).
 *
 * Return: the count.
 */
long nxq_cdev_owners(void)
{
	return atomic_long_read(&nxq_nr_owners);
}

static int nxq_copy_out(void __user *uarg, const void *karg, size_t ksize,
			u32 usize)
{
	return copy_to_user(uarg, karg, min_t(size_t, ksize, usize)) ?
		-EFAULT : 0;
}

/*
 * A handler's failure, copied back to a caller who has room for it
 * (nxq_abi_err_out()): a refused charge's node, with its path written
 * where the caller asked (nxq_cgroup_path_user()).  The command's errno
 * stands whatever the copy does.
 */
static void nxq_copy_err_out(void __user *uarg, void *karg,
			     const struct nxq_abi_cmd *op, u32 usize)
{
	struct nxq_charge *a = karg;

	if (op->cmd == NXQ_IOC_CHARGE && a->path && a->refused_id)
		a->path_len = nxq_cgroup_path_user(a->refused_id,
						   u64_to_user_ptr(a->path),
						   a->path_size);
	nxq_copy_out(uarg, karg, op->ksize, usize);
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
 * @h: a holder with an eventfd
 *
 * Context: the device lock is held.
 */
void nxq_holder_signal(struct nxq_holder *h)
{
	nxq_eventfd_signal(h->priv);
}

/**
 * nxq_holder_kill() - the ledger's holder_kill hook: SIGKILL the process
 * that registered the holder
 * @h: the holder
 *
 * Its holders are detached when the process is gone (struct nxq_owner).
 *
 * Context: the device lock is held.
 */
void nxq_holder_kill(struct nxq_holder *h)
{
	kill_pid(h->owner, SIGKILL, 1);
}

static void nxq_file_holder_put(struct nxq_holder *h)
{
	nxq_holder_put(h, nxq_free_holder_priv);
}

/*
 * The holder @id of @f, if the calling process registered it, without a
 * reference: the caller holds rcu_read_lock() (see ledger.h).
 */
static struct nxq_holder *nxq_file_holder_rcu(struct nxq_file *f, u64 id)
{
	XA_STATE(xas, &f->holders, id);
	struct nxq_holder *h;

	if (!id || id > U32_MAX)
		return NULL;
	/* xa_load() without its own rcu_read_lock(): the caller's will do. */
	do {
		h = xas_load(&xas);
	} while (xas_retry(&xas, h));
	if (h && h->owner != task_tgid(current))
		h = NULL;
	return h;
}

/*
 * The holder @id of @f, if the calling process registered it, with a
 * reference; else NULL.
 */
static struct nxq_holder *nxq_file_holder(struct nxq_file *f, u64 id)
{
	struct nxq_holder *h;

	if (!id || id > U32_MAX)
		return NULL;
	/* Holders are freed after a grace period (nxq_holder_put()). */
	rcu_read_lock();
	h = xa_load(&f->holders, id);
	if (h && (h->owner != task_tgid(current) ||
		  !kref_get_unless_zero(&h->ref)))
		h = NULL;
	rcu_read_unlock();
	return h;
}

/* ---- process exit ---- */

/* Has the thread group of @pid exited (as pidfd_poll() decides)? */
static bool nxq_pid_gone(struct pid *pid)
{
	struct task_struct *task;
	bool gone;

	rcu_read_lock();
	task = pid_task(pid, PIDTYPE_PID);
	gone = !task || (READ_ONCE(task->exit_state) &&
			 thread_group_empty(task));
	rcu_read_unlock();
	return gone;
}

/*
 * End @o: its process's holders on @f, then @o itself.  f->lock is held;
 * @o is still on its pid's queue.
 */
static void nxq_owner_end(struct nxq_file *f, struct nxq_owner *o)
{
	struct nxq_holder *h;
	unsigned long id;

	lockdep_assert_held(&f->lock);
	remove_wait_queue(&o->pid->wait_pidfd, &o->wqe);
	list_del(&o->link);
	xa_for_each(&f->holders, id, h) {
		if (h->owner != o->pid)
			continue;
		xa_erase(&f->holders, id);
		f->nr_holders--;
		nxq_holder_end(h, nxq_free_holder_priv);
	}
	put_pid(o->pid);
	kfree(o);
	atomic_long_dec(&nxq_nr_owners);
}

/* The exit work: end the owners of @f whose process is gone. */
static void nxq_file_exit_work(struct work_struct *work)
{
	struct nxq_file *f = container_of(work, struct nxq_file, exit_work);
	struct nxq_owner *o, *tmp;

	mutex_lock(&f->lock);
	list_for_each_entry_safe(o, tmp, &f->owners, link)
		if (nxq_pid_gone(o->pid))	/* else another wake */
			nxq_owner_end(f, o);
	mutex_unlock(&f->lock);
}

/*
 * Wait-queue callback, in the exiting task with the queue's lock held
 * (and, from exit_notify(), tasklist_lock): nothing here may sleep or
 * take a lock the ledger holds, so it only queues the work.
 */
static int nxq_owner_wake(struct wait_queue_entry *wqe, unsigned int mode,
			  int sync, void *key)
{
	struct nxq_owner *o = container_of(wqe, struct nxq_owner, wqe);

	schedule_work(&o->f->exit_work);
	return 0;
}

/* Watch the calling process on @f, once.  f->lock is held. */
static int nxq_owner_watch(struct nxq_file *f)
{
	struct pid *pid = task_tgid(current);
	struct nxq_owner *o;

	lockdep_assert_held(&f->lock);
	list_for_each_entry(o, &f->owners, link)
		if (o->pid == pid)
			return 0;
	o = kzalloc(sizeof(*o), GFP_KERNEL_ACCOUNT);
	if (!o)
		return -ENOMEM;
	o->pid = get_pid(pid);
	o->f = f;
	init_waitqueue_func_entry(&o->wqe, nxq_owner_wake);
	add_wait_queue(&pid->wait_pidfd, &o->wqe);
	list_add_tail(&o->link, &f->owners);
	atomic_long_inc(&nxq_nr_owners);
	return 0;
}

/*
 * ->flush: filp_close() calls it for every close(2) of a descriptor of
 * the file, and for every descriptor still open when a files table is
 * torn down -- at exit, close_files() from exit_files() in the last task
 * using that table.  Only that last case matters here: the task is
 * exiting (PF_EXITING) and its whole thread group with it (signal->live
 * is 0: every thread has passed do_exit()'s decrement, so none is in an
 * ioctl and none can register again).  exit_files() runs before
 * exit_notify(), and the thread running it is still in the group until
 * its exit_notify()/release_task(): the group leader is not reapable
 * (delay_group_leader()) and the parent is not even notified yet, so its
 * wait4()/waitid() cannot return before the holders have ended here.
 *
 * A process that closed its descriptors of the file before dying, or
 * whose files table outlives it (CLONE_FILES without CLONE_THREAD),
 * is ended by the exit work instead, just after.
 */
static int nxq_flush(struct file *file, fl_owner_t id)
{
	struct nxq_file *f = file->private_data;
	struct pid *pid = task_tgid(current);
	struct nxq_owner *o;

	if (!(current->flags & PF_EXITING) ||
	    atomic_read(&current->signal->live))
		return 0;
	mutex_lock(&f->lock);
	list_for_each_entry(o, &f->owners, link) {
		if (o->pid == pid) {
			nxq_owner_end(f, o);
			break;
		}
	}
	mutex_unlock(&f->lock);
	return 0;
}

/* ---- commands ---- */

/**
 * struct nxq_ioc - what this shell does for one ioctl command; the
 * command's rules (sizes, flags, checks) are nxq_abi_cmds[] (abi.c), at
 * the same index
 * @fn: the handler; @h is the caller's holder (a reference) or NULL
 * @fast: or NULL: tried first, under rcu_read_lock() with the holder
 *	found without a reference; must not sleep; returns NXQ_IOC_SLOW to
 *	have @fn run instead
 * @undo: called if copying the result out failed after @fn or @fast
 *	succeeded
 */
struct nxq_ioc {
	long (*fn)(struct nxq_file *f, struct nxq_holder *h, void *karg);
	long (*fast)(struct nxq_file *f, struct nxq_holder *h, void *karg);
	void (*undo)(struct nxq_file *f, struct nxq_holder *h, void *karg);
};

static long nxq_ioc_version(struct nxq_file *f, struct nxq_holder *h,
			    void *karg)
{
	nxq_abi_version(karg);
	return 0;
}

/*
 * The device proof (nxq_abi_devnode_check()) of the file given.  fget()
 * does not return an O_PATH file: such a descriptor is -EBADF before this.
 */
static void nxq_devnode(struct file *devf, struct nxq_abi_devnode *proof)
{
	struct inode *inode = devf ? file_inode(devf) : NULL;

	proof->given = devf;
	proof->chr = inode && S_ISCHR(inode->i_mode);
	proof->rdev = inode ? inode->i_rdev : 0;
}

/* nxq_abi_holder_new()'s node: the caller's cgroup's (@cgrp). */
static struct nxq_node *nxq_cgroup_node_of(struct nxq_device *dev, void *cgrp)
{
	return nxq_node_for_cgroup(dev, cgrp);
}

static long nxq_ioc_register(struct nxq_file *f, struct nxq_holder *unused,
			     void *karg)
{
	struct nxq_holder_reg *a = karg;
	struct eventfd_ctx *efd = NULL;
	struct nxq_abi_devnode proof;
	struct file *devf = NULL;
	struct nxq_holder *h;
	struct cgroup *cgrp;
	struct pid *owner;
	u32 id;
	int err;

	err = nxq_abi_register_check(a);
	if (err)
		return err;
	if (a->flags & NXQ_HOLDER_DEVFD) {
		devf = fget(a->devfd);
		if (!devf)
			return -EBADF;
	}
	if (a->eventfd >= 0) {
		efd = eventfd_ctx_fdget(a->eventfd);
		if (IS_ERR(efd)) {
			err = PTR_ERR(efd);
			efd = NULL;
			goto out_files;
		}
	}

	mutex_lock(&f->lock);
	if (f->nr_holders >= NXQ_MAX_HOLDERS_PER_FILE) {
		err = -EMFILE;
		goto out_unlock;
	}
	err = nxq_owner_watch(f);
	if (err)
		goto out_unlock;

	nxq_devnode(devf, &proof);
	cgrp = nxq_current_cgroup();
	owner = get_task_pid(current, PIDTYPE_TGID);
	mutex_lock(&nxq_ledger.lock);
	h = nxq_abi_holder_new(&nxq_ledger, a, &proof, nxq_cgroup_node_of, cgrp,
			       efd, owner, task_tgid_nr(current), &err);
	mutex_unlock(&nxq_ledger.lock);
	nxq_cgroup_put(cgrp);
	if (!h) {
		put_pid(owner);
		goto out_unlock;
	}
	efd = NULL;	/* the holder's now */

	err = xa_alloc_cyclic(&f->holders, &id, h, XA_LIMIT(1, INT_MAX),
			      &f->next_id, GFP_KERNEL_ACCOUNT);
	if (err < 0)
		goto out_put;
	a->holder_id = id;
	f->nr_holders++;
	mutex_unlock(&f->lock);
	if (devf)
		fput(devf);
	return 0;

out_put:
	nxq_file_holder_put(h);
out_unlock:
	mutex_unlock(&f->lock);
out_files:
	if (efd)
		eventfd_ctx_put(efd);
	if (devf)
		fput(devf);
	return err;
}

static long nxq_ioc_unregister(struct nxq_file *f, struct nxq_holder *h,
			       void *karg)
{
	struct nxq_holder_id *a = karg;
	struct nxq_holder *cur;

	mutex_lock(&f->lock);
	cur = xa_cmpxchg(&f->holders, a->holder_id, h, NULL, 0);
	if (cur == h)
		f->nr_holders--;
	mutex_unlock(&f->lock);
	if (cur != h)
		return -ENOENT;
	nxq_holder_end(h, nxq_free_holder_priv);	/* the file's reference */
	return 0;
}

/* The new id could not be copied out: take the holder back. */
static void nxq_ioc_register_undo(struct nxq_file *f, struct nxq_holder *unused,
				  void *karg)
{
	struct nxq_holder_reg *a = karg;
	struct nxq_holder_id un = { .holder_id = a->holder_id };
	struct nxq_holder *h = nxq_file_holder(f, a->holder_id);

	if (!h)
		return;
	nxq_ioc_unregister(f, h, &un);
	nxq_file_holder_put(h);
}

/**
 * nxq_holder_follow() - a holder follows the caller to its cgroup
 * @h: the holder, whose process is the caller
 *
 * A process moved to another cgroup charges its new cgroup from its next
 * charge on; what it charged before stays where it was (a residue).  The
 * move is refused where a registration there would be (holders_max,
 * priority_max: nxq_holder_rehome()).  Called before each charge, and as
 * the ledger's holder_follow hook by a charge that waits.
 *
 * Context: process context, the holder's process; sleeps; no ledger lock
 * held.
 * Return: 0 (also when it did not move), or the errno the move was
 * refused with: -EMFILE, -EPERM, -ENOMEM, -E2BIG, -ENOENT.
 */
int nxq_holder_follow(struct nxq_holder *h)
{
	struct nxq_device *dev = h->node->dev;
	struct cgroup *cgrp;
	u64 id;
	int err;

	rcu_read_lock();
	id = cgroup_id(task_dfl_cgroup(current));
	rcu_read_unlock();
	if (id == READ_ONCE(h->node)->id)
		return 0;
	cgrp = nxq_current_cgroup();
	mutex_lock(&nxq_ledger.lock);
	err = nxq_abi_rehome(h, nxq_node_for_cgroup(dev, cgrp));
	mutex_unlock(&nxq_ledger.lock);
	nxq_cgroup_put(cgrp);
	return err;
}

/* A fast handler's answer: run the handler with a holder reference. */
#define NXQ_IOC_SLOW	1

/*
 * A charge that will not wait, by a process still in its holder's
 * cgroup: nothing sleeps, so no holder reference (rcu_read_lock held).
 */
static long nxq_ioc_charge_fast(struct nxq_file *f, struct nxq_holder *h,
				void *karg)
{
	struct nxq_charge *a = karg;

	if (a->timeout_ns ||
	    cgroup_id(task_dfl_cgroup(current)) != READ_ONCE(h->node)->id)
		return NXQ_IOC_SLOW;
	return nxq_abi_charge(h, a, 0);
}

static long nxq_ioc_charge(struct nxq_file *f, struct nxq_holder *h,
			   void *karg)
{
	struct nxq_charge *a = karg;
	int err;

	nxq_abi_charge_refused(a, NULL);
	err = nxq_holder_follow(h);
	if (err)
		return err;
	return nxq_abi_charge(h, a, a->timeout_ns);
}

/* Unmapped meanwhile: a charge is undone, nothing is lost. */
static void nxq_ioc_charge_undo(struct nxq_file *f, struct nxq_holder *h,
				void *karg)
{
	struct nxq_charge *a = karg;

	nxq_uncharge(h, a->bytes, NULL);
}

static long nxq_ioc_uncharge(struct nxq_file *f, struct nxq_holder *h,
			     void *karg)
{
	struct nxq_charge *a = karg;

	return nxq_uncharge(h, a->bytes, &a->charged);
}

static long nxq_ioc_reclaimable(struct nxq_file *f, struct nxq_holder *h,
				void *karg)
{
	struct nxq_reclaimable *a = karg;

	return nxq_set_reclaimable(h, a->bytes);
}

static long nxq_ioc_status(struct nxq_file *f, struct nxq_holder *h,
			   void *karg)
{
	return nxq_abi_status(h, karg);
}

static long nxq_ioc_ticket_read(struct nxq_file *f, struct nxq_holder *h,
				void *karg)
{
	return nxq_abi_ticket_read(h, karg);
}

static long nxq_ioc_ticket_answer(struct nxq_file *f, struct nxq_holder *h,
				  void *karg)
{
	return nxq_abi_ticket_answer(h, karg);
}

static const struct nxq_ioc nxq_iocs[NXQ_ABI_NR_CMDS] = {
	[_IOC_NR(NXQ_IOC_VERSION)] = { .fn = nxq_ioc_version },
	[_IOC_NR(NXQ_IOC_HOLDER_REGISTER)] = { .fn = nxq_ioc_register,
					       .undo = nxq_ioc_register_undo },
	[_IOC_NR(NXQ_IOC_HOLDER_UNREGISTER)] = { .fn = nxq_ioc_unregister },
	[_IOC_NR(NXQ_IOC_CHARGE)] = { .fn = nxq_ioc_charge,
				      .undo = nxq_ioc_charge_undo,
				      .fast = nxq_ioc_charge_fast },
	[_IOC_NR(NXQ_IOC_UNCHARGE)] = { .fn = nxq_ioc_uncharge,
					.fast = nxq_ioc_uncharge },
	[_IOC_NR(NXQ_IOC_SET_RECLAIMABLE)] = { .fn = nxq_ioc_reclaimable },
	[_IOC_NR(NXQ_IOC_STATUS)] = { .fn = nxq_ioc_status },
	[_IOC_NR(NXQ_IOC_TICKET_READ)] = { .fn = nxq_ioc_ticket_read },
	[_IOC_NR(NXQ_IOC_TICKET_ANSWER)] = { .fn = nxq_ioc_ticket_answer },
};

static long nxq_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct nxq_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;
	const struct nxq_abi_cmd *op;
	const struct nxq_ioc *io;
	union nxq_abi_arg karg;
	struct nxq_holder *h = NULL;
	u32 usize;
	long err;

	op = nxq_abi_cmd(cmd);
	if (!op)
		return -ENOTTY;
	io = &nxq_iocs[_IOC_NR(cmd)];

	/* One head: size, copy-in, flags and checks, writability, holder. */
	if (get_user(usize, (u32 __user *)uarg))
		return -EFAULT;
	err = nxq_abi_size(op, usize);
	if (err)
		return err;
	memset(&karg, 0, sizeof(karg));
	err = copy_struct_from_user(&karg, op->ksize, uarg, usize);
	if (err)
		return err;
	err = nxq_abi_args(op, &karg);
	if (err)
		return err;
	/* A command that can be undone learns it after, not before. */
	if (op->out && !io->undo) {
		err = nxq_copy_out(uarg, &karg, op->ksize, usize);
		if (err)
			return err;
	}
	/*
	 * A handler that does not sleep uses the holder under RCU.  The
	 * charge and uncharge handlers are called directly when they are
	 * the table's: an indirect call is a retpoline, and this is the
	 * path every arena growth and shrink takes.
	 */
	if (io->fast) {
		rcu_read_lock();
		h = nxq_file_holder_rcu(f, karg.head.holder_id);
		err = h ? INDIRECT_CALL_2(io->fast, nxq_ioc_charge_fast,
					  nxq_ioc_uncharge, f, h, &karg) :
			  -ENOENT;
		rcu_read_unlock();
		if (err != NXQ_IOC_SLOW) {
			if (!err && op->out) {
				err = nxq_copy_out(uarg, &karg, op->ksize,
						   usize);
				h = err && io->undo ?
				    nxq_file_holder(f, karg.head.holder_id) :
				    NULL;
				if (h) {
					io->undo(f, h, &karg);
					nxq_file_holder_put(h);
				}
			} else if (h && nxq_abi_err_out(op, usize, err)) {
				/* (h: only tested, the handler's failure) */
				nxq_copy_err_out(uarg, &karg, op, usize);
			}
			return err;
		}
	}
	if (op->holder) {
		h = nxq_file_holder(f, karg.head.holder_id);
		if (!h)
			return -ENOENT;
	}

	err = io->fn(f, h, &karg);
	if (!err && op->out) {
		err = nxq_copy_out(uarg, &karg, op->ksize, usize);
		if (err && io->undo)
			io->undo(f, h, &karg);
	} else if (nxq_abi_err_out(op, usize, err)) {
		nxq_copy_err_out(uarg, &karg, op, usize);
	}
	if (h)
		nxq_file_holder_put(h);
	return err;
}

static int nxq_open(struct inode *inode, struct file *file)
{
	struct nxq_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	xa_init_flags(&f->holders, XA_FLAGS_ALLOC1 | XA_FLAGS_ACCOUNT);
	INIT_LIST_HEAD(&f->owners);
	INIT_WORK(&f->exit_work, nxq_file_exit_work);
	file->private_data = f;
	return nonseekable_open(inode, file);
}

static int nxq_release(struct inode *inode, struct file *file)
{
	struct nxq_file *f = file->private_data;
	struct nxq_owner *o, *tmp;
	struct nxq_holder *h;
	LIST_HEAD(owners);
	unsigned long id;

	/*
	 * No wake queues the exit work once the entries are off their
	 * queues, and the work finds no owner left to end; after the
	 * cancel, none runs: it would use @f.
	 */
	mutex_lock(&f->lock);
	list_for_each_entry(o, &f->owners, link)
		remove_wait_queue(&o->pid->wait_pidfd, &o->wqe);
	list_splice_init(&f->owners, &owners);
	mutex_unlock(&f->lock);
	cancel_work_sync(&f->exit_work);
	list_for_each_entry_safe(o, tmp, &owners, link) {
		list_del(&o->link);
		put_pid(o->pid);
		kfree(o);
		atomic_long_dec(&nxq_nr_owners);
	}
	xa_for_each(&f->holders, id, h) {
		xa_erase(&f->holders, id);
		nxq_holder_end(h, nxq_free_holder_priv);
	}
	xa_destroy(&f->holders);
	mutex_destroy(&f->lock);
	kfree(f);
	return 0;
}

static const struct file_operations nxq_fops = {
	.owner		= THIS_MODULE,
	.open		= nxq_open,
	.flush		= nxq_flush,
	.release	= nxq_release,
	.unlocked_ioctl	= nxq_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

/*
 * Root only until the udev rule (packaging/60-nxquota.rules) gives the
 * node its group: who may charge a device is the operator's choice.
 */
static struct miscdevice nxq_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= NXQ_DEVICE_NAME,
	.fops	= &nxq_fops,
	.mode	= 0600,
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
