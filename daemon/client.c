// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's client socket: the module's character device (kmod/cdev.c)
 * over a SOCK_SEQPACKET unix socket (<linux/nxquotad.h>), on the loop.
 * The commands' rules (sizes, flags, checks, registration's checks, the
 * device proof) are the ABI's (kmod/abi.c); this file has the transport,
 * who the caller is, the holders' table and the handlers.
 *
 * Identity is the kernel's: the process that connected (SO_PEERCRED,
 * pinned by SO_PEERPIDFD, proc.c), whose credentials every request it
 * sends carries (SCM_CREDENTIALS).  A request whose credentials name
 * another process is believed only where no one but root could have
 * named it (nxqd_caller()); otherwise it is refused -- a holder command
 * with -ENOENT (none of the holders is the sender's), a registration with
 * -EPERM -- so a tenant that is root in its own user and pid namespaces
 * cannot make a decoy the owner of its holders.
 *
 * Objects (all the loop's):
 *  - struct nxqd_conn: one per connection, from accept to its close; a
 *    reference from the loop and one from a request in progress (held by
 *    the grace window, or waiting in the ledger).
 *  - struct nxqd_hent: one per holder, in the holders' table (id ->
 *    hent) from registration to its end -- HOLDER_UNREGISTER, the close of
 *    the connection it was registered on, or the exit of its process --
 *    each of which detaches (uncharges) it.  It holds the table's
 *    reference on the holder and a reference on its process.  Any
 *    connection of the registering process may use it.
 *  - struct nxqd_rq: a request that could not be answered in its turn:
 *    held by the grace window (restart.c), or a charge waiting in the
 *    ledger, which runs as a fiber (compat/uk.c): nxq_charge() parks in
 *    nxq_sleep() as it sleeps in the module, and no thread is spent on
 *    it.  It holds a reference on its holder and its connection.  While
 *    one is in progress its connection is not read; a hang-up ends the
 *    wait (the fiber's task is signalled) and nothing is granted.
 *
 * Bounds: connections in all (-N), per tenant subtree (-K), per uid (-U),
 * per process (-P), with room kept per subtree (-Q): conns.c; holders per
 * connection.  A connection over a bound is closed at once and counted.
 *
 * The eventfds are written by signal.c's thread: no tenant's file is
 * written on the loop or under a ledger lock.
 *
 * Size (over 800 lines): the transport, the caller's identity, the
 * holders' table and the handlers of the ABI's command table; the split to
 * make is identity (with proc.c) and the handlers (client-cmd.c), left for
 * a change that can run nxquotad's attack tests against each step.
 */
#include <linux/types.h>
#include <linux/nxquota.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "nxqd.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD	77
#endif

/* Holders one connection may register (the module's per-file bound). */
#define NXQD_HOLDERS_PER_CONN	4096

/*
 * Descriptors received in one message: the most a command takes (the
 * registration's eventfd and device proof).  More are not installed
 * (MSG_CTRUNC: the kernel drops them) and the message is refused whole;
 * each installed one costs a close(), so a tenant that passes SCM_MAX_FD
 * with every request makes the daemon close 2, not 8 (issue 32).
 */
#define NXQD_FDS_RECV		2

/* ---- objects ---- */

struct nxqd_conn {
	struct nxqd_watch w;
	struct list_head link;		/* nxqd_cl.conns */
	struct nxqd_proc *proc;		/* the peer */
	struct ucred peer;		/* SO_PEERCRED */
	struct nxqd_slot slot;		/* its place in conns.c's counts */
	struct list_head holders;	/* registered on it */
	unsigned int nr_holders;
	struct nxqd_rq *busy;		/* a request in progress */
	void *out;			/* a reply the socket had no room for */
	size_t outlen;
	unsigned int refs;
	bool closed;
};

struct nxqd_hent {
	u64 id;
	struct nxq_holder *h;		/* the table's reference */
	struct nxqd_proc *proc;		/* a reference */
	struct nxqd_conn *conn;		/* the registering connection */
	struct list_head conn_link, proc_link;
	struct nxqd_hent *hnext;
	char device[NXQ_DEVICE_KEY_MAX];
	u64 charged;			/* as last answered */
	bool asked;			/* v0: a charge was asked on it */
	struct nxqd_rec_holder *rec;	/* v1: its restore's claim */
};

struct nxqd_rq {
	struct nxqd_conn *c;		/* a reference */
	struct nxq_holder *h;		/* a reference */
	u64 id;
	pid_t pid;			/* the holder's process */
	u64 start;
	const struct nxq_abi_cmd *op;
	union nxq_abi_arg karg;
	u32 usize;
	u16 version, flags;
	u64 t0;				/* received (ns) */
	bool restore;			/* a restore within the record */
	struct nxqd_held held;
	struct task_struct *task;	/* its fiber, while it waits */
	int err;
};

#define NXQD_HENT_BUCKETS	4096

static struct {
	int lfd;
	struct nxqd_watch lw;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct list_head conns;
	struct nxqd_hent *hents[NXQD_HENT_BUCKETS];
	u64 next_id;
	bool ids_started;
	u64 conns_refused, creds_refused;
	int spare_fd;			/* given up when out of descriptors */
	/* one request at a time: the loop's buffers */
	unsigned char msg[sizeof(struct nxqd_req) + NXQD_ARG_MAX + 1]
		__aligned(8);
	unsigned char rep[sizeof(struct nxqd_rep) + NXQD_ARG_MAX]
		__aligned(8);
} nxqd_cl = {
	.lfd = -1,
	.conns = LIST_HEAD_INIT(nxqd_cl.conns),
	.spare_fd = -1,
};

/* One request's context: who sent it and the descriptors it carried. */
struct nxqd_ctx {
	struct nxqd_conn *c;
	struct ucred cred;		/* its SCM_CREDENTIALS */
	bool have_cred;
	struct nxqd_proc *caller;	/* who asks, or NULL: refused */
	bool caller_ref;		/* a reference of ours on it */
	u16 version, flags;
	int fds[NXQD_FDS_RECV];
	int nr_fds;
	bool fds_trunc;
	u64 t0;
};

static void nxqd_conn_close(struct nxqd_conn *c);
static void nxqd_conn_resume(struct nxqd_conn *c);

/* ---- holders ---- */

static struct nxqd_hent **nxqd_hent_slot(u64 id)
{
	return &nxqd_cl.hents[id % NXQD_HENT_BUCKETS];
}

static struct nxqd_hent *nxqd_hent_find(u64 id)
{
	struct nxqd_hent *e;

	for (e = *nxqd_hent_slot(id); e; e = e->hnext)
		if (e->id == id)
			return e;
	return NULL;
}

static void nxqd_free_priv(struct nxq_holder *h)
{
	if (h->priv)
		nxqd_efd_put(h->priv);
}

static void nxqd_holder_put(struct nxq_holder *h)
{
	nxq_holder_put(h, nxqd_free_priv);
}

/* The ledger's holder_signal hook: queue a +1 on its eventfd. */
void nxqd_holder_signal(struct nxq_holder *h)
{
	if (h->priv)
		nxqd_efd_signal(h->priv);
}

/* The ledger's holder_kill hook: SIGKILL the registering process. */
void nxqd_holder_kill(struct nxq_holder *h)
{
	nxqd_proc_kill((struct nxqd_proc *)h->owner);
}

/* End a holder: out of the table, detached (uncharged), references gone. */
static void nxqd_hent_end(struct nxqd_hent *e)
{
	struct nxqd_hent **pp = nxqd_hent_slot(e->id);
	struct nxqd_rec_line l = {
		.pid = e->proc->tgid, .start = e->proc->start, .id = e->id,
		.device = e->device, .charge = 0,
	};

	/* out of the record (a failed write leaves a line a restore can't claim) */
	if (e->charged)
		nxqd_record_note(&l, e->rec);
	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == e) {
			*pp = e->hnext;
			break;
		}
	}
	list_del(&e->conn_link);
	list_del(&e->proc_link);
	e->conn->nr_holders--;
	nxq_holder_end(e->h, nxqd_free_priv);	/* the table's reference */
	nxqd_proc_put(e->proc);
	free(e);
}

