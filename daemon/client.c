// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's client socket: the module's character device (kmod/cdev.c)
 * over a SOCK_SEQPACKET unix socket.  See proto.h for the framing.
 *
 * Identity comes from the kernel only.  SO_PEERCRED at accept counts the
 * connection against its process and uid; each request carries the
 * kernel-checked SCM_CREDENTIALS of the process that sent it (SO_PASSCRED),
 * and that process is the caller: a child that inherited the connection is
 * another process.  A process that registers a holder becomes a struct
 * nxqd_proc, with a pidfd (the connection's SO_PEERPIDFD when the
 * connecting process sent the request, else pidfd_open() checked against
 * the process's start time, which must not be later than the request) and
 * its start time; that pidfd is what holder_kill signals and what the
 * watcher thread polls for the process's exit.
 *
 * Holders are in one table (id -> struct nxqd_hent) for the whole daemon,
 * as the library keeps a few connections per process: any connection of
 * the registering process may use a holder, any other process gets
 * -ENOENT.  A holder ends at HOLDER_UNREGISTER, when its registering
 * connection closes, or when its process exits, whichever first; each
 * detaches (uncharges) it.
 *
 * One thread per connection.  A charge that waits sleeps in the ledger as
 * the ioctl does; meanwhile the watcher thread polls the connection for a
 * hang-up and, if the peer goes, interrupts the wait (uk_signal_task()).
 */
#include <linux/types.h>
#include <linux/nxquota.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "nxqd.h"
#include "ctl.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD	77
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open	434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal	424
#endif

/* Holders one connection may register (the module's per-file bound). */
#define NXQD_HOLDERS_PER_CONN	4096

/* Descriptors received in one message beyond which it is refused whole. */
#define NXQD_FDS_RECV		8

/* What the watcher thread polls: a process's pidfd or a connection. */
enum { NXQD_W_STOP, NXQD_W_PROC, NXQD_W_CONN };
#define NXQD_W(type, serial)	(((u64)(serial) << 2) | (type))

struct nxqd_proc {
	struct list_head link;		/* nxqd_procs; nxqd_lock */
	u64 serial;
	pid_t tgid;
	u64 start;			/* /proc/PID/stat field 22 */
	int pidfd;
	int cgfd;			/* its /proc/PID/cgroup, or -1 */
	int refs;			/* nxqd_lock: list + holders */
	unsigned int nr_holders;	/* nxqd_lock */
	bool dead;			/* nxqd_lock: its pidfd polled */
};

struct nxqd_conn {
	struct list_head link;		/* nxqd_conns; nxqd_lock */
	u64 serial;
	int fd;
	struct ucred peer;		/* SO_PEERCRED at accept */
	int peer_pidfd;			/* SO_PEERPIDFD or -1 */
	struct task_struct *task;	/* its thread, for uk_signal_task() */
	bool waiting;			/* nxqd_lock: a charge sleeps */
	unsigned int nr_holders;	/* nxqd_lock */
};

/* An eventfd, the holder's priv (NULL: a holder that cannot be asked). */
struct nxqd_efd {
	int fd;
};

struct nxqd_hent {
	u64 id;
	struct nxq_holder *h;		/* the table's reference */
	struct nxqd_proc *proc;
	struct nxqd_conn *conn;		/* the registering connection */
	bool charged;			/* nxqd_lock: a charge was asked */
};

unsigned int nxqd_conn_per_proc = NXQD_CONN_PER_PROC;
unsigned int nxqd_conn_per_uid = NXQD_CONN_PER_UID;

static pthread_mutex_t nxqd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nxqd_conns_cond = PTHREAD_COND_INITIALIZER;
static LIST_HEAD(nxqd_procs);
static LIST_HEAD(nxqd_conns);
static unsigned int nxqd_nr_conns;
static u64 nxqd_serial;
static struct xarray nxqd_holders;	/* id -> hent; nxqd_lock for writers */
static u64 nxqd_next_id;
static unsigned long nxqd_refused;	/* connections over a bound */
static unsigned int nxqd_ending;	/* nxqd_lock: exits being ended */
static pthread_cond_t nxqd_ended = PTHREAD_COND_INITIALIZER;
static int nxqd_epfd = -1, nxqd_stopfd = -1, nxqd_lfd = -1;
static pthread_t nxqd_watcher, nxqd_acceptor;
static char nxqd_sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

/* ---- processes ---- */

static int nxqd_pidfd_open(pid_t pid)
{
	return syscall(SYS_pidfd_open, pid, 0);
}

/* Start time (clock ticks since boot) of @pid, 0 if unknown. */
static u64 nxqd_start_time(pid_t pid)
{
	char file[64], buf[1024], *p;
	unsigned long long start;
	ssize_t n;
	int fd, i;

	snprintf(file, sizeof(file), "/proc/%d/stat", (int)pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* comm may hold blanks and ')' */
	if (!p)
		return 0;
	/* field 3 is after ") "; start time is field 22 */
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return 0;
	return start;
}

u64 nxqd_proc_start_time(pid_t pid)
{
	return nxqd_start_time(pid);
}

/* Now, in /proc/PID/stat's start-time ticks (CLOCK_BOOTTIME). */
static u64 nxqd_now_ticks(void)
{
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (u64)ts.tv_sec * hz + (u64)ts.tv_nsec / (NSEC_PER_SEC / hz);
}

static bool nxqd_pidfd_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) != 0;
}

static void nxqd_proc_put_locked(struct nxqd_proc *p)
{
	if (--p->refs)
		return;
	close(p->pidfd);
	if (p->cgfd >= 0)
		close(p->cgfd);
	free(p);
}

