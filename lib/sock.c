// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The kernel ops over nxquotad's client socket ("nxquotad").
 *
 * Framing is daemon/proto.h: one SOCK_SEQPACKET message per request (a
 * struct nxqd_req, then the ioctl's argument struct), one per reply.  Who
 * asks is the kernel's to say (the daemon reads SCM_CREDENTIALS, which the
 * kernel attaches because the daemon set SO_PASSCRED): nothing here sends
 * an identity.  NXQ_IOC_HOLDER_REGISTER carries the eventfd, then the
 * device node, by SCM_RIGHTS in the same message.
 *
 * Objects (struct sk, the context's kpriv):
 *  - a pool of connections (at most SK_CONNS_MAX): a request pops one,
 *    or connects a new one, and pushes it back when answered.  Holders
 *    are valid on every connection of the process, so a charge waiting
 *    in the daemon holds one connection while the pressure thread reads
 *    and answers its tickets on another; waiting charges never hold the
 *    last one.  Connections are closed only by a reconnect and by close
 *    (a holder ends when its registering connection closes), and when the
 *    daemon refuses a new one (its bound on connections per process):
 *    the pool then keeps to the ones it has.
 *  - the holders (lib ids = table index + 1, stable across reconnects;
 *    the daemon's ids change): what is needed to register one again
 *    (device, priority, our duplicates of its eventfd and device node)
 *    and what the library holds charged through it.
 *
 * Reconnect (s->rw): every request holds s->rw for reading while in
 * flight; a request that sees the daemon go away (ECONNRESET, EPIPE,
 * ENOTCONN, end of file) drops it and takes it for writing in
 * sk_reconnect().  There no request is in flight, so every connection is
 * in the pool: all are closed (ending any holder still registered on
 * them), a new one is made (retrying up to NXQUOTA_RECONNECT_MS, default
 * 10000), every holder is registered again and its charge charged with
 * NXQ_CHARGE_NOWAIT, and the epoch is bumped.  The failed call is then
 * sent again as new if it is a charge (a charge the daemon was still
 * deciding was never granted), or dropped if it is an uncharge or a
 * ticket answer (the local charge already excludes it, so the restore
 * did too): nothing is granted twice and nothing is lost.
 *
 * The watcher (a thread of its own, sk_watch()): every connection is in an
 * epoll set for EPOLLRDHUP.  When one hangs up, the watcher takes s->rw
 * for writing (waiting out requests in flight, which fail on the same
 * hang-up), and if a pooled connection has really ended it reconnects and
 * restores at once: an idle process -- one making no call while the
 * daemon restarts -- restores within the daemon's grace window instead
 * of at its next call, which may come after the window or never.  A
 * hang-up of one connection alone (the daemon's bound refusing a new one)
 * finds the others alive and does nothing.  While the daemon stays away
 * (s->broken) the watcher tries again every SK_WATCH_RETRY_MS.
 *
 * Protocol (<linux/nxquotad.h>): NXQ_IOC_VERSION at version 1 on each new
 * daemon (sk_hello()); a daemon of the first protocol refuses it and is
 * spoken to at version 0.  At version 1 a restore says so: the
 * registration carries NXQD_REQ_RESTORE and the holder's id on the daemon
 * that went, its charge NXQD_REQ_RESTORE (the daemon grants up to what it
 * recorded for that holder, and may hold the answer until the others have
 * restored), and NXQ_IOC_VERSION with NXQD_REQ_RESTORED ends the restore,
 * so the daemon's grace window closes as soon as every process is back;
 * growth meanwhile waits in the daemon instead of failing.
 *
 * A restore charge answered -EAGAIN (the daemon's grace after a restart
 * holds back a process it did not list) is asked again with
 * NXQ_CHARGE_WAIT, up to NXQUOTA_RECONNECT_MS.
 *
 * A restore the daemon refuses (the memory no longer fits: another
 * process took it meanwhile, a budget was lowered) leaves the holder's
 * charge "unbacked": held by the library, not charged by the daemon.  It
 * is reported once (one line on stderr per context, and the arena sees
 * a pressure ticket: its stats count it, its event hook gets
 * NXQ_EVENT_TICKET with reason NXQ_TICKET_REASON_BUDGET): the holder's
 * eventfd is signalled and the next ticket read returns a ticket made
 * here asking for the unbacked bytes, so the arena gives back what it can
 * through its normal pressure path (pool, idle memory, reclaim
 * callbacks).  Its answer is settled here: released bytes reduce the
 * unbacked part first, and what remains unbacked is asked of the daemon
 * again (NOWAIT).  Until it is granted, the holder's next charge asks
 * for the unbacked bytes too, and its uncharges take from them first.
 *
 * Lock order: s->rw, then s->mu (the pool, the holder table and every
 * holder's fields).  No lock but s->rw (read) is held across a request.
 * The watcher holds none while it waits.
 *
 * Fork: the context belongs to the parent (nxq__forked(): every op
 * answers -ECHILD in a child); nxq_ctx_close() in the child only closes
 * its copies of the descriptors (sk_forget()), sending nothing.
 *
 * Layer 2 (kernel ops, reached through nxq__sock_kops): calls only err.c
 * and options.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "gpu_node.h"
#include "internal.h"
#include "../daemon/proto.h"

#define SK_CONNS_MAX	8
#define SK_SYN_GEN	(1ULL << 63)	/* generations of restore tickets */
#define SK_IOC(cmd)	((uint32_t)(cmd))
#define SK_WATCH_RETRY_MS 200	/* the watcher's pace while the daemon is away */

const char *nxq__sock_default = NXQD_SOCKET_PATH;

struct sk_conn {
	int fd;
	int fresh;			/* no reply read on it yet */
	int waiting;			/* held by a waiting charge */
	struct sk_conn *next;		/* in the pool */
	struct sk_conn *all;		/* every connection (for sk_forget) */
};

struct sk_holder {
	struct nxq_holder_reg reg;	/* device, priority, flags as registered */
	int evfd, devfd;		/* our duplicates, or -1 */
	int live;
	uint64_t dmn_id;		/* the daemon's id now; 0: it does not know us */
	uint64_t charged;		/* bytes the library holds charged through it */
	uint64_t unbacked;		/* the part of charged the daemon did not take back */
	uint64_t reclaimable;		/* last reported by the arena */
	uint64_t syn_gen;		/* the restore ticket read, or 0 */
	int syn_pending;		/* a restore ticket waits to be read */
};

struct sk {
	struct sockaddr_un addr;
	pthread_rwlock_t rw;		/* read: a request in flight; write: reconnect */
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* a connection came back */
	struct sk_conn *pool, *all;
	int nconns;
	int cap;			/* SK_CONNS_MAX, lower once the daemon refused one */
	int nwait;			/* connections held by waiting charges */
	unsigned int epoch;		/* bumped by each reconnect */
	uint16_t proto;			/* the daemon's protocol (<linux/nxquotad.h>): 0 or 1 */
	int broken;			/* the last reconnect failed */
	struct sk_holder **h;
	int nh, hcap;
	uint64_t reconnect_ms;
	uint64_t syn_next;
	int reported;
	/* the watcher */
	int epfd;			/* every connection, for EPOLLRDHUP */
	int stopfd;			/* an eventfd: stop (in that set too) */
	int watching;			/* the thread runs */
	int stopping;			/* close: the reconnect loop gives up */
	pthread_t watcher;
	/* for the tests */
	unsigned long reconnects, restores_refused, conns_made, conns_refused;
};

static int is_gone(int r)
{
	return r == -ECONNRESET || r == -EPIPE || r == -ENOTCONN || r == -ECONNREFUSED ||
	       r == -ENOENT;
}

/* ---- one request on one connection ---- */

/*
 * Sends cmd with len bytes of arg (and fds), reads the reply into arg
 * (at most outlen bytes).  Returns 0 with *errp the daemon's answer, or a
 * negative errno of the transport (-ECONNRESET for end of file).
 */
static int sk_xfer_v(int fd, uint16_t ver, uint16_t flags, uint32_t cmd, void *arg,
		     uint32_t len, uint32_t outlen, const int *fds, int nfds, int *errp,
		     uint16_t *repver)
{
	struct nxqd_req req = { .cmd = cmd, .version = ver, .flags = flags };
	struct iovec iov[2] = { { &req, sizeof(req) }, { arg, len } };
	union {
		char buf[CMSG_SPACE(sizeof(int) * (NXQD_FDS_MAX + 2))];
		struct cmsghdr align;
	} cm;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
	struct {
		struct nxqd_rep rep;
		char arg[NXQD_ARG_MAX];
	} in;
	struct cmsghdr *c;
	ssize_t n;

	memset(&cm, 0, sizeof(cm));
	if (nfds) {
		m.msg_control = cm.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(fd, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	memset(&m, 0, sizeof(m));
	iov[0].iov_base = &in;
	iov[0].iov_len = sizeof(in);
	m.msg_iov = iov;
	m.msg_iovlen = 1;
	m.msg_control = cm.buf;
	m.msg_controllen = sizeof(cm.buf);
	do
		n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* The daemon sends no descriptors: close any that came. */
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int x;

				memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				close(x);
			}
	if (n == 0)
		return -ECONNRESET;	/* the daemon closed the connection */
	if ((size_t)n < sizeof(in.rep) || (m.msg_flags & MSG_TRUNC) ||
	    in.rep.err > 0 || in.rep.err < -4095)
		return -EPROTO;
	n -= sizeof(in.rep);
	if (!in.rep.err && outlen)
		memcpy(arg, in.arg, (size_t)n < outlen ? (size_t)n : outlen);
	*errp = in.rep.err;
	if (repver)
		*repver = in.rep.version;
	return 0;
}

/* A request at the protocol this connection's daemon speaks, no flags. */
#define sk_xfer(fd, ...) sk_xfer_v(fd, s->proto, 0, __VA_ARGS__, NULL)

/*
 * Which protocol the daemon on fd speaks: NXQ_IOC_VERSION at version 1;
 * a daemon of the first protocol refuses a non-zero version (-EINVAL):
 * ask again at 0.  0 with *v filled and s->proto set, or a transport
 * error.
 */
static int sk_hello(struct sk *s, int fd, struct nxq_version *v, int *errp)
{
	uint16_t repver = 0;
	int r;

	r = sk_xfer_v(fd, NXQD_PROTO_VERSION, 0, SK_IOC(NXQ_IOC_VERSION), v, sizeof(*v),
		      sizeof(*v), NULL, 0, errp, &repver);
	if (!r && *errp == -EINVAL) {
		s->proto = 0;
		return sk_xfer_v(fd, 0, 0, SK_IOC(NXQ_IOC_VERSION), v, sizeof(*v), sizeof(*v),
				 NULL, 0, errp, NULL);
	}
	if (!r)
		s->proto = repver >= NXQD_PROTO_VERSION ? NXQD_PROTO_VERSION : 0;
	return r;
}

static int sk_connect(const struct sk *s)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return -errno;
	do
		r = connect(fd, (const struct sockaddr *)&s->addr, sizeof(s->addr));
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* ---- the pool (s->rw held for reading) ---- */

static struct sk_conn *conn_new(struct sk *s, int fd)
{
	struct sk_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = fd;
	c->fresh = 1;
	if (s->epfd >= 0) {
		struct epoll_event ev = { .events = EPOLLRDHUP | EPOLLET, .data.u64 = 1 };

		/* failing that, this connection is noticed at its next use */
		epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
	}
	c->all = s->all;	/* under s->mu */
	s->all = c;
	s->conns_made++;
	return c;
}

static void conn_unlink(struct sk *s, struct sk_conn *c)
{
	struct sk_conn **p;

	for (p = &s->all; *p; p = &(*p)->all)
		if (*p == c) {
			*p = c->all;
			break;
		}
}

/*
 * A connection for one request: a pooled one, else a new one up to
 * s->cap, else wait for one to come back.  A waiting charge never takes
 * the last connection (s->nwait < s->cap - 1): the pressure thread must
 * be able to answer the tickets that would grant it.  If a new connection
 * fails while others exist, the daemon is bounding this process (64
 * connections per process): make do with those.
 */
static int conn_get(struct sk *s, struct sk_conn **cp, int waiting)
{
	struct sk_conn *c = NULL;
	int fd;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		if (waiting && s->cap > 1 && s->nwait >= s->cap - 1) {
			pthread_cond_wait(&s->cv, &s->mu);
			continue;
		}
		if (s->pool) {
			c = s->pool;
			s->pool = c->next;
			break;
		}
		if (s->nconns < s->cap) {
			s->nconns++;
			pthread_mutex_unlock(&s->mu);
			fd = sk_connect(s);
			pthread_mutex_lock(&s->mu);
			c = fd >= 0 ? conn_new(s, fd) : NULL;
			if (c)
				break;
			s->nconns--;
			if (fd >= 0)
				close(fd);
			if (!s->nconns) {
				pthread_cond_broadcast(&s->cv);
				pthread_mutex_unlock(&s->mu);
				return fd < 0 ? fd : -ENOMEM;
			}
			s->cap = s->nconns;
			continue;
		}
		pthread_cond_wait(&s->cv, &s->mu);
	}
	c->waiting = waiting;
	s->nwait += waiting;
	pthread_mutex_unlock(&s->mu);
	*cp = c;
	return 0;
}

/* broken: closed (the daemon went away on it, or refused it: refused). */
static void conn_put(struct sk *s, struct sk_conn *c, int broken, int refused)
{
	pthread_mutex_lock(&s->mu);
	s->nwait -= c->waiting;
	c->waiting = 0;
	if (broken) {
		conn_unlink(s, c);
		close(c->fd);
		free(c);
		s->nconns--;
		if (refused && s->nconns)
			s->cap = s->nconns;
	} else {
		c->next = s->pool;
		s->pool = c;
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/*
 * One request on a pooled connection: 0 with *errp, or a transport error.
 * A new connection that ends before its first reply while others are
 * open was refused by the daemon's bound, not lost with the daemon: the
 * request (never read) goes on another connection.
 */
static int sk_req(struct sk *s, uint32_t cmd, void *arg, uint32_t len, uint32_t outlen,
		  const int *fds, int nfds, int *errp)
{
	int waiting = _IOC_NR(cmd) == _IOC_NR(NXQ_IOC_CHARGE) &&
		      (((struct nxq_charge *)arg)->flags & NXQ_CHARGE_WAIT);

	for (;;) {
		struct sk_conn *c;
		int r = conn_get(s, &c, waiting), gone, others;

		if (r)
			return r;
		r = sk_xfer(c->fd, cmd, arg, len, outlen, fds, nfds, errp);
		gone = is_gone(r);
		if (gone && c->fresh) {
			pthread_mutex_lock(&s->mu);
			others = s->nconns - 1;
			if (others > 0)
				s->conns_refused++;
			pthread_mutex_unlock(&s->mu);
			if (others > 0) {
				conn_put(s, c, 1, 1);
				continue;
			}
		}
		if (!r)
			__atomic_store_n(&c->fresh, 0, __ATOMIC_RELAXED);
		conn_put(s, c, gone, 0);
		return r;
	}
}

/*
 * A request about a holder the library holds: -ENOENT from the daemon
 * means it no longer knows the holder -- it restarted (and this request
 * went on a connection made to the new daemon before anyone noticed) or
 * dropped the holder's connection -- so it is handled as the daemon going
 * away: reconnect and restore.
 */
static int sk_hreq(struct sk *s, uint32_t cmd, void *arg, uint32_t len, uint32_t outlen,
		   int *errp)
{
	int r = sk_req(s, cmd, arg, len, outlen, NULL, 0, errp);

	if (!r && *errp == -ENOENT)
		r = -ENOTCONN;
	return r;
}

/* ---- holders ---- */

static struct sk_holder *holder_get(struct sk *s, uint64_t id)
{
	struct sk_holder *h = NULL;

	pthread_mutex_lock(&s->mu);
	if (id && id <= (uint64_t)s->nh && s->h[id - 1] && s->h[id - 1]->live)
		h = s->h[id - 1];
	pthread_mutex_unlock(&s->mu);
	return h;
}

static int holder_fds(const struct sk_holder *h, struct nxq_holder_reg *reg, int fds[2])
{
	int n = 0;

	*reg = h->reg;
	reg->size = sizeof(*reg);
	reg->holder_id = 0;
	reg->eventfd = h->evfd;
	reg->devfd = 0;
	if (h->evfd >= 0)
		fds[n++] = h->evfd;
	if (h->devfd >= 0) {
		reg->flags |= NXQ_HOLDER_DEVFD;
		reg->devfd = h->devfd;
		fds[n++] = h->devfd;
	}
	return n;
}

static void report_refused(struct sk *s, const struct sk_holder *h, int err)
{
	uint64_t one = 1;

	s->restores_refused++;
	if (h->evfd >= 0) {
		ssize_t w = write(h->evfd, &one, sizeof(one));

		(void)w;	/* fails only when saturated: a signal is pending anyway */
	}
	if (!s->reported++)
		fprintf(stderr, "libnxquota: nxquotad did not take back %llu bytes held on \"%s\" "
			"after a reconnect (%s); giving them back through the pressure path\n",
			(unsigned long long)h->unbacked, h->reg.device, strerror(-err));
}

/* ---- reconnect ---- */

static uint64_t now_ms(void)
{
	return nxq__now_ns() / 1000000ULL;
}

/* Register h again and restore its charge on fd (s->rw held for writing). */
static int restore_holder(struct sk *s, int fd, struct sk_holder *h)
{
	struct nxq_holder_reg reg;
	struct nxq_charge c = { .size = sizeof(c), .flags = NXQ_CHARGE_NOWAIT };
	int fds[2], n = holder_fds(h, &reg, fds), err, r;
	/* version 1: the registration and the charge say they restore */
	uint16_t rf = s->proto ? NXQD_REQ_RESTORE : 0;

	if (rf)
		reg.holder_id = h->dmn_id;	/* its id on the daemon that went */
	h->dmn_id = 0;
	h->syn_gen = 0;
	r = sk_xfer_v(fd, s->proto, rf, SK_IOC(NXQ_IOC_HOLDER_REGISTER), &reg, sizeof(reg),
		      sizeof(reg), fds, n, &err, NULL);
	if (r)
		return r;
	if (!err && !reg.holder_id)
		err = -EPROTO;
	if (err)
		goto refused;
	h->dmn_id = reg.holder_id;
	h->unbacked = 0;
	h->syn_pending = 0;
	if (h->charged) {
		c.holder_id = h->dmn_id;
		c.bytes = h->charged;
		/*
		 * At version 1 the answer may wait for the other processes'
		 * restores (the daemon's grace window): recv() waits with it.
		 */
		r = sk_xfer_v(fd, s->proto, rf, SK_IOC(NXQ_IOC_CHARGE), &c, sizeof(c), sizeof(c),
			      NULL, 0, &err, NULL);
		if (!r && err == -EAGAIN) {
			/*
			 * The daemon's grace after a restart holds back processes
			 * it did not list (we may have registered just before it
			 * died): wait for the grace to end, as a new charge would.
			 */
			c.flags = NXQ_CHARGE_WAIT;
			c.timeout_ns = s->reconnect_ms * 1000000ULL;
			r = sk_xfer_v(fd, s->proto, rf, SK_IOC(NXQ_IOC_CHARGE), &c, sizeof(c),
				      sizeof(c), NULL, 0, &err, NULL);
		}
		if (r)
			return r;
		if (err)
			goto refused;
	}
	if (h->reclaimable) {
		struct nxq_reclaimable rc = { .size = sizeof(rc), .holder_id = h->dmn_id,
					      .bytes = h->reclaimable < h->charged ?
						       h->reclaimable : h->charged };

		r = sk_xfer(fd, SK_IOC(NXQ_IOC_SET_RECLAIMABLE), &rc, sizeof(rc), 0, NULL, 0,
			    &err);
		if (r)
			return r;
	}
	return 0;
refused:
	h->unbacked = h->charged;
	if (h->unbacked) {
		h->syn_pending = 1;
		report_refused(s, h, err);
	}
	return 0;
}

/*
 * The daemon went away under epoch: connect again and restore every
 * holder (once: whoever comes first does it).  0, or a negative errno
 * with the message set if the daemon stayed away.
 */
static int sk_reconnect_locked(struct sk *s)
{
	uint64_t deadline;
	unsigned int delay_ms = 10;
	int fd = -1, r = 0;

	/* No request is in flight: every connection is in the pool. */
	while (s->pool) {
		struct sk_conn *c = s->pool;

		s->pool = c->next;
		conn_unlink(s, c);
		close(c->fd);
		free(c);
	}
	s->nconns = 0;
	s->nwait = 0;
	s->cap = SK_CONNS_MAX;
	/* After a failed reconnect, one more try per call rather than a full wait each. */
	deadline = now_ms() + (s->broken ? 0 : s->reconnect_ms);
	for (;;) {
		struct nxq_version v = { .size = sizeof(v) };
		int err;

		fd = sk_connect(s);
		if (fd >= 0) {
			r = sk_hello(s, fd, &v, &err);
			if (!r && !err && v.abi_version != NXQ_ABI_VERSION)
				r = -EPROTO;
			for (int i = 0; !r && i < s->nh; i++)
				if (s->h[i] && s->h[i]->live)
					r = restore_holder(s, fd, s->h[i]);
			if (!r && s->proto) {
				/* version 1: all restored; the window may close */
				r = sk_xfer_v(fd, s->proto, NXQD_REQ_RESTORED,
					      SK_IOC(NXQ_IOC_VERSION), &v, sizeof(v), sizeof(v),
					      NULL, 0, &err, NULL);
			}
			if (!r)
				break;
			close(fd);
			fd = -1;
			if (r == -EPROTO)
				break;
		} else {
			r = fd;
		}
		if (now_ms() >= deadline || __atomic_load_n(&s->stopping, __ATOMIC_RELAXED))
			break;
		{
			struct timespec ts = { 0, (long)delay_ms * 1000000L };

			nanosleep(&ts, NULL);
		}
		if (delay_ms < 200)
			delay_ms *= 2;
	}
	if (fd < 0) {
		s->broken = 1;
		r = nxq__err(r ? r : -ENOTCONN, "nxquota: lost nxquotad at %s and could not "
			     "reconnect within %llu ms: %s", s->addr.sun_path,
			     (unsigned long long)s->reconnect_ms, strerror(r ? -r : ENOTCONN));
		goto out;
	}
	pthread_mutex_lock(&s->mu);
	s->pool = conn_new(s, fd);
	if (s->pool) {
		s->nconns = 1;
	} else {
		close(fd);	/* out of memory: the next request connects */
	}
	pthread_mutex_unlock(&s->mu);
	s->broken = 0;
	s->epoch++;
	s->reconnects++;
	r = 0;
out:
	return r;
}

static int sk_reconnect(struct nxq_ctx *ctx, unsigned int epoch)
{
	struct sk *s = ctx->kpriv;
	int r = 0;

	pthread_rwlock_wrlock(&s->rw);
	if (s->epoch == epoch || s->broken)	/* else done meanwhile */
		r = sk_reconnect_locked(s);
	pthread_rwlock_unlock(&s->rw);
	return r;
}

/*
 * Whether a pooled connection has ended (s->rw held for writing: every
 * connection is in the pool).
 */
static int sk_pool_gone(struct sk *s)
{
	for (struct sk_conn *c = s->pool; c; c = c->next) {
		struct pollfd p = { .fd = c->fd, .events = POLLRDHUP };

		if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			return 1;
	}
	return 0;
}

/*
 * After a hang-up: whether the daemon has gone, rather than refused one
 * new connection (its bound per process) -- a connection that had a reply
 * ended, or every connection did.  s->rw held for reading (no reconnect
 * closes connections meanwhile), s->mu taken (nor does a request).
 */
static int sk_daemon_gone(struct sk *s)
{
	int n = 0, ended = 0, answered = 0;

	pthread_mutex_lock(&s->mu);
	for (struct sk_conn *c = s->all; c; c = c->all) {
		struct pollfd p = { .fd = c->fd, .events = POLLRDHUP };
		int end = poll(&p, 1, 0) > 0 &&
			  (p.revents & (POLLRDHUP | POLLHUP | POLLERR));

		n++;
		ended += end;
		/* tolerated race: fresh is cleared by the request that reads a reply */
		answered += end && !__atomic_load_n(&c->fresh, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&s->mu);
	return answered || (n && ended == n);
}

/*
 * The watcher: a connection hung up -- if the daemon has gone, reconnect
 * and restore now, not at this process's next call.  Edge-triggered: a
 * refused connection is reported once, and closed by its request.
 */
static void *sk_watch(void *arg)
{
	struct sk *s = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		struct epoll_event ev[8];
		int n, stop = 0, hup = 0, broken, gone;

		/* tolerated race: broken is written under s->rw, read here to pace */
		broken = __atomic_load_n(&s->broken, __ATOMIC_RELAXED);
		n = epoll_wait(s->epfd, ev, 8, broken ? SK_WATCH_RETRY_MS : -1);
		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			if (!ev[i].data.u64)
				stop = 1;
			else
				hup = 1;
		}
		if (stop || __atomic_load_n(&s->stopping, __ATOMIC_RELAXED))
			break;
		if (!hup && !broken)
			continue;
		pthread_rwlock_rdlock(&s->rw);
		gone = s->broken || sk_daemon_gone(s);
		pthread_rwlock_unlock(&s->rw);
		if (!gone)
			continue;
		pthread_rwlock_wrlock(&s->rw);
		if (s->broken || sk_pool_gone(s))
			sk_reconnect_locked(s);
		pthread_rwlock_unlock(&s->rw);
	}
	return NULL;
}

/*
 * A holder the daemon did not register again at the last restore (its
 * device was not there yet, say): register it now and restore its charge,
 * on a pooled connection (s->rw for writing: nothing in flight).  0 once
 * the daemon has it, -ENOLINK if it still refuses.
 */
static int sk_readopt(struct nxq_ctx *ctx, uint64_t holder)
{
	struct sk *s = ctx->kpriv;
	struct nxq_holder_reg reg;
	struct sk_holder *h;
	struct sk_conn *c;
	int fds[2], n, err = 0, r = -ENOLINK;

	pthread_rwlock_wrlock(&s->rw);
	h = holder <= (uint64_t)s->nh ? s->h[holder - 1] : NULL;
	if (!h || !h->live || h->dmn_id || s->broken) {
		r = h && h->dmn_id ? 0 : -ENOLINK;
		goto out;
	}
	c = s->pool;
	if (!c)
		goto out;
	n = holder_fds(h, &reg, fds);
	if (sk_xfer(c->fd, SK_IOC(NXQ_IOC_HOLDER_REGISTER), &reg, sizeof(reg), sizeof(reg), fds,
		    n, &err) || err || !reg.holder_id)
		goto out;	/* a lost connection: the next call reconnects */
	h->dmn_id = reg.holder_id;
	r = 0;
	if (h->unbacked) {
		struct nxq_charge ch = { .size = sizeof(ch), .flags = NXQ_CHARGE_NOWAIT,
					 .holder_id = h->dmn_id, .bytes = h->unbacked };

		if (!sk_xfer(c->fd, SK_IOC(NXQ_IOC_CHARGE), &ch, sizeof(ch), sizeof(ch), NULL, 0,
			     &err) && !err) {
			h->unbacked = 0;
			h->syn_pending = 0;
		}
	}
out:
	pthread_rwlock_unlock(&s->rw);
	return r;
}

/*
 * Start a request: s->rw held for reading, the epoch noted.  A context
 * whose last reconnect failed tries once more first.
 */
static int sk_begin(struct nxq_ctx *ctx, unsigned int *epoch)
{
	struct sk *s = ctx->kpriv;

	if (nxq__forked(ctx))
		return nxq__fork_err();
	for (;;) {
		pthread_rwlock_rdlock(&s->rw);
		*epoch = s->epoch;
		if (!s->broken)
			return 0;
		pthread_rwlock_unlock(&s->rw);
		int r = sk_reconnect(ctx, *epoch);

		if (r)
			return r;
	}
}

static void sk_end(struct nxq_ctx *ctx)
{
	pthread_rwlock_unlock(&((struct sk *)ctx->kpriv)->rw);
}

/* ---- the ops ---- */

static int sk_version(struct nxq_ctx *ctx, struct nxq_version *v)
{
	struct sk *s = ctx->kpriv;
	unsigned int epoch;
	int err = 0, r;

	r = sk_begin(ctx, &epoch);
	if (r)
		return r;
	r = sk_req(s, SK_IOC(NXQ_IOC_VERSION), v, sizeof(*v), sizeof(*v), NULL, 0, &err);
	sk_end(ctx);
	return r ? r : err;
}

static int sk_register(struct nxq_ctx *ctx, struct nxq_holder_reg *reg)
{
	struct sk *s = ctx->kpriv;
	struct sk_holder *h = calloc(1, sizeof(*h));
	struct nxq_holder_reg out;
	int fds[2], n, minor, err = 0, r;
	unsigned int epoch;
	char node[32];

	if (!h)
		return -ENOMEM;
	h->reg = *reg;
	h->reg.flags &= ~NXQ_HOLDER_DEVFD;
	h->reg.devfd = 0;
	h->evfd = h->devfd = -1;
	if (reg->eventfd >= 0) {
		h->evfd = fcntl(reg->eventfd, F_DUPFD_CLOEXEC, 3);
		if (h->evfd < 0) {
			r = -errno;
			free(h);
			return r;
		}
	}
	/* As for the module: a GPU's device takes a holder only with its node open. */
	minor = nxq__gpu_minor(reg->device);
	if (minor >= 0) {
		snprintf(node, sizeof(node), "/dev/nvidia%d", minor);
		h->devfd = open(node, O_RDONLY | O_CLOEXEC);
	}
	for (;;) {
		r = sk_begin(ctx, &epoch);
		if (r)
			break;
		n = holder_fds(h, &out, fds);
		r = sk_req(s, SK_IOC(NXQ_IOC_HOLDER_REGISTER), &out, sizeof(out), sizeof(out),
			   fds, n, &err);
		if (!r && !err && !out.holder_id)
			err = -EPROTO;
		if (!r && !err) {
			pthread_mutex_lock(&s->mu);
			if (s->nh == s->hcap) {
				int cap = s->hcap ? s->hcap * 2 : 16;
				struct sk_holder **t = realloc(s->h, (size_t)cap * sizeof(*t));

				if (!t) {
					pthread_mutex_unlock(&s->mu);
					err = -ENOMEM;
					/* the holder ends with its connection at worst;
					 * unregister it now */
					{
						struct nxq_holder_id hid = {
							.size = sizeof(hid),
							.holder_id = out.holder_id };
						int e2;

						sk_req(s, SK_IOC(NXQ_IOC_HOLDER_UNREGISTER), &hid,
						       sizeof(hid), 0, NULL, 0, &e2);
					}
					sk_end(ctx);
					break;
				}
				s->h = t;
				s->hcap = cap;
			}
			h->dmn_id = out.holder_id;
			h->live = 1;
			s->h[s->nh++] = h;
			reg->holder_id = (uint64_t)s->nh;
			pthread_mutex_unlock(&s->mu);
			sk_end(ctx);
			return 0;
		}
		sk_end(ctx);
		if (!r)
			break;		/* the daemon's answer */
		if (!is_gone(r))
			break;
		r = sk_reconnect(ctx, epoch);
		if (r)
			break;
	}
	if (h->evfd >= 0)
		close(h->evfd);
	if (h->devfd >= 0)
		close(h->devfd);
	free(h);
	return r ? r : err;
}

static int sk_unregister(struct nxq_ctx *ctx, uint64_t holder)
{
	struct sk *s = ctx->kpriv;
	struct nxq_holder_id hid = { .size = sizeof(hid) };
	struct sk_holder *h;
	unsigned int epoch;
	int err = 0, r;

	r = sk_begin(ctx, &epoch);
	if (r)
		return r;
	h = holder_get(s, holder);
	if (!h) {
		sk_end(ctx);
		return -ENOENT;
	}
	pthread_mutex_lock(&s->mu);
	h->live = 0;	/* a reconnect from now on leaves it out */
	hid.holder_id = h->dmn_id;
	pthread_mutex_unlock(&s->mu);
	if (hid.holder_id)
		r = sk_req(s, SK_IOC(NXQ_IOC_HOLDER_UNREGISTER), &hid, sizeof(hid), 0, NULL, 0,
			   &err);
	/* No other call uses it now (the arena is detached): free it; ids are not reused. */
	pthread_mutex_lock(&s->mu);
	s->h[holder - 1] = NULL;
	pthread_mutex_unlock(&s->mu);
	sk_end(ctx);
	if (h->evfd >= 0)
		close(h->evfd);
	if (h->devfd >= 0)
		close(h->devfd);
	free(h);
	if (is_gone(r))		/* ended with the connection; the restore leaves it out */
		return sk_reconnect(ctx, epoch);
	return r ? r : err;
}

static int sk_charge_flags(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes,
			   uint64_t timeout_ns, uint32_t probe)
{
	struct sk *s = ctx->kpriv;
	uint64_t deadline = timeout_ns ? nxq__now_ns() + timeout_ns : 0;
	struct sk_holder *h;
	unsigned int epoch;
	int err = 0, r, tries = 0, readopted = 0;

	for (;;) {
		struct nxq_charge c = { .size = sizeof(c), .flags = NXQ_CHARGE_NOWAIT | probe };
		uint64_t take;

		r = sk_begin(ctx, &epoch);
		if (r)
			return r;
		h = holder_get(s, holder);
		if (!h) {
			sk_end(ctx);
			return -ENOENT;
		}
		pthread_mutex_lock(&s->mu);
		if (!h->dmn_id) {
			pthread_mutex_unlock(&s->mu);
			sk_end(ctx);
			if (readopted++ || sk_readopt(ctx, holder))
				return nxq__err(-ENOLINK, "nxquota: nxquotad did not take this holder "
						"back after its restart");
			continue;
		}
		/* Bytes held but unbacked since a restore are asked for first. */
		take = h->unbacked;
		h->unbacked = 0;
		c.holder_id = h->dmn_id;
		pthread_mutex_unlock(&s->mu);
		if (bytes + take < bytes) {
			r = -EOVERFLOW;
			goto undo;
		}
		c.bytes = bytes + take;
		if (deadline) {
			uint64_t now = nxq__now_ns();

			c.flags = NXQ_CHARGE_WAIT;
			c.timeout_ns = deadline > now ? deadline - now : 1;
		}
		r = sk_hreq(s, SK_IOC(NXQ_IOC_CHARGE), &c, sizeof(c), sizeof(c), &err);
		if (!r && !err) {
			pthread_mutex_lock(&s->mu);
			h->charged += bytes;
			pthread_mutex_unlock(&s->mu);
			sk_end(ctx);
			return 0;
		}
undo:
		pthread_mutex_lock(&s->mu);
		h->unbacked += take;
		pthread_mutex_unlock(&s->mu);
		sk_end(ctx);
		if (!r)
			return err;
		if (!is_gone(r))
			return r;
		/* Never granted: ask again, as new, once the holders are back. */
		if (++tries > 3)	/* a daemon that forgets us at once, again and again */
			return nxq__err(r, "nxquota: nxquotad keeps losing this holder");
		r = sk_reconnect(ctx, epoch);
		if (r)
			return r;
		if (deadline && nxq__now_ns() >= deadline)
			return -ETIMEDOUT;
	}
}

static int sk_charge(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes, uint64_t timeout_ns)
{
	return sk_charge_flags(ctx, holder, bytes, timeout_ns, 0);
}

/* As sk_charge() (bytes left unbacked by a restore go with it), with PROBE. */
static int sk_probe(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes)
{
	return sk_charge_flags(ctx, holder, bytes, 0, NXQ_CHARGE_PROBE);
}

static int sk_uncharge(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes)
{
	struct sk *s = ctx->kpriv;
	struct nxq_charge c = { .size = sizeof(c) };
	struct sk_holder *h;
	unsigned int epoch;
	uint64_t local;
	int err = 0, r;

	r = sk_begin(ctx, &epoch);
	if (r)
		return r;
	h = holder_get(s, holder);
	if (!h) {
		sk_end(ctx);
		return -ENOENT;
	}
	pthread_mutex_lock(&s->mu);
	if (bytes > h->charged) {
		pthread_mutex_unlock(&s->mu);
		sk_end(ctx);
		return -EINVAL;
	}
	/* Taken off here first: a restore from now on leaves these bytes out. */
	h->charged -= bytes;
	local = bytes < h->unbacked ? bytes : h->unbacked;
	h->unbacked -= local;
	c.holder_id = h->dmn_id;
	c.bytes = bytes - local;
	pthread_mutex_unlock(&s->mu);
	if (c.bytes && c.holder_id)
		r = sk_hreq(s, SK_IOC(NXQ_IOC_UNCHARGE), &c, sizeof(c), sizeof(c), &err);
	sk_end(ctx);
	if (is_gone(r))		/* not sent again: the restore charged without it */
		return sk_reconnect(ctx, epoch);
	return r ? r : err;
}

static int sk_set_reclaimable(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes)
{
	struct sk *s = ctx->kpriv;
	struct nxq_reclaimable rc = { .size = sizeof(rc) };
	struct sk_holder *h;
	unsigned int epoch;
	int err = 0, r;

	r = sk_begin(ctx, &epoch);
	if (r)
		return r;
	h = holder_get(s, holder);
	if (!h) {
		sk_end(ctx);
		return -ENOENT;
	}
	pthread_mutex_lock(&s->mu);
	h->reclaimable = bytes;
	rc.holder_id = h->dmn_id;
	/* the daemon's charge is what is backed */
	rc.bytes = bytes;
	if (rc.bytes > h->charged - h->unbacked)
		rc.bytes = h->charged - h->unbacked;
	pthread_mutex_unlock(&s->mu);
	if (rc.holder_id)
		r = sk_hreq(s, SK_IOC(NXQ_IOC_SET_RECLAIMABLE), &rc, sizeof(rc), 0, &err);
	sk_end(ctx);
	if (is_gone(r))		/* the restore reports it again */
		return sk_reconnect(ctx, epoch);
	return r ? r : err;
}

static int sk_ticket_read(struct nxq_ctx *ctx, uint64_t holder, struct nxq_ticket *t)
{
	struct sk *s = ctx->kpriv;
	struct sk_holder *h;
	unsigned int epoch;
	int err = 0, r;

	for (int tries = 0;; tries++) {
		r = sk_begin(ctx, &epoch);
		if (r)
			return r;
		h = holder_get(s, holder);
		if (!h) {
			sk_end(ctx);
			return -ENOENT;
		}
		memset(t, 0, sizeof(*t));
		t->size = sizeof(*t);
		pthread_mutex_lock(&s->mu);
		if (h->syn_pending && h->unbacked) {
			/* The restore's ticket: give back what the daemon did not take. */
			h->syn_pending = 0;
			h->syn_gen = SK_SYN_GEN | ++s->syn_next;
			t->holder_id = holder;
			t->generation = h->syn_gen;
			t->bytes = h->unbacked;
			t->deadline_ns = nxq__now_ns();
			t->reason = NXQ_TICKET_REASON_BUDGET;
			t->level = NXQ_TICKET_LEVEL_RECALL;
			pthread_mutex_unlock(&s->mu);
			sk_end(ctx);
			return 0;
		}
		t->holder_id = h->dmn_id;
		pthread_mutex_unlock(&s->mu);
		if (!t->holder_id) {
			sk_end(ctx);
			return -EAGAIN;
		}
		r = sk_hreq(s, SK_IOC(NXQ_IOC_TICKET_READ), t, sizeof(*t), sizeof(*t), &err);
		sk_end(ctx);
		if (!r) {
			t->holder_id = holder;
			return err;
		}
		if (!is_gone(r) || tries)
			return r;
		r = sk_reconnect(ctx, epoch);	/* the new daemon has no ticket of ours */
		if (r)
			return r;
	}
}

static int sk_ticket_answer(struct nxq_ctx *ctx, uint64_t holder, uint64_t generation,
			    uint64_t released, uint64_t *charged)
{
	struct sk *s = ctx->kpriv;
	struct nxq_ticket_answer a = { .size = sizeof(a), .generation = generation };
	struct sk_holder *h;
	unsigned int epoch;
	uint64_t local;
	int err = 0, r;

	r = sk_begin(ctx, &epoch);
	if (r)
		return r;
	h = holder_get(s, holder);
	if (!h) {
		sk_end(ctx);
		return -ENOENT;
	}
	pthread_mutex_lock(&s->mu);
	if (released > h->charged) {
		pthread_mutex_unlock(&s->mu);
		sk_end(ctx);
		return -EINVAL;
	}
	if (generation & SK_SYN_GEN) {
		struct nxq_charge c = { .size = sizeof(c), .flags = NXQ_CHARGE_NOWAIT };

		if (generation != h->syn_gen) {
			pthread_mutex_unlock(&s->mu);
			sk_end(ctx);
			return -ESTALE;
		}
		h->syn_gen = 0;
		h->charged -= released;
		local = released < h->unbacked ? released : h->unbacked;
		h->unbacked -= local;
		c.holder_id = h->dmn_id;
		c.bytes = released - local;	/* backed bytes released too: uncharge them */
		pthread_mutex_unlock(&s->mu);
		if (c.bytes && c.holder_id) {
			c.flags = 0;
			r = sk_hreq(s, SK_IOC(NXQ_IOC_UNCHARGE), &c, sizeof(c), sizeof(c), &err);
		}
		/* What is still unbacked: ask the daemon again. */
		pthread_mutex_lock(&s->mu);
		c.bytes = h->unbacked;
		h->unbacked = 0;
		pthread_mutex_unlock(&s->mu);
		if (!r && c.bytes && c.holder_id) {
			c.flags = NXQ_CHARGE_NOWAIT;
			r = sk_hreq(s, SK_IOC(NXQ_IOC_CHARGE), &c, sizeof(c), sizeof(c), &err);
		}
		pthread_mutex_lock(&s->mu);
		if (c.bytes && (r || err || !c.holder_id))
			h->unbacked += c.bytes;
		if (charged)
			*charged = h->charged;
		pthread_mutex_unlock(&s->mu);
		sk_end(ctx);
		if (is_gone(r))
			sk_reconnect(ctx, epoch);	/* settled here all the same */
		return 0;
	}
	a.holder_id = h->dmn_id;
	/* Released bytes beyond the daemon's charge were unbacked ones. */
	local = released > h->charged - h->unbacked ? released - (h->charged - h->unbacked) : 0;
	a.released = released - local;
	pthread_mutex_unlock(&s->mu);
	r = a.holder_id ? sk_hreq(s, SK_IOC(NXQ_IOC_TICKET_ANSWER), &a, sizeof(a), sizeof(a),
				  &err) : 0;
	if (!r && err) {
		sk_end(ctx);
		return err;	/* -ESTALE and the like: nothing uncharged */
	}
	pthread_mutex_lock(&s->mu);
	h->charged -= released;
	h->unbacked -= local;
	if (charged)
		*charged = h->charged;
	pthread_mutex_unlock(&s->mu);
	sk_end(ctx);
	/*
	 * Gone in flight: answered all the same (the restore charges without
	 * it); an error here would make the arena uncharge it a second time.
	 */
	if (is_gone(r))
		sk_reconnect(ctx, epoch);
	return 0;
}

/*
 * STATUS of a holder, translated to the daemon's id (a holder the daemon
 * does not have -- not taken back after a restart -- is -ENOLINK); sent
 * again once after a reconnect.  An older daemon's shorter reply leaves
 * the fields it does not know 0.
 */
static int sk_status(struct nxq_ctx *ctx, uint64_t holder, struct nxq_status *st)
{
	struct sk *s = ctx->kpriv;
	struct sk_holder *h;
	unsigned int epoch;
	int err = 0, r;

	for (int tries = 0;; tries++) {
		r = sk_begin(ctx, &epoch);
		if (r)
			return r;
		h = holder_get(s, holder);
		if (!h) {
			sk_end(ctx);
			return -ENOENT;
		}
		memset(st, 0, sizeof(*st));
		st->size = sizeof(*st);
		pthread_mutex_lock(&s->mu);
		st->holder_id = h->dmn_id;
		pthread_mutex_unlock(&s->mu);
		if (!st->holder_id) {
			sk_end(ctx);
			return -ENOLINK;
		}
		r = sk_hreq(s, SK_IOC(NXQ_IOC_STATUS), st, sizeof(*st), sizeof(*st), &err);
		sk_end(ctx);
		if (!r) {
			st->size = sizeof(*st);
			st->holder_id = holder;
			return err;
		}
		if (!is_gone(r) || tries)
			return r;
		r = sk_reconnect(ctx, epoch);
		if (r)
			return r;
	}
}

static void sk_free(struct sk *s, int child)
{
	struct sk_conn *c, *n;

	/* in a forked child the watcher is the parent's: nothing runs */
	if (!child && s->watching) {
		uint64_t one = 1;

		__atomic_store_n(&s->stopping, 1, __ATOMIC_RELAXED);
		if (write(s->stopfd, &one, sizeof(one)) < 0)
			abort();	/* an eventfd's write of 1 cannot fail */
		pthread_join(s->watcher, NULL);
	}
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->stopfd >= 0)
		close(s->stopfd);
	for (c = s->all; c; c = n) {
		n = c->all;
		close(c->fd);
		free(c);
	}
	for (int i = 0; i < s->nh; i++) {
		if (!s->h[i])
			continue;
		if (s->h[i]->evfd >= 0)
			close(s->h[i]->evfd);
		if (s->h[i]->devfd >= 0)
			close(s->h[i]->devfd);
		free(s->h[i]);
	}
	free(s->h);
	if (!child) {
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		pthread_rwlock_destroy(&s->rw);
	}
	free(s);
}

static void sk_close(struct nxq_ctx *ctx)
{
	if (ctx->kpriv)
		sk_free(ctx->kpriv, 0);
	ctx->kpriv = NULL;
}

/* The child's copy of the parent's context: close our descriptors, send nothing. */
static void sk_forget(struct nxq_ctx *ctx)
{
	if (ctx->kpriv)
		sk_free(ctx->kpriv, 1);
	ctx->kpriv = NULL;
}

const struct nxq_kops nxq__sock_kops = {
	.name = "nxquotad",
	.version = sk_version,
	.holder_register = sk_register,
	.holder_unregister = sk_unregister,
	.charge = sk_charge,
	.uncharge = sk_uncharge,
	.set_reclaimable = sk_set_reclaimable,
	.ticket_read = sk_ticket_read,
	.ticket_answer = sk_ticket_answer,
	.close = sk_close,
	.forget = sk_forget,
	.status = sk_status,
	.probe = sk_probe,
};

/* The watcher's epoll set, its stop eventfd and its thread: 0 or a negative errno. */
static int sk_watch_start(struct sk *s)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
	int r;

	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0)
		return -errno;
	s->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->stopfd < 0)
		return -errno;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->stopfd, &ev))
		return -errno;
	r = -pthread_create(&s->watcher, NULL, sk_watch, s);
	if (!r)
		s->watching = 1;
	return r;
}