/* The exit of a process: its holders end, whoever has its connections. */
static void nxqd_proc_gone(struct nxqd_proc *p)
{
	struct nxqd_hent *e, *tmp;

	list_for_each_entry_safe(e, tmp, &p->holders, proc_link)
		nxqd_hent_end(e);
}

static void nxqd_record_list(void (*emit)(void *ctx,
					  const struct nxqd_rec_line *l),
			     void *ctx)
{
	struct nxqd_hent *e;
	size_t i;

	for (i = 0; i < NXQD_HENT_BUCKETS; i++) {
		for (e = nxqd_cl.hents[i]; e; e = e->hnext) {
			struct nxqd_rec_line l = {
				.pid = e->proc->tgid, .start = e->proc->start,
				.id = e->id, .device = e->device,
				.charge = e->charged,
			};

			if (!e->proc->dead)
				emit(ctx, &l);
		}
	}
}

static const struct nxqd_restart_ops nxqd_client_restart_ops = {
	.list = nxqd_record_list,
};

/* ---- replies ---- */

/*
 * Send a reply; -EAGAIN keeps it for when the socket has room (the
 * connection is then not read), another error means the peer is gone.
 */
static int nxqd_send(struct nxqd_conn *c, const void *buf, size_t len)
{
	ssize_t n;

	if (c->closed)
		return -EPIPE;
	n = send(c->w.fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n == (ssize_t)len)
		return 0;
	if (n < 0 && errno == EAGAIN) {
		c->out = malloc(len);
		if (!c->out)
			return -ENOMEM;
		memcpy(c->out, buf, len);
		c->outlen = len;
		nxqd_watch_mod(&c->w, EPOLLOUT | EPOLLRDHUP);
		return 0;
	}
	return n < 0 ? -errno : -EPIPE;
}