static void nxqd_proc_put(struct nxqd_proc *p)
{
	pthread_mutex_lock(&nxqd_lock);
	nxqd_proc_put_locked(p);
	pthread_mutex_unlock(&nxqd_lock);
}

/*
 * The process @pid that sent a request (received at @ticks) on @c, with
 * a reference; made and watched on first use.  Return: the process or
 * ERR_PTR(-ESRCH: it is gone, -ENOMEM, ...).
 */
static struct nxqd_proc *nxqd_proc_get(struct nxqd_conn *c, pid_t pid,
				       u64 ticks)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct nxqd_proc *p, *cur;
	int pidfd;
	u64 start;

	pthread_mutex_lock(&nxqd_lock);
	list_for_each_entry(p, &nxqd_procs, link) {
		if (p->tgid == pid && !p->dead) {
			p->refs++;
			pthread_mutex_unlock(&nxqd_lock);
			return p;
		}
	}
	pthread_mutex_unlock(&nxqd_lock);

	if (pid == c->peer.pid && c->peer_pidfd >= 0)
		pidfd = fcntl(c->peer_pidfd, F_DUPFD_CLOEXEC, 0);
	else
		pidfd = nxqd_pidfd_open(pid);
	if (pidfd < 0)
		return ERR_PTR(errno == ESRCH ? -ESRCH : -errno);
	/*
	 * The pid may have been reused since the request was sent: the
	 * process must have started no later than the request, and still
	 * be the pidfd's after its start time was read.
	 */
	start = nxqd_start_time(pid);
	if (!start || start > ticks || nxqd_pidfd_exited(pidfd)) {
		close(pidfd);
		return ERR_PTR(-ESRCH);
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		close(pidfd);
		return ERR_PTR(-ENOMEM);
	}
	/* read at each charge: the charge follows a process that moved */
	{
		char file[64];

		snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
		p->cgfd = open(file, O_RDONLY | O_CLOEXEC);
	}
	if (p->cgfd < 0 || nxqd_pidfd_exited(pidfd)) {
		if (p->cgfd >= 0)
			close(p->cgfd);
		close(pidfd);
		free(p);
		return ERR_PTR(-ESRCH);
	}
	p->tgid = pid;
	p->start = start;
	p->pidfd = pidfd;
	p->refs = 2;	/* the list's, the caller's */
	pthread_mutex_lock(&nxqd_lock);
	list_for_each_entry(cur, &nxqd_procs, link) {
		if (cur->tgid == pid && !cur->dead) {	/* made meanwhile */
			cur->refs++;
			pthread_mutex_unlock(&nxqd_lock);
			close(p->cgfd);
			close(pidfd);
			free(p);
			return cur;
		}
	}
	p->serial = ++nxqd_serial;
	ev.data.u64 = NXQD_W(NXQD_W_PROC, p->serial);
	if (epoll_ctl(nxqd_epfd, EPOLL_CTL_ADD, pidfd, &ev)) {
		int err = -errno;

		pthread_mutex_unlock(&nxqd_lock);
		close(p->cgfd);
		close(pidfd);
		free(p);
		return ERR_PTR(err);
	}
	list_add_tail(&p->link, &nxqd_procs);
	pthread_mutex_unlock(&nxqd_lock);
	return p;
}

size_t nxqd_client_list(struct nxqd_client_id *ids, size_t max)
{
	struct nxqd_proc *p;
	size_t n = 0;

	pthread_mutex_lock(&nxqd_lock);
	list_for_each_entry(p, &nxqd_procs, link) {
		if (p->dead || !p->nr_holders)
			continue;
		if (n < max) {
			ids[n].pid = p->tgid;
			ids[n].start = p->start;
			ids[n].holders = p->nr_holders;
		}
		n++;
	}
	pthread_mutex_unlock(&nxqd_lock);
	return n;
}

/* ---- holders ---- */

static void nxqd_free_priv(struct nxq_holder *h)
{
	struct nxqd_efd *e = h->priv;

	if (e) {
		close(e->fd);
		free(e);
	}
	nxqd_proc_put((struct nxqd_proc *)h->owner);
}

static void nxqd_holder_put(struct nxq_holder *h)
{
	nxq_holder_put(h, nxqd_free_priv);
}

/*
 * The ledger's holder_signal hook: add 1 to the eventfd, never blocking
 * (it runs under the device lock, as eventfd_signal() in the module).
 * The open file is shared with the tenant, who may clear O_NONBLOCK and
 * fill the counter: the flag is set again if cleared, and a counter with
 * no room for 1 is left as it is (the holder is asked anyway: its ticket
 * is open and readable).  A tenant clearing the flag between the check
 * and the write could still make this write wait -- a window of a few
 * instructions, which the daemon does not close.
 */
void nxqd_holder_signal(struct nxq_holder *h)
{
	struct nxqd_efd *e = h->priv;
	struct pollfd pf;
	u64 one = 1;
	int fl;

	if (!e)
		return;
	fl = fcntl(e->fd, F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) &&
		       fcntl(e->fd, F_SETFL, fl | O_NONBLOCK)))
		return;
	pf.fd = e->fd;
	pf.events = POLLOUT;
	if (poll(&pf, 1, 0) != 1 || !(pf.revents & POLLOUT))
		return;
	if (write(e->fd, &one, sizeof(one)) < 0 && nxqd_verbose)
		fprintf(stderr, "nxquotad: eventfd of pid %u: %s\n", h->tgid,
			strerror(errno));
}

/* The ledger's holder_kill hook: SIGKILL the registering process. */
void nxqd_holder_kill(struct nxq_holder *h)
{
	struct nxqd_proc *p = (struct nxqd_proc *)h->owner;

	syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
}

/*
 * The holder @id, if process @pid registered it, with a reference (and
 * its table entry in *@ent, valid while the reference is); else NULL.
 */