/*
 * Connect to the daemon at path: *kprivp is the state for nxq__sock_kops.
 * Returns 0, or the connect's negative errno (nothing kept).
 */
int nxq__sock_open(const char *path, void **kprivp)
{
	pthread_rwlockattr_t ra;
	struct sk *s;
	int fd, r;

	if (strlen(path) >= sizeof(s->addr.sun_path))
		return -ENAMETOOLONG;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->epfd = -1;
	s->stopfd = -1;
	s->addr.sun_family = AF_UNIX;
	memcpy(s->addr.sun_path, path, strlen(path) + 1);
	s->reconnect_ms = 10000;
	r = nxq__env_ms("NXQUOTA_RECONNECT_MS", &s->reconnect_ms);
	if (r < 0) {
		free(s);
		return r;
	}
	fd = sk_connect(s);
	if (fd < 0) {
		free(s);
		return fd;
	}
	pthread_rwlockattr_init(&ra);
	/* a reconnect must not wait behind a stream of new requests */
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&s->rw, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	r = sk_watch_start(s);
	if (r) {
		close(fd);
		sk_free(s, 0);
		return r;
	}
	{
		struct nxq_version v = { .size = sizeof(v) };
		int err;

		r = sk_hello(s, fd, &v, &err);	/* which protocol; its answer is asked again */
		if (r) {
			close(fd);
			sk_free(s, 0);
			return r;
		}
	}
	s->pool = conn_new(s, fd);
	if (!s->pool) {
		close(fd);
		sk_free(s, 0);
		return -ENOMEM;
	}
	s->nconns = 1;
	s->cap = SK_CONNS_MAX;
	*kprivp = s;
	return 0;
}

/* For the tests: reconnects done, restores refused, connections made and refused. */
void nxq__sock_counters(const struct nxq_ctx *ctx, unsigned long out[4])
{
	const struct sk *s = ctx->kpriv;

	out[0] = s->reconnects;
	out[1] = s->restores_refused;
	out[2] = s->conns_made;
	out[3] = s->conns_refused;
}