/* Build and send the reply to @op with @err; its output from @karg. */
static int nxqd_reply(struct nxqd_conn *c, int err,
		      const struct nxq_abi_cmd *op, const void *karg,
		      u32 usize)
{
	struct nxqd_rep *rp = (void *)nxqd_cl.rep;
	size_t outlen = 0;

	memset(rp, 0, sizeof(*rp));
	rp->err = err;
	rp->version = NXQD_PROTO_VERSION;
	if (!err && op && op->out) {
		outlen = min_t(size_t, usize, op->ksize);
		memcpy(nxqd_cl.rep + sizeof(*rp), karg, outlen);
	}
	return nxqd_send(c, nxqd_cl.rep, sizeof(*rp) + outlen);
}

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
	struct nxqd_efd *efd = NULL;
	struct nxq_abi_devnode proof;
	struct nxq_holder *h;
	struct nxqd_hent *e;
	int want, evfd = -1, devfd = -1, err, i;
	u64 id;

	err = nxq_abi_register_check(a);
	if (err)
		return err;
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
	if (evfd >= 0) {
		efd = nxqd_efd_new(evfd);
		if (!efd) {
			free(e);
			return -ENOMEM;
		}
	}
	/* the owner is the process: the ledger only stores it (holder_kill) */
	mutex_lock(&nxqd_ledger.lock);
	h = nxq_abi_holder_new(&nxqd_ledger, a, &proof, nxqd_proc_node,
			       r->caller, efd, (struct pid *)r->caller,
			       r->caller->tgid, &err);
	mutex_unlock(&nxqd_ledger.lock);
	/* the eventfd is the efd's now (closed with it), not the request's */
	for (i = 0; efd && i < r->nr_fds; i++)
		if (r->fds[i] == evfd)
			r->fds[i] = -1;
	if (!h) {
		if (efd)
			nxqd_efd_put(efd);
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
	return nxqd_follow_cgroup(h, (struct nxqd_proc *)h->owner);
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
	c->busy = NULL;
	free(q);
	nxqd_conn_resume(c);
}

