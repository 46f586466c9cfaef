// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * nxquotad's client, its transport (see sock.h): one request and its
 * reply on one connection (nxq__sk_xfer(), the framing of
 * <linux/nxquotad.h>), the notices met on the way (told to their
 * holder's eventfd), the protocol hello, connecting, and the pool of
 * connections a request takes one from (nxq__sk_req(): s->rw held for
 * reading by the caller), with the notices read on a pooled connection
 * (nxq__sk_drain()).  Owns the struct sk_conn objects: made here, closed
 * here when broken or refused (and by a reconnect, sock_restore.c).
 *
 * Layer: the bottom of the sock files; calls only err.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "sock.h"

/* ---- notices ---- */

/* Is the message of n bytes at buf a ticket notice (protocol 2)? */
static int is_notice(const void *buf, ssize_t n)
{
	struct nxqd_rep r;

	if (n != (ssize_t)sizeof(struct nxqd_notice))
		return 0;
	memcpy(&r, buf, sizeof(r));
	return (r.flags & NXQD_REP_TICKET) && !r.err;
}

/*
 * A notice: the holder the daemon names (its id, live) is told on its
 * eventfd -- ours, non-blocking: a write fails only on a full counter,
 * a wake-up already pending.  One the library no longer has (unregistered
 * meanwhile) is dropped.  s->mu held.
 */
static void tell_locked(struct sk *s, const void *buf)
{
	struct nxqd_notice n;
	uint64_t one = 1;

	memcpy(&n, buf, sizeof(n));
	for (int i = 0; i < s->nh; i++) {
		struct sk_holder *h = s->h[i];

		if (!h || !h->live || h->dmn_id != n.holder_id)
			continue;
		if (h->evfd >= 0) {
			ssize_t w = write(h->evfd, &one, sizeof(one));

			(void)w;	/* fails only when saturated: a wake-up is pending */
		}
		break;
	}
}

/*
 * Read what waits on c, a pooled connection (s->mu held, by the watcher):
 * each notice is told; anything else -- no reply is due on it -- is
 * dropped.  Never waits; stops at end of file (the hang-up is the
 * watcher's to see).
 */
void nxq__sk_drain(struct sk *s, struct sk_conn *c)
{
	char buf[sizeof(struct nxqd_rep) + NXQD_ARG_MAX];
	ssize_t n;

	for (;;) {
		n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (is_notice(buf, n)) {
			tell_locked(s, buf);
			s->notices_idle++;
		}
	}
}

/* ---- one request on one connection ---- */

/*
 * Sends cmd with len bytes of arg (and fds), reads the reply into arg
 * (at most outlen bytes); a notice that comes before the reply is told
 * (s's holders) and the reply still awaited.  Returns 0 with *errp the
 * daemon's answer, or a negative errno of the transport (-ECONNRESET for
 * end of file).  The caller reads fd alone (sock.h): it took it out of
 * the pool, or no one else knows it yet.
 */
int nxq__sk_xfer(struct sk *s, int fd, uint16_t ver, uint16_t flags, uint32_t cmd, void *arg,
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
	for (;;) {
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
				for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				     i++) {
					int x;

					memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
					close(x);
				}
		if (n == 0)
			return -ECONNRESET;	/* the daemon closed the connection */
		if (!s || (m.msg_flags & MSG_TRUNC) || !is_notice(&in, n))
			break;
		/* a ticket notice, not the reply: told, and the reply awaited */
		pthread_mutex_lock(&s->mu);
		tell_locked(s, &in);
		s->notices_req++;
		pthread_mutex_unlock(&s->mu);
	}
	if ((size_t)n < sizeof(in.rep) || (m.msg_flags & MSG_TRUNC) ||
	    in.rep.err > 0 || in.rep.err < -4095)
		return -EPROTO;
	n -= sizeof(in.rep);
	/* a failure comes with its struct only where the ABI says (a refusal) */
	if (outlen)
		memcpy(arg, in.arg, (size_t)n < outlen ? (size_t)n : outlen);
	*errp = in.rep.err;
	if (repver)
		*repver = in.rep.version;
	return 0;
}

/*
 * Which protocol the daemon on fd speaks: NXQ_IOC_VERSION at
 * NXQD_PROTO_VERSION.  A daemon of version 1 refuses a version above its
 * own (-EPROTONOSUPPORT, its version in the reply): ask again at that
 * one.  A daemon of the first protocol refuses a non-zero version
 * (-EINVAL): ask again at 0.  0 with *v filled and s->proto set, or a
 * transport error.
 */