static struct nxq_holder *nxqd_holder_get(u64 id, pid_t pid,
					  struct nxqd_hent **ent)
{
	struct nxqd_hent *e;
	struct nxq_holder *h = NULL;

	if (!id || id > U32_MAX)
		return NULL;
	pthread_mutex_lock(&nxqd_lock);
	e = xa_load(&nxqd_holders, id);
	/* the table's reference is dropped only after unlinking */
	if (e && e->proc->tgid == pid && !e->proc->dead) {
		h = e->h;
		kref_get(&h->ref);
		*ent = e;
	}
	pthread_mutex_unlock(&nxqd_lock);
	return h;
}

/* Take @e out of the table; nxqd_lock held. */
static void nxqd_hent_unlink(struct nxqd_hent *e)
{
	xa_erase(&nxqd_holders, e->id);
	e->conn->nr_holders--;
	e->proc->nr_holders--;
}

static void nxqd_hent_end(struct nxqd_hent *e)
{
	nxq_holder_end(e->h, nxqd_free_priv);	/* the table's reference */
	free(e);
}

/* End every holder of connection @c (if @c) or process @p (if @p). */
static void nxqd_end_holders(struct nxqd_conn *c, struct nxqd_proc *p)
{
	struct nxqd_hent *e, **ends = NULL;
	size_t n = 0, cap = 0, i;
	unsigned long id;

	pthread_mutex_lock(&nxqd_lock);
	xa_for_each(&nxqd_holders, id, e) {
		if ((c && e->conn != c) || (p && e->proc != p))
			continue;
		if (n == cap) {
			struct nxqd_hent **m;

			cap = cap ? 2 * cap : 16;
			m = realloc(ends, cap * sizeof(*ends));
			if (!m)
				break;	/* the rest at the next call */
			ends = m;
		}
		nxqd_hent_unlink(e);
		ends[n++] = e;
	}
	pthread_mutex_unlock(&nxqd_lock);
	for (i = 0; i < n; i++)
		nxqd_hent_end(ends[i]);
	free(ends);
	if (n)
		nxqd_restart_save();
}

/* ---- commands (the module's nxq_iocs[]) ---- */

/*
 * One request's context: who sent it (the message's credentials), the
 * descriptors that came with it, the connection.
 */
struct nxqd_req_ctx {
	struct nxqd_conn *c;
	pid_t pid;
	u64 ticks;		/* when it was received */
	int fds[NXQD_FDS_RECV];
	int nr_fds;
	bool fds_trunc;
	struct nxqd_hent *ent;	/* the holder's, with op->holder */
};

struct nxqd_ioc {
	unsigned int cmd;
	u16 ksize, ver0;
	u32 flags;
	bool holder, out;
	int (*check)(const void *karg);
	int (*fn)(struct nxqd_req_ctx *r, struct nxq_holder *h, void *karg);
	void (*undo)(struct nxqd_req_ctx *r, struct nxq_holder *h, void *karg);
};

#define NXQD_IOC_NO_FLAGS	U32_MAX

struct nxqd_ioc_head {
	__u32 size;
	__u32 flags;
	__u64 holder_id;
};

static int nxqd_ioc_version(struct nxqd_req_ctx *r, struct nxq_holder *h,
			    void *karg)
{
	struct nxq_version *a = karg;

	a->abi_version = NXQ_ABI_VERSION;
	a->features = NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_STATUS |
		      NXQ_FEAT_CHARGE_WAIT | NXQ_FEAT_TICKETS |
		      NXQ_FEAT_STATUS_V1 | NXQ_FEAT_CHARGE_PROBE;
	return 0;
}

/* The module's nxq_check_devfd(), on a received descriptor. */
static int nxqd_check_devfd(struct nxq_device *dev, int devfd)
{
	struct stat st;

	if (!dev->devt)
		return 0;
	if (devfd < 0)
		return -EACCES;
	if (fstat(devfd, &st) || !S_ISCHR(st.st_mode) ||
	    st.st_rdev != dev->devt)
		return -EACCES;
	return 0;
}

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