/* A request in progress is answered (the loop or its fiber). */
static void nxqd_rq_done(struct nxqd_rq *q)
{
	struct nxq_charge *a = (void *)&q->karg;
	struct nxqd_conn *c = q->c;
	int err = q->err;

	if (q->op->cmd == NXQ_IOC_CHARGE && !err)
		err = nxqd_granted(q->id, q->h, a);
	if (q->restore)
		nxqd_grace_restore_result(q->h->node->dev->key, a->bytes, err);
	if (nxqd_reply(c, err, q->op, &q->karg, q->usize) && !err) {
		/* unsent: a charge is undone, nothing is lost */
		nxq_uncharge(q->h, a->bytes, NULL);
		nxqd_charged(q->id, q->h, q->h->charge);
	}
	nxqd_rq_free(q);
}

/* The fiber of a waiting charge: nxq_charge() sleeps as in the module. */
static void nxqd_rq_wait(void *arg)
{
	struct nxqd_rq *q = arg;
	struct nxq_charge *a = (void *)&q->karg;

	q->err = nxq_charge(q->h, a->bytes, a->timeout_ns, &a->charged);
	q->task = NULL;
	nxqd_rq_done(q);
}

/*
 * Charge now: no wait (or a probe) on the loop; a wait that is not
 * granted at once as a fiber.  Return: the errno to answer, or 1 when the
 * answer will come from the fiber.
 */
static int nxqd_charge_now(struct nxqd_rq *q, u64 timeout)
{
	struct nxq_charge *a = (void *)&q->karg;
	int err;

	if (a->flags & NXQ_CHARGE_PROBE)
		return nxq_charge_probe(q->h, a->bytes, &a->charged);
	if (!timeout)
		return nxq_charge(q->h, a->bytes, 0, &a->charged);
	if (nxq_try_charge(q->h, a->bytes, &a->charged))
		return 0;
	a->timeout_ns = timeout;
	err = uk_fiber_run(nxqd_rq_wait, q, "charge", &q->task);
	return err < 0 ? err : 1;	/* answered by the fiber */
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
	return nxq_charge(e->h, a->bytes, 0, &a->charged);
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
	q->c = c;
	q->h = e->h;
	kref_get(&q->h->ref);
	q->id = e->id;
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
			return 1;	/* answered by its fiber */
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

/* What this shell does for each command of nxq_abi_cmds[]. */
typedef int (*nxqd_hfn)(struct nxqd_ctx *r, struct nxqd_hent *e, void *karg,
			u32 usize);
static const nxqd_hfn nxqd_handlers[NXQ_ABI_NR_CMDS] = {
	[_IOC_NR(NXQ_IOC_HOLDER_UNREGISTER)] = nxqd_ioc_unregister,
	[_IOC_NR(NXQ_IOC_CHARGE)] = nxqd_ioc_charge,
	[_IOC_NR(NXQ_IOC_UNCHARGE)] = nxqd_ioc_uncharge,
	[_IOC_NR(NXQ_IOC_SET_RECLAIMABLE)] = nxqd_ioc_reclaimable,
	[_IOC_NR(NXQ_IOC_STATUS)] = nxqd_ioc_status,
	[_IOC_NR(NXQ_IOC_TICKET_READ)] = nxqd_ioc_ticket_read,
	[_IOC_NR(NXQ_IOC_TICKET_ANSWER)] = nxqd_ioc_ticket_answer,
};

/* The version-1 flags each command takes. */
static u16 nxqd_req_flags(unsigned int cmd)
{
	switch (cmd) {
	case NXQ_IOC_HOLDER_REGISTER:
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
static int nxqd_handle(struct nxqd_ctx *r, size_t len)
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
	if (r->flags & ~nxqd_req_flags(op->cmd))
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
	    op->cmd != NXQ_IOC_HOLDER_REGISTER)
		return -EINVAL;
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
	if (nxqd_reply(r->c, err, op, &karg, usize) && !err) {
		/* the reply could not be sent: undo, as a failed copy-out */
		if (op->cmd == NXQ_IOC_HOLDER_REGISTER) {
			e = nxqd_hent_find(((struct nxq_holder_reg *)&karg)->holder_id);
			if (e)
				nxqd_hent_end(e);
		} else if (op->cmd == NXQ_IOC_CHARGE && e) {
			struct nxq_charge *a = (void *)&karg;

			nxq_uncharge(e->h, a->bytes, &a->charged);
			nxqd_charged(e->id, e->h, a->charged);
		}
	}
	return 1;
}

/* ---- connections ---- */

static void nxqd_close_fds(struct nxqd_ctx *r)
{
	int i;

	for (i = 0; i < r->nr_fds; i++)
		if (r->fds[i] >= 0)
			close(r->fds[i]);
	r->nr_fds = 0;
}

/*
 * Receive one request: its bytes, its sender (SCM_CREDENTIALS, compared
 * with the connection's) and its descriptors (SCM_RIGHTS).  Return: the
 * length (> the buffer: too long), 0 when the peer is gone, -1 when there
 * is nothing to read.
 */
static ssize_t nxqd_recv(struct nxqd_conn *c, struct nxqd_ctx *r)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred)) +
			 CMSG_SPACE(NXQD_FDS_RECV * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = nxqd_cl.msg,
			     .iov_len = sizeof(nxqd_cl.msg) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *cm;
	ssize_t n;

	r->nr_fds = 0;
	r->fds_trunc = false;
	r->have_cred = false;
	n = recvmsg(c->w.fd, &mh, MSG_TRUNC | MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -1 : 0;
	r->t0 = nxqd_now();
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET)
			continue;
		if (cm->cmsg_type == SCM_CREDENTIALS &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			memcpy(&r->cred, CMSG_DATA(cm), sizeof(r->cred));
			r->have_cred = true;
		} else if (cm->cmsg_type == SCM_RIGHTS) {
			size_t k, nfd = (cm->cmsg_len - CMSG_LEN(0)) /
					sizeof(int);

			for (k = 0; k < nfd; k++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + k * sizeof(int),
				       sizeof(fd));
				if (r->nr_fds < NXQD_FDS_RECV)
					r->fds[r->nr_fds++] = fd;
				else {
					close(fd);
					r->fds_trunc = true;
				}
			}
		}
	}
	if (mh.msg_flags & MSG_CTRUNC)
		r->fds_trunc = true;
	return n;
}