int nxq__sk_hello(struct sk *s, int fd, struct nxq_version *v, int *errp)
{
	uint16_t repver = 0;
	int r;

	r = nxq__sk_xfer(s, fd, NXQD_PROTO_VERSION, 0, SK_IOC(NXQ_IOC_VERSION), v, sizeof(*v),
			 sizeof(*v), NULL, 0, errp, &repver);
	if (!r && *errp == -EPROTONOSUPPORT && repver && repver < NXQD_PROTO_VERSION)
		r = nxq__sk_xfer(s, fd, repver, 0, SK_IOC(NXQ_IOC_VERSION), v, sizeof(*v),
				 sizeof(*v), NULL, 0, errp, &repver);
	if (!r && *errp == -EINVAL) {
		s->proto = 0;
		return nxq__sk_xfer(s, fd, 0, 0, SK_IOC(NXQ_IOC_VERSION), v, sizeof(*v),
				    sizeof(*v), NULL, 0, errp, NULL);
	}
	if (!r)
		s->proto = repver < NXQD_PROTO_VERSION ? repver : NXQD_PROTO_VERSION;
	return r;
}

int nxq__sk_connect(const struct sk *s)
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

/*
 * A connection on fd, out of the pool (s->mu held): its maker reads it,
 * or gives it to the pool.
 */
struct sk_conn *nxq__sk_conn_new(struct sk *s, int fd)
{
	struct sk_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = fd;
	c->fresh = 1;
	if (s->epfd >= 0) {
		struct epoll_event ev = { .events = EPOLLRDHUP | EPOLLET, .data.ptr = c };

		/* failing that, this connection is noticed (and read) at its next use */
		epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
	}
	c->all = s->all;
	s->all = c;
	s->conns_made++;
	return c;
}

void nxq__sk_conn_unlink(struct sk *s, struct sk_conn *c)
{
	struct sk_conn **p;

	for (p = &s->all; *p; p = &(*p)->all)
		if (*p == c) {
			*p = c->all;
			break;
		}
}

/*
 * Whether the watcher is told when c is readable (s->mu held): only
 * while it is pooled, and only from protocol 2 (notices).  Turned on, the
 * set reports what is already there.
 */
static void conn_epollin(struct sk *s, struct sk_conn *c, int on)
{
	struct epoll_event ev = { .events = EPOLLRDHUP | EPOLLET | (on ? EPOLLIN : 0),
				  .data.ptr = c };

	if (s->epfd < 0 || c->epollin == on)
		return;
	/* failing that, a notice waits for the connection's next request */
	if (!epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev))
		c->epollin = on;
}

/* The pool's first connection, now the caller's to read, or NULL (s->mu held). */
struct sk_conn *nxq__sk_conn_take(struct sk *s)
{
	struct sk_conn *c = s->pool;

	if (c) {
		s->pool = c->next;
		c->pooled = 0;
		conn_epollin(s, c, 0);
	}
	return c;
}

/*
 * Back to the pool (s->mu held), after the last read of its taker: the
 * watcher reads it from now on, what came since the reply first.
 */
void nxq__sk_conn_give(struct sk *s, struct sk_conn *c)
{
	c->next = s->pool;
	s->pool = c;
	c->pooled = 1;
	conn_epollin(s, c, s->proto >= 2);
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
		c = nxq__sk_conn_take(s);
		if (c)
			break;
		if (s->nconns < s->cap) {
			s->nconns++;
			pthread_mutex_unlock(&s->mu);
			fd = nxq__sk_connect(s);
			pthread_mutex_lock(&s->mu);
			c = fd >= 0 ? nxq__sk_conn_new(s, fd) : NULL;
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
		nxq__sk_conn_unlink(s, c);
		close(c->fd);
		free(c);
		s->nconns--;
		if (refused && s->nconns)
			s->cap = s->nconns;
	} else {
		nxq__sk_conn_give(s, c);
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
int nxq__sk_req(struct sk *s, uint16_t flags, uint32_t cmd, void *arg, uint32_t len,
		uint32_t outlen, const int *fds, int nfds, int *errp)
{
	int waiting = _IOC_NR(cmd) == _IOC_NR(NXQ_IOC_CHARGE) &&
		      (((struct nxq_charge *)arg)->flags & NXQ_CHARGE_WAIT);

	for (;;) {
		struct sk_conn *c;
		int r = conn_get(s, &c, waiting), gone, others;

		if (r)
			return r;
		r = nxq__sk_xfer(s, c->fd, s->proto, flags, cmd, arg, len, outlen, fds, nfds,
				 errp, NULL);
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
int nxq__sk_hreq(struct sk *s, uint32_t cmd, void *arg, uint32_t len, uint32_t outlen,
		 int *errp)
{
	int r = nxq__sk_req(s, 0, cmd, arg, len, outlen, NULL, 0, errp);

	if (!r && *errp == -ENOENT)
		r = -ENOTCONN;
	return r;
}