static int nxqd_ioc_register(struct nxqd_req_ctx *r, struct nxq_holder *unused,
			     void *karg)
{
	struct nxq_holder_reg *a = karg;
	struct nxq_holder *h = NULL;
	struct nxqd_efd *efd = NULL;
	struct nxqd_proc *proc = NULL;
	struct nxqd_hent *e = NULL;
	struct nxq_device *dev;
	struct nxq_node *node;
	char cg[4096];
	int want, evfd = -1, devfd = -1, err, i;
	u64 id = 0, start;
	pid_t tgid;

	if (a->priority > NXQ_PRIORITY_MAX || a->reserved)
		return -EINVAL;
	if (!(a->flags & NXQ_HOLDER_DEVFD) && a->devfd)
		return -EINVAL;
	if (strnlen(a->device, sizeof(a->device)) == sizeof(a->device) ||
	    !a->device[0])
		return -EINVAL;
	if (a->eventfd < -1)
		return -EBADF;
	/* the eventfd (iff eventfd >= 0), then the devfd (iff DEVFD) */
	want = (a->eventfd >= 0) + !!(a->flags & NXQ_HOLDER_DEVFD);
	if (r->fds_trunc || r->nr_fds != want)
		return -EBADF;
	i = 0;
	if (a->eventfd >= 0)
		evfd = r->fds[i++];
	if (a->flags & NXQ_HOLDER_DEVFD)
		devfd = r->fds[i++];
	if (evfd >= 0) {
		if (!nxqd_is_eventfd(evfd))
			return -EINVAL;
		efd = malloc(sizeof(*efd));
		if (!efd)
			return -ENOMEM;
		efd->fd = evfd;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		err = -ENOMEM;
		goto out_files;
	}
	pthread_mutex_lock(&nxqd_lock);
	err = r->c->nr_holders >= NXQD_HOLDERS_PER_CONN ? -EMFILE : 0;
	pthread_mutex_unlock(&nxqd_lock);
	if (err)
		goto out_files;
	proc = nxqd_proc_get(r->c, r->pid, r->ticks);
	if (IS_ERR(proc)) {
		err = PTR_ERR(proc);
		proc = NULL;
		goto out_files;
	}
	err = nxqd_cgroup_read(proc->cgfd, cg, sizeof(cg));
	if (err)
		goto out_files;

	mutex_lock(&nxqd_ledger.lock);
	dev = nxq_device_find(&nxqd_ledger, a->device);
	if (!dev)
		err = -ENODEV;
	else
		err = nxqd_check_devfd(dev, devfd);
	if (!err) {
		node = nxqd_node_for_path(dev, cg);
		if (IS_ERR(node)) {
			err = PTR_ERR(node);
		} else {
			h = nxq_holder_create(node, a->priority, efd,
					      (struct pid *)proc, proc->tgid,
					      &err);
			if (!h)
				nxq_node_put(node);
		}
	}
	mutex_unlock(&nxqd_ledger.lock);
	if (!h)
		goto out_files;
	/* the eventfd and the process reference are the holder's now */
	if (efd) {
		int fl = fcntl(efd->fd, F_GETFL);

		/* holder_signal runs under the device lock: never block */
		if (fl >= 0 && !(fl & O_NONBLOCK))
			fcntl(efd->fd, F_SETFL, fl | O_NONBLOCK);
		for (i = 0; i < r->nr_fds; i++)
			if (r->fds[i] == efd->fd)
				r->fds[i] = -1;
	}
	efd = NULL;
	e->h = h;
	e->proc = proc;
	e->conn = r->c;
	/* once in the table, the holder may end (and free @e, @proc) */
	tgid = proc->tgid;
	start = proc->start;
	pthread_mutex_lock(&nxqd_lock);
	/*
	 * A process whose exit the watcher has seen is not watched any
	 * more: its holder would never end.
	 */
	err = proc->dead ? -ESRCH : 0;
	/* ids are not reused while the daemon runs (2^32 registrations) */
	while (!err) {
		id = (nxqd_next_id++ % U32_MAX) + 1;
		e->id = id;
		err = xa_insert(&nxqd_holders, id, e, GFP_KERNEL);
		if (err != -EBUSY)
			break;
		err = 0;
	}
	if (!err) {
		r->c->nr_holders++;
		proc->nr_holders++;
	}
	pthread_mutex_unlock(&nxqd_lock);
	if (err) {
		nxqd_holder_put(h);	/* detaches; drops proc */
		free(e);
		return err;
	}
	a->holder_id = id;
	nxqd_restart_save();
	nxqd_restart_registered(tgid, start);
	return 0;

out_files:
	free(efd);	/* its descriptor is closed with the request's */
	free(e);
	if (proc)
		nxqd_proc_put(proc);
	return err;
}

static int nxqd_ioc_unregister(struct nxqd_req_ctx *r, struct nxq_holder *h,
			       void *karg)
{
	struct nxq_holder_id *a = karg;
	struct nxqd_hent *e;

	pthread_mutex_lock(&nxqd_lock);
	e = xa_load(&nxqd_holders, a->holder_id);
	if (!e || e->h != h) {
		pthread_mutex_unlock(&nxqd_lock);
		return -ENOENT;
	}
	nxqd_hent_unlink(e);
	pthread_mutex_unlock(&nxqd_lock);
	nxqd_hent_end(e);
	nxqd_restart_save();
	return 0;
}

/* The reply with the new id could not be sent: take the holder back. */
static void nxqd_ioc_register_undo(struct nxqd_req_ctx *r,
				   struct nxq_holder *unused, void *karg)
{
	struct nxq_holder_reg *a = karg;
	struct nxq_holder_id un = { .holder_id = a->holder_id };
	struct nxqd_hent *e;
	struct nxq_holder *h = nxqd_holder_get(a->holder_id, r->pid, &e);

	if (!h)
		return;
	nxqd_ioc_unregister(r, h, &un);
	nxqd_holder_put(h);
}

/*
 * The module's nxq_follow_cgroup(): a process moved to another cgroup
 * charges its new cgroup from its next charge on; what it charged before
 * stays where it was (a residue).
 */
static int nxqd_follow_cgroup(struct nxq_holder *h, struct nxqd_proc *p)
{
	struct nxq_device *dev = h->node->dev;
	struct nxq_node *node;
	char cg[4096];
	int err;

	if (nxqd_cgroup_read(p->cgfd, cg, sizeof(cg)))
		return 0;	/* exiting: its holders end */
	if (!strcmp(cg, nxqd_cgroup_key_path(READ_ONCE(h->node)->key)))
		return 0;
	mutex_lock(&nxqd_ledger.lock);
	node = nxqd_node_for_path(dev, cg);
	if (IS_ERR(node)) {
		err = PTR_ERR(node);
	} else {
		err = nxq_holder_rehome(h, node);
		if (err)
			nxq_node_put(node);
		if (err == -ENOENT)	/* detached, or moved already */
			err = 0;
	}
	mutex_unlock(&nxqd_ledger.lock);
	return err;
}

/* Is this the first charge on holder @id (@h)?  Once true per holder. */
static bool nxqd_first_charge(struct nxq_holder *h, u64 id)
{
	struct nxqd_hent *e;
	bool first = false;

	pthread_mutex_lock(&nxqd_lock);
	e = xa_load(&nxqd_holders, id);
	if (e && e->h == h && !e->charged) {
		e->charged = true;
		first = true;
	}
	pthread_mutex_unlock(&nxqd_lock);
	return first;
}