/*
 * Who sent the request: the connection's process, as SCM_CREDENTIALS
 * matches SO_PEERCRED; another process only where its credential could
 * not have been named by anyone but root (nxqd_proc_cred_trusted()) --
 * a child that inherited the connection is then a process of its own, as
 * a child sharing /dev/nxquota's file is in the module; else nobody, and
 * the request is refused.
 */
static void nxqd_caller(struct nxqd_ctx *r)
{
	struct nxqd_conn *c = r->c;
	struct nxqd_proc *p;

	r->caller = NULL;
	r->caller_ref = false;
	if (!r->have_cred)
		return;
	if (r->cred.pid == c->peer.pid && r->cred.uid == c->peer.uid &&
	    r->cred.gid == c->peer.gid) {
		r->caller = c->proc;
		return;
	}
	if (!nxqd_proc_cred_trusted(r->cred.pid))
		return;
	/* it sent the request: it started before it was received */
	p = nxqd_proc_get(r->cred.pid, -1, nxqd_proc_ticks());
	if (IS_ERR(p))
		return;
	r->caller = p;
	r->caller_ref = true;
}

static void nxqd_conn_free(void *arg)
{
	struct nxqd_conn *c = arg;

	nxqd_proc_put(c->proc);
	close(c->w.fd);
	free(c->out);
	free(c);
}

static void nxqd_conn_put(struct nxqd_conn *c)
{
	if (--c->refs)
		return;
	nxqd_loop_defer_free(c, nxqd_conn_free);
}

/* Its holders end, its request in progress ends, it goes. */
static void nxqd_conn_close(struct nxqd_conn *c)
{
	struct nxqd_hent *e, *tmp;
	struct nxqd_rq *q = c->busy;

	if (c->closed)
		return;
	c->closed = true;
	nxqd_watch_del(&c->w);
	shutdown(c->w.fd, SHUT_RDWR);
	if (q && q->task) {
		/* the wait ends as interrupted, nothing charged */
		uk_signal_task(q->task);
	} else if (q) {
		nxqd_grace_unhold(&q->held);
		q->err = -EINTR;
		nxqd_rq_done(q);
	}
	list_for_each_entry_safe(e, tmp, &c->holders, conn_link)
		nxqd_hent_end(e);
	list_del(&c->link);
	nxqd_conn_release(&c->slot, c->proc);
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: client pid %d gone\n", c->peer.pid);
	nxqd_conn_put(c);
}

