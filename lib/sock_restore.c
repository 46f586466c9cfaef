// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * nxquotad's client, its memory of what it holds (see sock.h): the
 * holders' table (lib ids, what registers each again), reconnect and
 * restore after the daemon went away, the watcher thread that does so at
 * once for an idle process, and re-adoption of a holder a restore left
 * out.
 *
 * Layer: calls sock_conn.c and err.c; sock.c calls it.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "sock.h"

/* ---- holders ---- */

struct sk_holder *nxq__sk_holder_get(struct sk *s, uint64_t id)
{
	struct sk_holder *h = NULL;

	pthread_mutex_lock(&s->mu);
	if (id && id <= (uint64_t)s->nh && s->h[id - 1] && s->h[id - 1]->live)
		h = s->h[id - 1];
	pthread_mutex_unlock(&s->mu);
	return h;
}

/*
 * What registers h (again) on s's daemon: *reg, the descriptors to pass
 * in fds (their count returned) and the request's flags.  From protocol
 * 2, with NXQD_REQ_NOTIFY and no eventfd: its tickets come as notices,
 * and our eventfd stays ours.  Before, the eventfd, for the daemon to
 * write.  The device node either way.
 */
int nxq__sk_holder_fds(const struct sk *s, const struct sk_holder *h,
		       struct nxq_holder_reg *reg, int fds[2], uint16_t *flags)
{
	int n = 0;