/* A waiting charge: the watcher interrupts it if the peer hangs up. */
static void nxqd_wait_begin(struct nxqd_conn *c)
{
	struct epoll_event ev = {
		.events = EPOLLRDHUP | EPOLLHUP | EPOLLONESHOT,
		.data.u64 = NXQD_W(NXQD_W_CONN, c->serial),
	};

	uk_clear_signal(current);
	pthread_mutex_lock(&nxqd_lock);
	c->waiting = true;
	pthread_mutex_unlock(&nxqd_lock);
	if (epoll_ctl(nxqd_epfd, EPOLL_CTL_ADD, c->fd, &ev) && errno == EEXIST)
		epoll_ctl(nxqd_epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void nxqd_wait_end(struct nxqd_conn *c)
{
	pthread_mutex_lock(&nxqd_lock);
	c->waiting = false;
	pthread_mutex_unlock(&nxqd_lock);
	epoll_ctl(nxqd_epfd, EPOLL_CTL_DEL, c->fd, NULL);
	uk_clear_signal(current);
}

static int nxqd_ioc_charge(struct nxqd_req_ctx *r, struct nxq_holder *h,
			   void *karg)
{
	struct nxq_charge *a = karg;
	struct nxqd_proc *proc = (struct nxqd_proc *)h->owner;
	u64 timeout = a->timeout_ns;
	int err;

	err = nxqd_follow_cgroup(h, proc);
	if (err)
		return err;
	if (timeout)
		nxqd_wait_begin(r->c);
	/* after a restart, the listed clients restore first */
	err = nxqd_restart_gate(proc->tgid, proc->start,
				nxqd_first_charge(h, a->holder_id), &timeout);
	if (!err) {
		if (a->timeout_ns && !timeout)
			err = -ETIMEDOUT;
		else if (a->flags & NXQ_CHARGE_PROBE)
			err = nxq_charge_probe(h, a->bytes, &a->charged);
		else
			err = nxq_charge(h, a->bytes, timeout, &a->charged);
		nxqd_restart_charged(proc->tgid, proc->start);
	}
	if (a->timeout_ns)
		nxqd_wait_end(r->c);
	return err;
}

/* The reply could not be sent: a charge is undone, nothing is lost. */
static void nxqd_ioc_charge_undo(struct nxqd_req_ctx *r, struct nxq_holder *h,
				 void *karg)
{
	struct nxq_charge *a = karg;

	nxq_uncharge(h, a->bytes, NULL);
}

static int nxqd_ioc_uncharge(struct nxqd_req_ctx *r, struct nxq_holder *h,
			     void *karg)
{
	struct nxq_charge *a = karg;

	return nxq_uncharge(h, a->bytes, &a->charged);
}

static int nxqd_ioc_reclaimable(struct nxqd_req_ctx *r, struct nxq_holder *h,
				void *karg)
{
	struct nxq_reclaimable *a = karg;

	return nxq_set_reclaimable(h, a->bytes);
}

static int nxqd_ioc_status(struct nxqd_req_ctx *r, struct nxq_holder *h,
			   void *karg)
{
	return nxq_abi_status(h, karg);
}

static int nxqd_ioc_ticket_read(struct nxqd_req_ctx *r, struct nxq_holder *h,
				void *karg)
{
	return nxq_abi_ticket_read(h, karg);
}

static int nxqd_ioc_ticket_answer(struct nxqd_req_ctx *r,
				  struct nxq_holder *h, void *karg)
{
	return nxq_abi_ticket_answer(h, karg);
}

#define NXQD_IOC(c, type, v0, fl, hold, o, chk, handler, und)		\
	[_IOC_NR(c)] = { .cmd = (c), .ksize = sizeof(type), .ver0 = (v0),	\
	  .flags = (fl), .holder = (hold), .out = (o), .check = (chk),	\
	  .fn = (handler), .undo = (und) }

static const struct nxqd_ioc nxqd_iocs[] = {
	NXQD_IOC(NXQ_IOC_VERSION, struct nxq_version, NXQ_VERSION_SIZE_VER0,
		 NXQD_IOC_NO_FLAGS, false, true, NULL, nxqd_ioc_version, NULL),
	NXQD_IOC(NXQ_IOC_HOLDER_REGISTER, struct nxq_holder_reg,
		 NXQ_HOLDER_REG_SIZE_VER0, NXQ_HOLDER_FLAGS_ALL, false, true,
		 NULL, nxqd_ioc_register, nxqd_ioc_register_undo),
	NXQD_IOC(NXQ_IOC_HOLDER_UNREGISTER, struct nxq_holder_id,
		 NXQ_HOLDER_ID_SIZE_VER0, 0, true, false, NULL,
		 nxqd_ioc_unregister, NULL),
	NXQD_IOC(NXQ_IOC_CHARGE, struct nxq_charge, NXQ_CHARGE_SIZE_VER0,
		 NXQ_CHARGE_FLAGS_ALL, true, true, nxq_abi_charge_check,
		 nxqd_ioc_charge, nxqd_ioc_charge_undo),
	NXQD_IOC(NXQ_IOC_UNCHARGE, struct nxq_charge, NXQ_CHARGE_SIZE_VER0,
		 0, true, true, nxq_abi_uncharge_check, nxqd_ioc_uncharge,
		 NULL),
	NXQD_IOC(NXQ_IOC_SET_RECLAIMABLE, struct nxq_reclaimable,
		 NXQ_RECLAIMABLE_SIZE_VER0, 0, true, false, NULL,
		 nxqd_ioc_reclaimable, NULL),
	NXQD_IOC(NXQ_IOC_STATUS, struct nxq_status, NXQ_STATUS_SIZE_VER0, 0,
		 true, true, NULL, nxqd_ioc_status, NULL),
	NXQD_IOC(NXQ_IOC_TICKET_READ, struct nxq_ticket, NXQ_TICKET_SIZE_VER0,
		 0, true, true, NULL, nxqd_ioc_ticket_read, NULL),
	NXQD_IOC(NXQ_IOC_TICKET_ANSWER, struct nxq_ticket_answer,
		 NXQ_TICKET_ANSWER_SIZE_VER0, 0, true, true, NULL,
		 nxqd_ioc_ticket_answer, NULL),
};

/* The largest argument any command takes (a build check below). */
#define NXQD_IOC_ARG_MAX	sizeof(struct nxq_status)
_Static_assert(sizeof(struct nxq_holder_reg) <= NXQD_IOC_ARG_MAX,
	       "NXQD_IOC_ARG_MAX");

#define NXQD_CMD(cmd)	((cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT))

union nxqd_karg {
	struct nxqd_ioc_head head;
	u8 bytes[NXQD_IOC_ARG_MAX];
};

/*
 * One request: @msg, @len bytes; the module's nxq_ioctl() head.  Returns
 * the reply's errno, the command in *@opp and the bytes of @karg to send
 * back in *@outlen; *@hp is the holder it used (a reference) or NULL.
 */
static int nxqd_handle(struct nxqd_req_ctx *r, const unsigned char *msg,
		       size_t len, union nxqd_karg *karg, size_t *outlen,
		       const struct nxqd_ioc **opp, struct nxq_holder **hp)
{
	const struct nxqd_req *req = (const void *)msg;
	const struct nxqd_ioc *op;
	size_t i, alen;
	__u32 usize;
	int err;

	*outlen = 0;
	*opp = NULL;
	*hp = NULL;
	if (len < sizeof(*req) + sizeof(__u32) || req->reserved)
		return -EINVAL;
	i = _IOC_NR(req->cmd);
	if (i >= ARRAY_SIZE(nxqd_iocs) || !nxqd_iocs[i].fn ||
	    NXQD_CMD(req->cmd) != NXQD_CMD(nxqd_iocs[i].cmd))
		return -ENOTTY;
	op = &nxqd_iocs[i];
	alen = len - sizeof(*req);
	memcpy(&usize, msg + sizeof(*req), sizeof(usize));
	if (usize != alen)
		return -EINVAL;	/* the message is the struct, all of it */
	if (usize < op->ver0)
		return -EINVAL;
	if (usize > NXQD_ARG_MAX)
		return -E2BIG;
	/* copy_struct_from_user()'s rule: what we do not know must be 0 */
	for (i = op->ksize; i < usize; i++)
		if (msg[sizeof(*req) + i])
			return -E2BIG;
	/* descriptors come with HOLDER_REGISTER only */
	if ((r->nr_fds || r->fds_trunc) && op->fn != nxqd_ioc_register)
		return -EINVAL;
	memset(karg, 0, sizeof(*karg));
	memcpy(karg, msg + sizeof(*req), min_t(size_t, usize, op->ksize));
	if (op->flags != NXQD_IOC_NO_FLAGS && (karg->head.flags & ~op->flags))
		return -EINVAL;
	if (op->check) {
		err = op->check(karg);
		if (err)
			return err;
	}
	if (op->holder) {
		*hp = nxqd_holder_get(karg->head.holder_id, r->pid, &r->ent);
		if (!*hp)
			return -ENOENT;
	}
	err = op->fn(r, *hp, karg);
	if (!err && op->out)
		*outlen = min_t(size_t, usize, op->ksize);
	*opp = op;
	return err;
}

/* ---- connections ---- */

static void nxqd_close_fds(struct nxqd_req_ctx *r)
{
	int i;

	for (i = 0; i < r->nr_fds; i++)
		if (r->fds[i] >= 0)
			close(r->fds[i]);
	r->nr_fds = 0;
}

/*
 * Receive one request: its bytes, its sender (SCM_CREDENTIALS) and its
 * descriptors (SCM_RIGHTS).  Returns the length (> the buffer: too
 * long), 0 when the peer is gone, or -1.
 */
static ssize_t nxqd_recv(struct nxqd_conn *c, unsigned char *buf,
			 size_t size, struct nxqd_req_ctx *r)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred)) +
			 CMSG_SPACE(NXQD_FDS_RECV * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *cm;
	bool have_cred = false;
	ssize_t n;

	r->nr_fds = 0;
	r->fds_trunc = false;
	r->pid = 0;
	n = recvmsg(c->fd, &mh, MSG_TRUNC | MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return n;
	r->ticks = nxqd_now_ticks();
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET)
			continue;
		if (cm->cmsg_type == SCM_CREDENTIALS &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			struct ucred uc;

			memcpy(&uc, CMSG_DATA(cm), sizeof(uc));
			r->pid = uc.pid;
			have_cred = true;
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
	if (!have_cred)
		r->pid = 0;	/* refused by the caller */
	return n;
}

static void nxqd_conn_free(struct nxqd_conn *c)
{
	if (c->peer_pidfd >= 0)
		close(c->peer_pidfd);
	close(c->fd);
	free(c);
}

static void *nxqd_conn_main(void *p)
{
	struct nxqd_conn *c = p;
	unsigned char msg[sizeof(struct nxqd_req) + NXQD_ARG_MAX + 1];
	union nxqd_karg karg;
	unsigned char rep[sizeof(struct nxqd_rep) + sizeof(karg)];
	struct nxqd_rep *rp = (void *)rep;
	struct nxqd_req_ctx r = { .c = c };
	const struct nxqd_ioc *op;
	struct nxq_holder *h;
	size_t outlen;
	ssize_t n;
	int err;

	c->task = current;
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: client pid %d uid %u gid %u\n",
			c->peer.pid, c->peer.uid, c->peer.gid);
	for (;;) {
		n = nxqd_recv(c, msg, sizeof(msg), &r);
		if (n <= 0)
			break;	/* 0: the peer is gone */
		memset(rp, 0, sizeof(*rp));
		op = NULL;
		h = NULL;
		outlen = 0;
		if ((size_t)n > sizeof(msg))
			err = -E2BIG;
		else if (!r.pid)
			err = -EPERM;	/* no credentials: not from the kernel */
		else
			err = nxqd_handle(&r, msg, (size_t)n, &karg, &outlen,
					  &op, &h);
		nxqd_close_fds(&r);
		rp->err = err;
		memcpy(rep + sizeof(*rp), &karg, outlen);
		if (send(c->fd, rep, sizeof(*rp) + outlen, MSG_NOSIGNAL) < 0) {
			if (!err && op && op->undo)
				op->undo(&r, h, &karg);
			if (h)
				nxqd_holder_put(h);
			break;
		}
		if (h)
			nxqd_holder_put(h);
	}
	nxqd_end_holders(c, NULL);
	pthread_mutex_lock(&nxqd_lock);
	list_del(&c->link);
	nxqd_nr_conns--;
	pthread_cond_broadcast(&nxqd_conns_cond);
	pthread_mutex_unlock(&nxqd_lock);
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: client pid %d gone\n", c->peer.pid);
	nxqd_conn_free(c);
	return NULL;
}