/* Its request in progress was answered: read it again. */
static void nxqd_conn_resume(struct nxqd_conn *c)
{
	if (!c->closed && !c->out)
		nxqd_watch_mod(&c->w, EPOLLIN | EPOLLRDHUP);
	nxqd_conn_put(c);
}

static void nxqd_conn_event(struct nxqd_watch *w, u32 revents)
{
	struct nxqd_conn *c = container_of(w, struct nxqd_conn, w);
	struct nxqd_ctx r = { .c = c };
	ssize_t n;
	int err;

	if (c->busy) {
		/* only a hang-up is watched while a request is in progress */
		if (revents & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			nxqd_conn_close(c);
		return;
	}
	if (c->out) {
		if (revents & (EPOLLHUP | EPOLLERR)) {
			nxqd_conn_close(c);
			return;
		}
		n = send(c->w.fd, c->out, c->outlen,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN)
			return;
		free(c->out);
		c->out = NULL;
		if (n < 0) {
			nxqd_conn_close(c);
			return;
		}
		nxqd_watch_mod(&c->w, EPOLLIN | EPOLLRDHUP);
		return;
	}
	/*
	 * One request per tenant (cgroup subtree) per turn: however many
	 * connections a tenant keeps busy, another's request waits behind one
	 * of its at most.  What is not read now is still readable at the next
	 * turn.
	 */
	if (!nxqd_conn_turn(&c->slot))
		return;
	n = nxqd_recv(c, &r);
	if (n < 0)
		return;
	if (n == 0) {
		nxqd_conn_close(c);
		return;
	}
	nxqd_caller(&r);
	if ((size_t)n > sizeof(nxqd_cl.msg))
		err = -E2BIG;
	else
		err = nxqd_handle(&r, (size_t)n);
	nxqd_close_fds(&r);
	if (r.caller_ref)
		nxqd_proc_put(r.caller);
	if (err != 1 && nxqd_reply(c, err, NULL, NULL, 0))
		nxqd_conn_close(c);
}

static void nxqd_refuse(struct nxqd_conn *c, const char *why)
{
	nxqd_cl.conns_refused++;
	if (nxqd_verbose)
		fprintf(stderr,
			"nxquotad: refused pid %d uid %u: over %s bound on connections (%llu refused)\n",
			c->peer.pid, c->peer.uid, why,
			(unsigned long long)nxqd_cl.conns_refused);
}

static void nxqd_accept_one(int fd)
{
	struct nxqd_conn *c = calloc(1, sizeof(*c));
	socklen_t len = sizeof(struct ucred);
	int pidfd = -1, on = 1;
	u64 ticks = nxqd_proc_ticks();
	const char *why;

	if (!c || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->peer, &len) ||
	    setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on))) {
		free(c);
		close(fd);
		return;
	}
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len))
		pidfd = -1;	/* before Linux 6.5: pidfd_open() and a check */
	c->w.fd = fd;
	c->w.events = EPOLLIN | EPOLLRDHUP;
	c->w.fn = nxqd_conn_event;
	INIT_LIST_HEAD(&c->holders);
	c->proc = nxqd_proc_get(c->peer.pid, pidfd, ticks);
	if (IS_ERR(c->proc)) {
		free(c);
		close(fd);
		return;
	}
	why = nxqd_conn_admit(&c->slot, c->proc, c->peer.uid);
	if (why) {
		nxqd_refuse(c, why);
		goto fail;
	}
	if (nxqd_watch_add(&c->w))
		goto fail;
	c->refs = 1;
	list_add_tail(&c->link, &nxqd_cl.conns);
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: client pid %d uid %u gid %u\n",
			c->peer.pid, c->peer.uid, c->peer.gid);
	return;
fail:
	nxqd_conn_release(&c->slot, c->proc);
	nxqd_proc_put(c->proc);
	free(c);
	close(fd);
}