	*reg = h->reg;
	reg->size = sizeof(*reg);
	reg->holder_id = 0;
	reg->eventfd = -1;
	reg->devfd = 0;
	*flags = 0;
	if (h->evfd >= 0 && s->proto >= 2) {
		*flags = NXQD_REQ_NOTIFY;
	} else if (h->evfd >= 0) {
		reg->eventfd = h->evfd;
		fds[n++] = h->evfd;
	}
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

/* Set h's daemon id (s->mu: a notice is told by it, on the watcher too). */
static void set_dmn_id(struct sk *s, struct sk_holder *h, uint64_t id)
{
	pthread_mutex_lock(&s->mu);
	h->dmn_id = id;
	pthread_mutex_unlock(&s->mu);
}

/*
 * Register h again and restore its charge on fd, a connection nobody
 * else reads yet (s->rw held for writing).
 */
static int restore_holder(struct sk *s, int fd, struct sk_holder *h)
{
	struct nxq_holder_reg reg;
	struct nxq_charge c = { .size = sizeof(c), .flags = NXQ_CHARGE_NOWAIT };
	uint16_t nf;
	int fds[2], n = nxq__sk_holder_fds(s, h, &reg, fds, &nf), err, r;
	/* version 1: the registration and the charge say they restore */
	uint16_t rf = s->proto ? NXQD_REQ_RESTORE : 0;

	if (rf)
		reg.holder_id = h->dmn_id;	/* its id on the daemon that went */
	set_dmn_id(s, h, 0);
	h->syn_gen = 0;
	r = nxq__sk_xfer(s, fd, s->proto, rf | nf, SK_IOC(NXQ_IOC_HOLDER_REGISTER), &reg,
			 sizeof(reg), sizeof(reg), fds, n, &err, NULL);
	if (r)
		return r;
	if (!err && !reg.holder_id)
		err = -EPROTO;
	if (err)
		goto refused;
	set_dmn_id(s, h, reg.holder_id);
	h->unbacked = 0;
	h->syn_pending = 0;
	if (h->charged) {
		c.holder_id = h->dmn_id;
		c.bytes = h->charged;
		/*
		 * At version 1 the answer may wait for the other processes'
		 * restores (the daemon's grace window): recv() waits with it.
		 */
		r = nxq__sk_xfer(s, fd, s->proto, rf, SK_IOC(NXQ_IOC_CHARGE), &c, sizeof(c),
				 sizeof(c), NULL, 0, &err, NULL);
		if (!r && err == -EAGAIN) {
			/*
			 * The daemon's grace after a restart holds back processes
			 * it did not list (we may have registered just before it
			 * died): wait for the grace to end, as a new charge would.
			 */
			c.flags = NXQ_CHARGE_WAIT;
			c.timeout_ns = s->reconnect_ms * 1000000ULL;
			r = nxq__sk_xfer(s, fd, s->proto, rf, SK_IOC(NXQ_IOC_CHARGE), &c,
					 sizeof(c), sizeof(c), NULL, 0, &err, NULL);
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

	/*
	 * No request is in flight: every connection is in the pool (s->mu:
	 * the watcher reads pooled ones).
	 */
	pthread_mutex_lock(&s->mu);
	while (s->pool) {
		struct sk_conn *c = nxq__sk_conn_take(s);

		nxq__sk_conn_unlink(s, c);
		close(c->fd);
		free(c);
	}
	s->nconns = 0;
	s->nwait = 0;
	s->cap = SK_CONNS_MAX;
	pthread_mutex_unlock(&s->mu);
	/* After a failed reconnect, one more try per call rather than a full wait each. */
	deadline = now_ms() + (s->broken ? 0 : s->reconnect_ms);
	for (;;) {
		struct nxq_version v = { .size = sizeof(v) };
		int err;

		fd = nxq__sk_connect(s);
		if (fd >= 0) {
			r = nxq__sk_hello(s, fd, &v, &err);
			if (!r && !err && v.abi_version != NXQ_ABI_VERSION)
				r = -EPROTO;
			for (int i = 0; !r && i < s->nh; i++)
				if (s->h[i] && s->h[i]->live)
					r = restore_holder(s, fd, s->h[i]);
			if (!r && s->proto) {
				/* version 1: all restored; the window may close */
				r = nxq__sk_xfer(s, fd, s->proto, NXQD_REQ_RESTORED,
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
	{
		struct sk_conn *c = nxq__sk_conn_new(s, fd);

		if (c) {
			/* (what came on it since its last reply: epoll says so) */
			nxq__sk_conn_give(s, c);
			s->nconns = 1;
		} else {
			close(fd);	/* out of memory: the next request connects */
		}
	}
	pthread_mutex_unlock(&s->mu);
	s->broken = 0;
	s->epoch++;
	s->reconnects++;
	r = 0;
out:
	return r;
}

int nxq__sk_reconnect(struct nxq_ctx *ctx, unsigned int epoch)
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
 * A message came on the pooled connection which (EPOLLIN): read it now,
 * s->mu held so that no request takes it meanwhile.  If a request took it
 * since (the event was collected before), that request reads it.  which
 * is only compared: the connection may be gone.
 */
static void sk_watch_read(struct sk *s, const void *which)
{
	pthread_mutex_lock(&s->mu);
	for (struct sk_conn *c = s->all; c; c = c->all) {
		if (c != which)
			continue;
		if (c->pooled)
			nxq__sk_drain(s, c);
		break;
	}
	pthread_mutex_unlock(&s->mu);
}

/*
 * The watcher: the notices on pooled connections (sock.h), and a
 * connection that hung up -- if the daemon has gone, reconnect and
 * restore now, not at this process's next call.  Edge-triggered: a
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
			if (!ev[i].data.ptr) {
				stop = 1;
				continue;
			}
			if (ev[i].events & EPOLLIN)
				sk_watch_read(s, ev[i].data.ptr);
			if (ev[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
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
int nxq__sk_readopt(struct nxq_ctx *ctx, uint64_t holder)
{
	struct sk *s = ctx->kpriv;
	struct nxq_holder_reg reg;
	struct sk_holder *h;
	struct sk_conn *c;
	uint16_t nf;
	int fds[2], n, err = 0, r = -ENOLINK;

	pthread_rwlock_wrlock(&s->rw);
	h = holder <= (uint64_t)s->nh ? s->h[holder - 1] : NULL;
	if (!h || !h->live || h->dmn_id || s->broken) {
		r = h && h->dmn_id ? 0 : -ENOLINK;
		goto out;
	}
	/* taken out of the pool: the watcher does not read it meanwhile */
	pthread_mutex_lock(&s->mu);
	c = nxq__sk_conn_take(s);
	pthread_mutex_unlock(&s->mu);
	if (!c)
		goto out;
	n = nxq__sk_holder_fds(s, h, &reg, fds, &nf);
	if (nxq__sk_xfer(s, c->fd, s->proto, nf, SK_IOC(NXQ_IOC_HOLDER_REGISTER), &reg,
			 sizeof(reg), sizeof(reg), fds, n, &err, NULL) || err || !reg.holder_id)
		goto give;	/* a lost connection: the next call reconnects */
	set_dmn_id(s, h, reg.holder_id);
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
give:
	pthread_mutex_lock(&s->mu);
	nxq__sk_conn_give(s, c);
	pthread_mutex_unlock(&s->mu);
out:
	pthread_rwlock_unlock(&s->rw);
	return r;
}

/* The watcher's epoll set, its stop eventfd and its thread: 0 or a negative errno. */
int nxq__sk_watch_start(struct sk *s)
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