/* Connections of @c's process and uid, the new one excluded; nxqd_lock. */
static bool nxqd_conn_allowed(struct nxqd_conn *c)
{
	unsigned int per_pid = 0, per_uid = 0;
	struct nxqd_conn *o;

	list_for_each_entry(o, &nxqd_conns, link) {
		per_pid += o->peer.pid == c->peer.pid;
		per_uid += o->peer.uid == c->peer.uid;
	}
	return per_pid < nxqd_conn_per_proc && per_uid < nxqd_conn_per_uid;
}

static void nxqd_accept_one(int lfd)
{
	struct nxqd_conn *c;
	socklen_t len;
	pthread_t tid;
	int fd, on = 1;

	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	c = calloc(1, sizeof(*c));
	len = sizeof(struct ucred);
	if (!c || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->peer, &len) ||
	    setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on))) {
		free(c);
		close(fd);
		return;
	}
	c->fd = fd;
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &c->peer_pidfd, &len))
		c->peer_pidfd = -1;	/* before Linux 6.5 */
	pthread_mutex_lock(&nxqd_lock);
	if (!nxqd_conn_allowed(c)) {
		nxqd_refused++;
		pthread_mutex_unlock(&nxqd_lock);
		if (nxqd_verbose)
			fprintf(stderr,
				"nxquotad: refused pid %d uid %u: too many connections (%lu refused)\n",
				c->peer.pid, c->peer.uid, nxqd_refused);
		nxqd_conn_free(c);
		return;
	}
	c->serial = ++nxqd_serial;
	list_add_tail(&c->link, &nxqd_conns);
	nxqd_nr_conns++;
	if (pthread_create(&tid, NULL, nxqd_conn_main, c)) {
		list_del(&c->link);
		nxqd_nr_conns--;
		pthread_mutex_unlock(&nxqd_lock);
		nxqd_conn_free(c);
		return;
	}
	pthread_mutex_unlock(&nxqd_lock);
	pthread_detach(tid);
}

