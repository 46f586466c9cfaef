// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's client socket, the handlers: the module's character device
 * (kmod/cdev.c) commands, one request at a time on the loop.  The
 * commands' rules (sizes, flags, checks, registration's checks, the
 * device proof) are the ABI's (kmod/abi.c); this file checks a request
 * against them, finds the caller's holder and runs the command, and keeps
 * a request that cannot be answered in its turn (struct nxqd_rq, see
 * client.h): held by the grace window, or a charge waiting in the ledger
 * (its waiter, and a timer for its wake time).
 */
#include <linux/types.h>
#include <linux/nxquota.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"

/* Holders one connection may register (the module's per-file bound). */
#define NXQD_HOLDERS_PER_CONN	4096

/* ---- commands ---- */

/* Is @fd an eventfd?  (eventfd_ctx_fdget()'s -EINVAL otherwise.) */
static bool nxqd_is_eventfd(int fd)
{
	char link[64], target[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return !strcmp(target, "anon_inode:[eventfd]");
}

/*
 * The device proof of a received descriptor.  One opened O_PATH is not a
 * descriptor the module would take (fget() refuses it): -EBADF.
 */
static int nxqd_devnode(int devfd, struct nxq_abi_devnode *proof)
{
	struct stat st;
	int fl;

	memset(proof, 0, sizeof(*proof));
	if (devfd < 0)
		return 0;
	fl = fcntl(devfd, F_GETFL);
	if (fl < 0 || (fl & O_PATH) || fstat(devfd, &st))
		return -EBADF;
	proof->given = true;
	proof->chr = S_ISCHR(st.st_mode);
	proof->rdev = st.st_rdev;
	return 0;
}

/*
 * The node of @p's cgroup now on @dev, with a reference: found by the
 * cgroup's id when the pidfd tells it and the node exists, else made
 * from the path (/proc/PID/cgroup).
 */
static struct nxq_node *nxqd_proc_node(struct nxq_device *dev, void *proc)
{
	struct nxqd_proc *p = proc;
	struct nxq_node *node;
	char cg[PATH_MAX];
	u64 id;
	int err;

	lockdep_assert_held(&nxqd_ledger.lock);
	if (!nxqd_proc_cgroup_id(p, &id)) {
		node = nxq_node_find(dev, id);
		if (node && !nxqd_cgroup_key_dead(node->key))
			return nxq_node_get(dev, node->parent, id, NULL);
	}
	err = nxqd_proc_cgroup_path(p, cg, sizeof(cg));
	if (err)
		return ERR_PTR(err);
	return nxqd_node_for_path(dev, cg);
}

static int nxqd_ioc_register(struct nxqd_ctx *r, void *karg, u32 usize)
{
	struct nxq_holder_reg *a = karg;
	struct nxqd_conn *c = r->c;
	struct nxqd_tsig *sig = NULL;
	struct nxq_abi_devnode proof;
	struct nxq_holder *h;
	struct nxqd_hent *e;
	bool notify = r->flags & NXQD_REQ_NOTIFY;
	int want, evfd = -1, devfd = -1, err, i;
	u64 id;

	err = nxq_abi_register_check(a);
	if (err)
		return err;
	/* told on its connection, or through an eventfd: not both */
	if (notify && a->eventfd >= 0)
		return -EINVAL;
	if (!r->caller) {
		nxqd_cl.creds_refused++;
		return -EPERM;
	}
	/* the eventfd (iff eventfd >= 0), then the devfd (iff DEVFD) */
	want = (a->eventfd >= 0) + !!(a->flags & NXQ_HOLDER_DEVFD);
	if (r->fds_trunc || r->nr_fds != want)
		return -EBADF;
	i = 0;
	if (a->eventfd >= 0)
		evfd = r->fds[i++];
	if (a->flags & NXQ_HOLDER_DEVFD)
		devfd = r->fds[i++];
	if (evfd >= 0 && !nxqd_is_eventfd(evfd))
		return -EINVAL;
	err = nxqd_devnode(devfd, &proof);
	if (err)
		return err;
	if (c->nr_holders >= NXQD_HOLDERS_PER_CONN)
		return -EMFILE;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	/* it can be asked if it can be told: a notice, or its eventfd */
	if (evfd >= 0 || notify) {
		sig = nxqd_tsig_new(evfd);
		if (!sig) {
			free(e);
			return -ENOMEM;
		}
	}
	/* the owner is the process: the ledger only stores it (holder_kill) */
	mutex_lock(&nxqd_ledger.lock);
	h = nxq_abi_holder_new(&nxqd_ledger, a, &proof, nxqd_proc_node,
			       r->caller, sig, &r->caller->owner,
			       r->caller->tgid, &err);
	mutex_unlock(&nxqd_ledger.lock);
	/* the eventfd is the signal's now (closed with it) */
	for (i = 0; sig && evfd >= 0 && i < r->nr_fds; i++)
		if (r->fds[i] == evfd)
			r->fds[i] = -1;
	if (!h) {
		if (sig)
			nxqd_tsig_put(sig);
		free(e);
		return err;
	}
	/*
	 * ids are not reused while the daemon runs (2^32 registrations), nor
	 * those the record has from before a restart
	 */
	if (!nxqd_cl.ids_started) {
		nxqd_cl.next_id = nxqd_record_max_id();
		nxqd_cl.ids_started = true;
	}
	do
		id = (nxqd_cl.next_id++ % U32_MAX) + 1;
	while (nxqd_hent_find(id));
	e->id = id;
	e->h = h;
	e->proc = r->caller;
	nxqd_proc_hold(e->proc);
	e->conn = c;
	INIT_LIST_HEAD(&e->note_link);
	/* its notices are told to it (none is queued yet: it holds nothing) */
	if (notify)
		nxqd_tsig_own(sig, e);
	strscpy(e->device, a->device, sizeof(e->device));
	list_add_tail(&e->conn_link, &c->holders);
	list_add_tail(&e->proc_link, &e->proc->holders);
	e->hnext = *nxqd_hent_slot(id);
	*nxqd_hent_slot(id) = e;
	c->nr_holders++;
	/* after a restart: a restore claims what the holder held */
	if (r->flags & NXQD_REQ_RESTORE)
		e->rec = nxqd_grace_claim(e->proc->tgid, e->proc->start,
					  a->holder_id, a->device);
	a->holder_id = id;
	return 0;
}

/* The holder @id of the calling process, or NULL. */
static struct nxqd_hent *nxqd_caller_hent(struct nxqd_ctx *r, u64 id)
{
	struct nxqd_hent *e;

	if (!id || id > U32_MAX)
		return NULL;
	e = nxqd_hent_find(id);
	if (!e || !r->caller || e->proc != r->caller || e->proc->dead)
		return NULL;
	return e;
}

static int nxqd_ioc_unregister(struct nxqd_ctx *r, struct nxqd_hent *e,
			       void *karg, u32 usize)
{
	nxqd_hent_end(e);
	return 0;
}

/*
 * The module's nxq_holder_follow(): a process moved to another cgroup
 * charges its new cgroup from its next charge on; what it charged before
 * stays where it was (a residue); the move is refused where a
 * registration there would be (nxq_holder_rehome()).  Through the pidfd,
 * a look at the cgroup's id; else its path from /proc/PID/cgroup.
 */
static int nxqd_follow_cgroup(struct nxq_holder *h, struct nxqd_proc *p)
{
	struct nxq_node *cur = READ_ONCE(h->node);
	struct nxq_device *dev = cur->dev;
	char cg[PATH_MAX];
	u64 id;
	int err;

	err = nxqd_proc_cgroup_id(p, &id);
	if (!err && id == cur->id)
		return 0;
	if (err == -ESRCH)
		return 0;	/* exiting: its holders end */
	if (nxqd_proc_cgroup_path(p, cg, sizeof(cg)))
		return 0;
	if (!strcmp(cg, nxqd_cgroup_key_path(cur->key)))
		return 0;
	mutex_lock(&nxqd_ledger.lock);
	err = nxq_abi_rehome(h, nxqd_node_for_path(dev, cg));
	mutex_unlock(&nxqd_ledger.lock);
	return err;
}

/* The ledger's holder_follow hook: a waiting charge's process moved? */
int nxqd_holder_follow(struct nxq_holder *h)
{
	return nxqd_follow_cgroup(h, nxqd_proc_of_owner(h->owner));
}

/*
 * A charge's answer is due: the record follows the holder's charge
 * before it is sent (restart.c).  Return: 0, or the record's -errno when
 * the charge grew and could not be written down: the caller undoes it.
 */
static int nxqd_charged(u64 id, struct nxq_holder *h, u64 charged)
{
	struct nxqd_hent *e = nxqd_hent_find(id);
	struct nxqd_rec_line l;
	int err;

	if (!e || e->h != h || e->charged == charged)
		return 0;
	l = (struct nxqd_rec_line){
		.pid = e->proc->tgid, .start = e->proc->start, .id = e->id,
		.device = e->device, .charge = charged,
	};
	err = nxqd_record_note(&l, e->rec);
	if (err && charged > e->charged)
		return err;
	/* (a shrink not written leaves the record above it: no harm) */
	e->charged = charged;
	return 0;
}

/* A granted charge the record could not take is undone and refused. */
static int nxqd_granted(u64 id, struct nxq_holder *h, struct nxq_charge *a)
{
	int err;

	if (a->flags & NXQ_CHARGE_PROBE)
		return 0;
	err = nxqd_charged(id, h, a->charged);
	if (err)
		nxq_uncharge(h, a->bytes, &a->charged);
	return err;
}

static void nxqd_rq_free(struct nxqd_rq *q)
{
	struct nxqd_conn *c = q->c;

	nxqd_holder_put(q->h);
	nxqd_proc_put(q->proc);
	c->busy = NULL;
	free(q);
	nxqd_conn_resume(c);
}

/*
 * The path of the node that refused @a, as @p (the caller) sees it, into
 * @buf: its length, or 0 when not named (the device, a node above the
 * caller's cgroup namespace or gone, no room asked for).
 */
static u32 nxqd_refused_path(struct nxqd_proc *p, struct nxq_holder *h,
			     const struct nxq_charge *a, char *buf, size_t len)
{
	struct nxq_node *node;
	const char *root;
	u32 n = 0;

	if (!a->path || !a->refused_id ||
	    a->refused_level == NXQ_LEVEL_DEVICE ||
	    nxqd_proc_cgns_root(p, &root))
		return 0;
	len = min_t(size_t, len, a->path_size);
	mutex_lock(&nxqd_ledger.lock);
	node = nxq_node_find(h->node->dev, a->refused_id);
	if (node && !nxqd_cgroup_view(nxqd_cgroup_key_path(node->key), root,
				      buf, len))
		n = strlen(buf);
	mutex_unlock(&nxqd_ledger.lock);
	return n;
}

/*
 * The reply to a charge: a refusal to a caller of version 1 says what
 * refused (nxq_abi_err_out()), its node's path after the struct.
 */
int nxqd_reply_charge(struct nxqd_conn *c, int err, struct nxqd_proc *p,
		      struct nxq_holder *h, struct nxq_charge *a, u32 usize)
{
	const struct nxq_abi_cmd *op = nxq_abi_cmd(NXQ_IOC_CHARGE);
	char path[NXQD_ARG_MAX - sizeof(*a)];

	if (!nxq_abi_err_out(op, usize, err))
		return nxqd_reply(c, err, op, a, usize, NULL, 0);
	a->path_len = nxqd_refused_path(p, h, a, path, sizeof(path));
	return nxqd_reply(c, err, op, a, usize, path,
			  a->path_len ? a->path_len + 1 : 0);
}

/* A request in progress is answered. */
void nxqd_rq_done(struct nxqd_rq *q)
{
	struct nxq_charge *a = (void *)&q->karg;
	struct nxqd_conn *c = q->c;
	int err = q->err;

	if (q->op->cmd == NXQ_IOC_CHARGE && !err)
		err = nxqd_granted(q->id, q->h, a);
	if (q->restore)
		nxqd_grace_restore_result(q->h->node->dev->key, a->bytes, err);
	if (nxqd_reply_charge(c, err, q->proc, q->h, a, q->usize) && !err) {
		/* unsent: a charge is undone, nothing is lost */
		nxq_uncharge(q->h, a->bytes, NULL);
		nxqd_charged(q->id, q->h, q->h->charge);
	}
	nxqd_rq_free(q);
}

/* A waiting charge is decided: its end in the ledger, then its answer. */
static void nxqd_rq_finish(struct nxqd_rq *q)
{
	struct nxq_charge *a = (void *)&q->karg;
	struct nxq_refusal_rec r;

	nxqd_timer_cancel(&q->timer);
	q->waiting = false;
	q->err = nxq_charge_end(&q->w, &a->charged, &r);
	nxq_abi_charge_refused(a, &r);
	nxqd_rq_done(q);
}

/*
 * The ledger settled a waiting charge (granted it, moved it, or ended its
 * holder): its timer is made due, and the loop answers it in this turn.
 * Under the device lock: nothing of the ledger is called here.
 */
static void nxqd_rq_settled(struct nxq_waiter *w)
{
	nxqd_timer_arm(&container_of(w, struct nxqd_rq, w)->timer, 0);
}

/* A waiting charge's timer: settled, or its wake time came. */
static void nxqd_rq_tick(struct nxqd_timer *t)
{
	struct nxqd_rq *q = container_of(t, struct nxqd_rq, timer);

	if (nxq_charge_tick(&q->w) == NXQ_CHARGE_QUEUED) {
		nxqd_timer_arm(&q->timer, q->w.wake_ns);
		return;
	}
	nxqd_rq_finish(q);
}

/**
 * nxqd_rq_cancel() - a waiting charge's connection hung up
 * @q: the request, waiting in the ledger
 *
 * It ends as interrupted, ungranted (unless the ledger granted it in this
 * turn: then the answer is sent, and undone if it cannot be), and its
 * request is answered and freed now.
 */
void nxqd_rq_cancel(struct nxqd_rq *q)
{
	nxq_charge_cancel(&q->w, -EINTR);
	nxqd_rq_finish(q);
}

/*
 * Charge now: no wait (or a probe) decided at once; a wait that is not
 * granted at once is queued in the ledger, and its timer armed for its
 * wake time.  Return: the errno to answer, or 1 when the answer will come
 * from its timer (nxqd_rq_tick()).
 */
static int nxqd_charge_now(struct nxqd_rq *q, u64 timeout)
{
	struct nxq_charge *a = (void *)&q->karg;
	struct nxq_refusal_rec r;
	int err;

	if ((a->flags & NXQ_CHARGE_PROBE) || !timeout)
		return nxq_abi_charge(q->h, a, 0);
	if (nxq_try_charge(q->h, a->bytes, &a->charged))
		return 0;
	err = nxq_charge_begin(q->h, &q->w, a->bytes, timeout, 0,
			       nxqd_rq_settled);
	if (err == NXQ_CHARGE_QUEUED) {
		q->waiting = true;
		nxqd_timer_arm(&q->timer, q->w.wake_ns);
		return 1;
	}
	err = nxq_charge_end(&q->w, &a->charged, &r);
	nxq_abi_charge_refused(a, &r);
	return err;
}

/* The grace window let a held charge go, or its timeout ran out. */
static void nxqd_rq_release(struct nxqd_held *held, int err)
{
	struct nxqd_rq *q = container_of(held, struct nxqd_rq, held);
	struct nxq_charge *a = (void *)&q->karg;
	u64 spent = nxqd_now() - q->t0, timeout = 0;

	if (!err && a->timeout_ns) {
		/* the wait in the window counts against the charge's */
		if (spent >= a->timeout_ns)
			err = -ETIMEDOUT;
		else
			timeout = a->timeout_ns - spent;
	}
	if (!err) {
		err = nxqd_charge_now(q, timeout);
		if (err == 1)
			return;
	}
	q->err = err;
	nxqd_rq_done(q);
}

/*
 * A refusal may be owed to a process that has exited, whose exit the loop
 * has not handled yet: its pidfd is readable from its exit_notify(), before
 * its parent's wait() returns, so a supervisor that reaped a worker and
 * started another could meet the old one's charge.  Handle the exits that
 * are ready (O(exited)).  Return: 1 some were, try again; 0 none; -1 the
 * caller was one of them (its hent is gone: touch nothing of it).
 */
static int nxqd_exits_first(struct nxqd_hent *e)
{
	struct nxqd_proc *p = e->proc;
	bool any, dead;

	nxqd_proc_hold(p);
	any = nxqd_proc_reap();
	dead = p->dead;
	nxqd_proc_put(p);
	return dead ? -1 : any;
}

static bool nxqd_refused(int err)
{
	return err == -EDQUOT || err == -ENOSPC;
}

/*
 * A charge or probe that does not wait; see nxqd_exits_first().  It is
 * first tried as a probe, whose refusal is not counted, reported or asked
 * for, so that a refusal the exits then undo leaves no denial behind; any
 * refusal that stands (EDQUOT and ENOSPC after the exits, EOVERFLOW and
 * the rest at once) is then the charge's own, said once (counted, an
 * event, tickets asked), as the module says it.
 */
static int nxqd_charge_nowait(struct nxqd_hent *e, struct nxq_charge *a)
{
	int err, ex;

	err = nxq_charge_probe(e->h, a->bytes, &a->charged);
	if (!err)
		return 0;
	if (nxqd_refused(err)) {
		ex = nxqd_exits_first(e);
		if (ex < 0)
			return err;
		if (ex > 0) {
			err = nxq_charge_probe(e->h, a->bytes, &a->charged);
			if (!err)
				return 0;
		}
	}
	if (a->flags & NXQ_CHARGE_PROBE)
		return err;
	/* any other refusal too (EOVERFLOW, ...) is the charge's to count */
	return nxq_abi_charge(e->h, a, 0);
}

static int nxqd_ioc_charge(struct nxqd_ctx *r, struct nxqd_hent *e,
			   void *karg, u32 usize)
{
	struct nxq_charge *a = karg;
	struct nxqd_conn *c = r->c;
	struct nxqd_grace_ask ask = {
		.pid = e->proc->tgid, .start = e->proc->start,
		.device = e->device, .bytes = a->bytes,
		.v1 = r->version > 0, .restore = r->flags & NXQD_REQ_RESTORE,
		.first = !e->asked, .rec = e->rec,
		.timeout_ns = a->timeout_ns,
	};
	struct nxqd_rec_holder *claim = NULL;
	enum nxqd_verdict v;
	struct nxqd_rq *q;
	int err;

	nxq_abi_charge_refused(a, NULL);
	err = nxqd_follow_cgroup(e->h, e->proc);
	if (err)
		return err;
	/* the common case, answered in this turn: no window, no wait */
	if (!nxqd_grace_open() &&
	    (!a->timeout_ns || nxq_try_charge(e->h, a->bytes, &a->charged))) {
		e->asked = true;
		if ((a->flags & NXQ_CHARGE_PROBE) || !a->timeout_ns)
			err = nxqd_charge_nowait(e, a);
		if (!err)
			err = nxqd_granted(e->id, e->h, a);
		return err;	/* (an unsent reply undoes it: nxqd_handle) */
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	INIT_LIST_HEAD(&q->held.link);
	nxqd_timer_init(&q->timer, nxqd_rq_tick);
	q->c = c;
	q->h = e->h;
	kref_get(&q->h->ref);
	q->id = e->id;
	q->proc = e->proc;
	nxqd_proc_hold(q->proc);
	q->pid = e->proc->tgid;
	q->start = e->proc->start;
	q->op = nxq_abi_cmd(NXQ_IOC_CHARGE);
	memcpy(&q->karg, karg, q->op->ksize);
	q->usize = usize;
	q->version = r->version;
	q->flags = r->flags;
	q->t0 = r->t0;
	/* in progress: only a hang-up is watched until it is answered */
	c->busy = q;
	c->refs++;
	nxqd_watch_mod(&c->w, EPOLLRDHUP);
	/* after a restart, the listed clients restore first */
	v = nxqd_grace_charge(&ask, &q->held, &claim);
	if (v != NXQD_AGAIN)
		e->asked = true;	/* (-EAGAIN: its first is still to come) */
	if (claim)
		e->rec = claim;		/* v0: its line ends with this one's */
	switch (v) {
	case NXQD_AGAIN:
		err = -EAGAIN;
		break;
	case NXQD_BEYOND:
		err = -ERANGE;
		break;
	case NXQD_HOLD:
		q->held.release = nxqd_rq_release;
		nxqd_grace_hold(&q->held, a->timeout_ns);
		return 1;
	case NXQD_PASS_RESTORE:
		q->restore = true;
		fallthrough;
	case NXQD_PASS:
		err = nxqd_charge_now(q, a->timeout_ns);
		if (err == 1)
			return 1;	/* answered from its timer */
		break;
	}
	q->err = err;
	nxqd_rq_done(q);
	return 1;	/* answered */
}

static int nxqd_ioc_uncharge(struct nxqd_ctx *r, struct nxqd_hent *e,
			     void *karg, u32 usize)
{
	struct nxq_charge *a = karg;
	int err;

	err = nxq_uncharge(e->h, a->bytes, &a->charged);
	if (!err)
		nxqd_charged(e->id, e->h, a->charged);
	return err;
}

static int nxqd_ioc_reclaimable(struct nxqd_ctx *r, struct nxqd_hent *e,
				void *karg, u32 usize)
{
	struct nxq_reclaimable *a = karg;

	return nxq_set_reclaimable(e->h, a->bytes);
}

static int nxqd_ioc_status(struct nxqd_ctx *r, struct nxqd_hent *e,
			   void *karg, u32 usize)
{
	return nxq_abi_status(e->h, karg);
}

static int nxqd_ioc_ticket_read(struct nxqd_ctx *r, struct nxqd_hent *e,
				void *karg, u32 usize)
{
	/* what a notice sent said is read: the next raise sends another */
	e->noted = false;
	return nxq_abi_ticket_read(e->h, karg);
}

static int nxqd_ioc_ticket_answer(struct nxqd_ctx *r, struct nxqd_hent *e,
				  void *karg, u32 usize)
{
	struct nxq_ticket_answer *a = karg;
	int err;

	err = nxq_abi_ticket_answer(e->h, a);
	nxqd_charged(e->id, e->h, a->charged);
	return err;
}

/*
 * NXQ_IOC_CHARGE, answered here or by its request in progress.  The
 * holder and its process are held across it: a charge refused once the
 * caller's own exit was handled (nxqd_exits_first()) has ended its hent,
 * and the reply still names what refused (nxqd_reply_charge()).
 * Return: 1 (answered, or to be).
 */
static int nxqd_charge_answer(struct nxqd_ctx *r, struct nxqd_hent *e,
			      void *karg, u32 usize)
{
	struct nxqd_proc *p = e->proc;
	struct nxq_holder *h = e->h;
	struct nxq_charge *a = karg;
	u64 id = e->id;
	int err;

	nxqd_proc_hold(p);
	kref_get(&h->ref);
	err = nxqd_ioc_charge(r, e, karg, usize);
	if (err != 1 && nxqd_reply_charge(r->c, err, p, h, a, usize) && !err) {
		/* the reply could not be sent: undo, as a failed copy-out */
		nxq_uncharge(h, a->bytes, &a->charged);
		nxqd_charged(id, h, a->charged);
	}
	nxqd_holder_put(h);
	nxqd_proc_put(p);
	return 1;
}

/* What this shell does for each command of nxq_abi_cmds[]. */
typedef int (*nxqd_hfn)(struct nxqd_ctx *r, struct nxqd_hent *e, void *karg,
			u32 usize);
static const nxqd_hfn nxqd_handlers[NXQ_ABI_NR_CMDS] = {
	[_IOC_NR(NXQ_IOC_HOLDER_UNREGISTER)] = nxqd_ioc_unregister,
	[_IOC_NR(NXQ_IOC_CHARGE)] = nxqd_charge_answer,
	[_IOC_NR(NXQ_IOC_UNCHARGE)] = nxqd_ioc_uncharge,
	[_IOC_NR(NXQ_IOC_SET_RECLAIMABLE)] = nxqd_ioc_reclaimable,
	[_IOC_NR(NXQ_IOC_STATUS)] = nxqd_ioc_status,
	[_IOC_NR(NXQ_IOC_TICKET_READ)] = nxqd_ioc_ticket_read,
	[_IOC_NR(NXQ_IOC_TICKET_ANSWER)] = nxqd_ioc_ticket_answer,
};

/* The flags each command takes at @version. */
static u16 nxqd_req_flags(unsigned int cmd, u16 version)
{
	switch (cmd) {
	case NXQ_IOC_HOLDER_REGISTER:
		return NXQD_REQ_RESTORE | (version >= 2 ? NXQD_REQ_NOTIFY : 0);
	case NXQ_IOC_CHARGE:
		return NXQD_REQ_RESTORE;
	case NXQ_IOC_VERSION:
		return NXQD_REQ_RESTORED;
	}
	return 0;
}

/*
 * One request of @len bytes; the module's nxq_ioctl() head with the
 * ABI's rules.  Return: the errno to answer with, or 1 when it is
 * answered already (or will be).
 */
int nxqd_handle(struct nxqd_ctx *r, size_t len)
{
	const unsigned char *msg = nxqd_cl.msg;
	const struct nxqd_req *req = (const void *)msg;
	const struct nxq_abi_cmd *op;
	union nxq_abi_arg karg;
	struct nxqd_hent *e = NULL;
	size_t i, alen;
	u32 usize;
	int err;

	if (len < sizeof(*req) + sizeof(__u32))
		return -EINVAL;
	if (req->version > NXQD_PROTO_VERSION)
		return -EPROTONOSUPPORT;
	if (req->flags && !req->version)
		return -EINVAL;
	r->version = req->version;
	r->flags = req->flags;
	op = nxq_abi_cmd(req->cmd);
	if (!op)
		return -ENOTTY;
	if (r->flags & ~nxqd_req_flags(op->cmd, r->version))
		return -EINVAL;
	alen = len - sizeof(*req);
	memcpy(&usize, msg + sizeof(*req), sizeof(usize));
	if (usize != alen)
		return -EINVAL;	/* the message is the struct, all of it */
	err = nxq_abi_size(op, usize);
	if (err)
		return err;
	/* copy_struct_from_user()'s rule: what we do not know must be 0 */
	for (i = op->ksize; i < usize; i++)
		if (msg[sizeof(*req) + i])
			return -E2BIG;
	/* descriptors come with HOLDER_REGISTER only */
	if ((r->nr_fds || r->fds_trunc) &&
	    op->cmd != NXQ_IOC_HOLDER_REGISTER) {
		nxqd_conn_penalize(&r->c->slot);
		return -EINVAL;
	}
	memset(&karg, 0, sizeof(karg));
	memcpy(&karg, msg + sizeof(*req), min_t(size_t, usize, op->ksize));
	err = nxq_abi_args(op, &karg);
	if (err)
		return err;
	if (op->cmd == NXQ_IOC_VERSION) {
		nxq_abi_version((void *)&karg);
		if ((r->flags & NXQD_REQ_RESTORED) && r->caller)
			nxqd_grace_done(r->caller->tgid, r->caller->start);
	} else if (op->cmd == NXQ_IOC_HOLDER_REGISTER) {
		err = nxqd_ioc_register(r, &karg, usize);
	} else {
		/* a holder is its process's: another sender has none */
		e = nxqd_caller_hent(r, karg.head.holder_id);
		if (!e) {
			if (!r->caller)
				nxqd_cl.creds_refused++;
			return -ENOENT;
		}
		err = nxqd_handlers[_IOC_NR(op->cmd)](r, e, &karg, usize);
		if (err == 1)
			return 1;
	}
	if (nxqd_reply(r->c, err, op, &karg, usize, NULL, 0) && !err &&
	    op->cmd == NXQ_IOC_HOLDER_REGISTER) {
		/* the reply could not be sent: undo, as a failed copy-out */
		e = nxqd_hent_find(((struct nxq_holder_reg *)&karg)->holder_id);
		if (e)
			nxqd_hent_end(e);
	}
	return 1;
}