static void nxqd_accept(struct nxqd_watch *w, u32 revents)
{
	int fd, i;

	/* a few per turn, so that accepting does not starve requests */
	for (i = 0; i < 16; i++) {
		fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0) {
			nxqd_accept_one(fd);
			continue;
		}
		if ((errno == EMFILE || errno == ENFILE) &&
		    nxqd_cl.spare_fd >= 0) {
			/* out of descriptors: take one, refuse it */
			close(nxqd_cl.spare_fd);
			fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0) {
				nxqd_cl.conns_refused++;
				close(fd);
			}
			nxqd_cl.spare_fd = open("/dev/null",
						O_RDONLY | O_CLOEXEC);
			continue;
		}
		break;
	}
}

/* ---- the socket ---- */

/*
 * The gid of @name (or a number), from /etc/group itself: a static daemon
 * has no NSS modules to ask.  Return: the gid, or -1.
 */
static long nxqd_group(const char *name)
{
	char line[4096], *end, *f[3];
	long gid = -1;
	FILE *g;
	int i;

	errno = 0;
	gid = strtol(name, &end, 10);
	if (!errno && *name && !*end && gid >= 0)
		return gid;
	gid = -1;
	g = fopen("/etc/group", "re");
	if (!g)
		return -1;
	while (gid < 0 && fgets(line, sizeof(line), g)) {
		char *p = line;

		for (i = 0; i < 3 && p; i++) {	/* name:password:gid:members */
			f[i] = p;
			p = strchr(p, ':');
			if (p)
				*p++ = '\0';
		}
		if (i == 3 && p && !strcmp(f[0], name)) {
			errno = 0;
			gid = strtol(f[2], &end, 10);
			if (errno || end == f[2] || *end)
				gid = -1;
			break;
		}
	}
	fclose(g);
	return gid;
}

int nxqd_client_start(const char *path, const char *group)
{
	int fd, on = 1;
	long gid;
	int err = nxqd_proc_init(nxqd_proc_gone);

	if (err)
		return err;
	nxqd_cl.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	/* a socket systemd made (nxquotad.socket) is systemd's to remove */
	fd = nxqd_listen_fds("client");
	if (fd < 0) {
		gid = nxqd_group(group ? group : "nxquota");
		if (group && gid < 0) {
			fprintf(stderr, "nxquotad: no group %s\n", group);
			return -EINVAL;
		}
		fd = nxqd_bind(path, gid >= 0 ? 0660 : 0600, gid, 512);
		if (fd < 0) {
			if (fd == -EADDRINUSE)
				fprintf(stderr,
					"nxquotad: already running on %s\n",
					path);
			return fd;
		}
		strscpy(nxqd_cl.path, path, sizeof(nxqd_cl.path));
	} else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)) {
		return -errno;
	}
	/* who sent each request: the kernel attaches it */
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on))) {
		close(fd);
		return -errno;
	}
	nxqd_cl.lfd = fd;
	nxqd_cl.lw.fd = fd;
	nxqd_cl.lw.events = EPOLLIN;
	nxqd_cl.lw.fn = nxqd_accept;
	return nxqd_watch_add(&nxqd_cl.lw);
}

const struct nxqd_restart_ops *nxqd_client_restart(void)
{
	return &nxqd_client_restart_ops;
}

void nxqd_client_refusals(const char *device, struct nxq_abi_refusals *r)
{
	r->conns = nxqd_cl.conns_refused;
	r->creds = nxqd_cl.creds_refused;
	nxqd_grace_stats(device, &r->restored, &r->restore_refused);
}

static bool nxqd_no_fibers(void *unused)
{
	return !uk_fibers_alive();
}

void nxqd_client_stop(void)
{
	struct nxqd_conn *c, *tmp;

	if (nxqd_cl.lfd < 0)
		return;
	nxqd_watch_del(&nxqd_cl.lw);
	close(nxqd_cl.lfd);
	nxqd_cl.lfd = -1;
	if (nxqd_cl.path[0])
		unlink(nxqd_cl.path);
	/* every waiting charge ends, then every connection */
	list_for_each_entry_safe(c, tmp, &nxqd_cl.conns, link)
		nxqd_conn_close(c);
	nxqd_loop_until(nxqd_no_fibers, NULL, 5000);
	if (nxqd_cl.spare_fd >= 0)
		close(nxqd_cl.spare_fd);
}