static void *nxqd_accept_main(void *unused)
{
	struct pollfd pfd[2] = {
		{ .fd = nxqd_lfd, .events = POLLIN },
		{ .fd = nxqd_stopfd, .events = POLLIN },
	};

	for (;;) {
		if (poll(pfd, 2, -1) < 0)
			continue;
		if (pfd[1].revents)
			break;
		if (pfd[0].revents)
			nxqd_accept_one(nxqd_lfd);
	}
	return NULL;
}

/* ---- the watcher: process exits, hang-ups during a waiting charge ---- */

/* End an exited process's holders (taken off nxqd_procs, counted in nxqd_ending). */
static void nxqd_proc_exit(struct nxqd_proc *p)
{
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: pid %d exited\n", p->tgid);
	nxqd_end_holders(NULL, p);
	nxqd_proc_put(p);	/* the list's */
	pthread_mutex_lock(&nxqd_lock);
	if (!--nxqd_ending)
		pthread_cond_broadcast(&nxqd_ended);
	pthread_mutex_unlock(&nxqd_lock);
}

/*
 * nxqd_client_reap() - end every listed process that has exited, now
 *
 * A process's pidfd polls readable from its exit on, before its parent's
 * wait() can return; the watcher thread ends its holders when it gets to
 * it.  The control socket calls this before it reads the ledger, so that
 * a process its parent has reaped is never shown holding anything (as
 * with the module, whose release runs in the exiting task).  Waits for
 * the exits the watcher is ending.  O(listed processes): the control
 * socket is the administrator's.
 */
void nxqd_client_reap(void)
{
	struct nxqd_proc *p, *tmp;
	LIST_HEAD(gone);

	pthread_mutex_lock(&nxqd_lock);
	list_for_each_entry_safe(p, tmp, &nxqd_procs, link) {
		if (!nxqd_pidfd_exited(p->pidfd))
			continue;
		p->dead = true;
		list_move(&p->link, &gone);
		epoll_ctl(nxqd_epfd, EPOLL_CTL_DEL, p->pidfd, NULL);
		nxqd_ending++;
	}
	pthread_mutex_unlock(&nxqd_lock);
	list_for_each_entry_safe(p, tmp, &gone, link) {
		list_del_init(&p->link);
		nxqd_proc_exit(p);
	}
	pthread_mutex_lock(&nxqd_lock);
	while (nxqd_ending)
		pthread_cond_wait(&nxqd_ended, &nxqd_lock);
	pthread_mutex_unlock(&nxqd_lock);
}

static void *nxqd_watch_main(void *unused)
{
	struct epoll_event evs[16];
	int n, i;

	for (;;) {
		n = epoll_wait(nxqd_epfd, evs, ARRAY_SIZE(evs), -1);
		for (i = 0; i < n; i++) {
			u64 type = evs[i].data.u64 & 3;
			u64 serial = evs[i].data.u64 >> 2;

			if (type == NXQD_W_STOP)
				return NULL;
			pthread_mutex_lock(&nxqd_lock);
			if (type == NXQD_W_CONN) {
				struct nxqd_conn *c;

				list_for_each_entry(c, &nxqd_conns, link)
					if (c->serial == serial && c->waiting)
						uk_signal_task(c->task);
				pthread_mutex_unlock(&nxqd_lock);
			} else {
				struct nxqd_proc *p, *found = NULL;

				list_for_each_entry(p, &nxqd_procs, link)
					if (p->serial == serial)
						found = p;
				if (found) {
					found->dead = true;
					list_del(&found->link);
					epoll_ctl(nxqd_epfd, EPOLL_CTL_DEL,
						  found->pidfd, NULL);
					nxqd_ending++;
				}
				pthread_mutex_unlock(&nxqd_lock);
				if (found)
					nxqd_proc_exit(found);
			}
		}
	}
	return NULL;
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

static int nxqd_listen(const char *path, const char *group)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, probe, on = 1;
	mode_t mode = 0600;
	long gid;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "nxquotad: socket path too long: %s\n", path);
		errno = ENAMETOOLONG;
		return -1;
	}
	gid = nxqd_group(group ? group : "nxquota");
	if (group && gid < 0) {
		fprintf(stderr, "nxquotad: no group %s\n", group);
		errno = EINVAL;
		return -1;
	}
	if (gid >= 0)
		mode = 0660;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)))
		goto fail;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (errno != EADDRINUSE)
			goto fail;
		/* A socket file left by a daemon that died, or a live one? */
		probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (probe >= 0 &&
		    !connect(probe, (struct sockaddr *)&sa, sizeof(sa))) {
			fprintf(stderr, "nxquotad: already running on %s\n",
				path);
			close(probe);
			close(fd);
			errno = EADDRINUSE;
			return -1;
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			goto fail;
	}
	/* Who may connect: the group, as the udev rule gives /dev/nxquota. */
	if ((gid >= 0 && chown(path, -1, gid)) || chmod(path, mode) ||
	    listen(fd, 128)) {
		unlink(path);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

int nxqd_client_start(const char *path, const char *group)
{
	struct epoll_event ev = { .events = EPOLLIN,
				  .data.u64 = NXQD_W(NXQD_W_STOP, 0) };

	xa_init(&nxqd_holders);
	nxqd_epfd = epoll_create1(EPOLL_CLOEXEC);
	nxqd_stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (nxqd_epfd < 0 || nxqd_stopfd < 0 ||
	    epoll_ctl(nxqd_epfd, EPOLL_CTL_ADD, nxqd_stopfd, &ev))
		return -errno;
	/* a socket systemd made (nxquotad.socket) is systemd's to remove */
	nxqd_lfd = nxqd_listen_fds("client");
	if (nxqd_lfd < 0) {
		nxqd_lfd = nxqd_listen(path, group);
		if (nxqd_lfd < 0)
			return -errno;
		strscpy(nxqd_sock_path, path, sizeof(nxqd_sock_path));
	} else {
		int on = 1;

		if (setsockopt(nxqd_lfd, SOL_SOCKET, SO_PASSCRED, &on,
			       sizeof(on)))
			return -errno;
	}
	if (pthread_create(&nxqd_watcher, NULL, nxqd_watch_main, NULL))
		return -EAGAIN;
	if (pthread_create(&nxqd_acceptor, NULL, nxqd_accept_main, NULL))
		return -EAGAIN;
	return 0;
}

void nxqd_client_stop(void)
{
	struct nxqd_proc *p, *tmp;
	struct nxqd_conn *c;
	u64 one = 1;

	if (write(nxqd_stopfd, &one, sizeof(one)) < 0)
		return;
	pthread_join(nxqd_acceptor, NULL);
	close(nxqd_lfd);
	if (nxqd_sock_path[0])
		unlink(nxqd_sock_path);
	/* end every connection and every waiting charge */
	pthread_mutex_lock(&nxqd_lock);
	list_for_each_entry(c, &nxqd_conns, link)
		shutdown(c->fd, SHUT_RDWR);
	while (nxqd_nr_conns) {
		struct timespec ts;

		/* a request read before the shutdown may start a wait */
		list_for_each_entry(c, &nxqd_conns, link)
			if (c->waiting)
				uk_signal_task(c->task);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * NSEC_PER_MSEC;
		if (ts.tv_nsec >= NSEC_PER_SEC) {
			ts.tv_sec++;
			ts.tv_nsec -= NSEC_PER_SEC;
		}
		pthread_cond_timedwait(&nxqd_conns_cond, &nxqd_lock, &ts);
	}
	pthread_mutex_unlock(&nxqd_lock);
	pthread_join(nxqd_watcher, NULL);
	list_for_each_entry_safe(p, tmp, &nxqd_procs, link) {
		list_del(&p->link);
		nxqd_proc_put(p);
	}
	xa_destroy(&nxqd_holders);
	close(nxqd_epfd);
	close(nxqd_stopfd);
}
