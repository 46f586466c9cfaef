/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * A tiny nxquotad for the cases of test_sock.c, those that need a daemon
 * misbehaving on purpose, which the real one (test_sock_real.c) will
 * not: features withheld (fs.features), version 0's STATUS
 * (fs.status_ver0), a holder forgotten alone (fs_forget()), -EAGAIN to
 * restores in a grace (fs.next_grace), hostile replies (fs.hostile).
 *
 * A thread listens on a SOCK_SEQPACKET socket and speaks
 * <linux/nxquotad.h>, one thread per connection.  It keeps one device
 * with a capacity (fs.cap) and holders (each bound to its connection and
 * to the sender's SCM_CREDENTIALS pid: closing the connection ends them
 * and uncharges them, as the daemon does), charges (NXQ_CHARGE_WAIT waits
 * until an uncharge makes room), and checks the SCM_RIGHTS count and
 * order of a registration (the eventfd first, then the device node).  No
 * tickets.  fs_stop() is a daemon dying: every connection is shut down,
 * the state is lost; fs_start() a fresh one on the same path.
 */
#ifndef NXQ_TEST_FAKE_SRV_H
#define NXQ_TEST_FAKE_SRV_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <linux/nxquota.h>
#include <linux/nxquotad.h>

#define FS_MAXC	32
#define FS_MAXH	32

struct fs_holder {
	int live;
	uint64_t id;
	int cid;			/* the registering connection */
	pid_t pid;			/* the registering process */
	int evfd;
	uint64_t charged, reclaimable;
};

struct fake_srv {
	char path[108];
	int lfd;
	pthread_t acc;
	int up;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int cfd[FS_MAXC];
	pthread_t cth[FS_MAXC];
	int ncth;
	int stopping;
	int restarts;
	uint64_t features;		/* 0: all */
	struct fs_holder h[FS_MAXH];
	int nh;
	uint64_t next_id;
	uint64_t cap, used;
	int hostile;			/* see fs_hostile() */
	int null_fd;			/* what hostile 1 sends, open from fs_start() */
	int grace_eagain;		/* this many NOWAIT charges get -EAGAIN (a grace) */
	int next_grace;			/* grace_eagain of the next fs_start() */
	/* what was seen */
	int registers, reg_nfds, wait_charges, statuses;
	int status_ver0;		/* answer STATUS as an older daemon: version 0's bytes */
	int proto;			/* the protocol spoken: 0 (any version taken, 0
					 * answered) or 1, 2 (a higher one refused) */
	uint16_t reg_flags;		/* the last registration's request flags */
	uint32_t last_err;		/* the last refused charge (STATUS version 1) */
	uint64_t last_bytes;
};

static struct fake_srv fs = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static int fs_is_eventfd(int fd)
{
	char p[64], l[64];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, l, sizeof(l) - 1);
	if (n < 0)
		return 0;
	l[n] = 0;
	return strstr(l, "eventfd") != NULL;
}

static pid_t fs_sender;	/* the message's SCM_CREDENTIALS pid, under fs.mu */

/* Holders belong to the registering process: -ENOENT for any other. */
static struct fs_holder *fs_find(uint64_t id)
{
	for (int i = 0; i < fs.nh; i++)
		if (fs.h[i].live && fs.h[i].id == id && fs.h[i].pid == fs_sender)
			return &fs.h[i];
	return NULL;
}

static void fs_end_holder(struct fs_holder *h)
{
	fs.used -= h->charged;
	h->charged = 0;
	h->live = 0;
	if (h->evfd >= 0)
		close(h->evfd);
	h->evfd = -1;
	pthread_cond_broadcast(&fs.cv);
}

static int fs_charge(struct nxq_charge *c)
{
	struct fs_holder *h = fs_find(c->holder_id);
	struct timespec dl;

	if (!h)
		return -ENOENT;
	if (!(c->flags & NXQ_CHARGE_WAIT) && fs.grace_eagain > 0) {
		fs.grace_eagain--;
		return -EAGAIN;
	}
	if (!(c->flags & NXQ_CHARGE_WAIT)) {
		if (fs.used + c->bytes > fs.cap) {
			fs.last_err = EDQUOT;
			fs.last_bytes = c->bytes;
			return -EDQUOT;
		}
		goto grant;
	}
	fs.wait_charges++;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += c->timeout_ns / 1000000000ULL;
	dl.tv_nsec += c->timeout_ns % 1000000000ULL;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	while (fs.used + c->bytes > fs.cap) {
		int r = pthread_cond_timedwait(&fs.cv, &fs.mu, &dl);

		if (fs.stopping || !h->live)
			return -EINTR;
		if (r == ETIMEDOUT && fs.used + c->bytes > fs.cap)
			return -ETIMEDOUT;
	}
grant:
	h->charged += c->bytes;
	fs.used += c->bytes;
	c->charged = h->charged;
	return 0;
}

static int fs_handle(int cid, void *arg, uint32_t cmd, size_t alen, int *fds, int nfds,
		     size_t *outlen)
{
	struct fs_holder *h;

	switch (_IOC_NR(cmd)) {
	case _IOC_NR(NXQ_IOC_VERSION): {
		struct nxq_version *v = arg;

		v->abi_version = NXQ_ABI_VERSION;
		v->features = fs.features ? fs.features :
			      NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_STATUS |
			      NXQ_FEAT_CHARGE_WAIT | NXQ_FEAT_TICKETS | NXQ_FEAT_STATUS_V1;
		*outlen = sizeof(*v);
		return 0;
	}
	case _IOC_NR(NXQ_IOC_HOLDER_REGISTER): {
		struct nxq_holder_reg *reg = arg;
		int want = (reg->eventfd >= 0) + !!(reg->flags & NXQ_HOLDER_DEVFD);
		struct stat st;

		fs.registers++;
		fs.reg_nfds = nfds;
		if (alen < NXQ_HOLDER_REG_SIZE_VER0 || nfds != want)
			return -EBADF;
		if (reg->eventfd >= 0 && !fs_is_eventfd(fds[0]))
			return -EBADF;		/* the eventfd comes first */
		if ((reg->flags & NXQ_HOLDER_DEVFD) &&
		    (fstat(fds[nfds - 1], &st) || !S_ISCHR(st.st_mode)))
			return -EACCES;
		if (fs.nh == FS_MAXH)
			return -ENODEV;
		h = &fs.h[fs.nh++];
		memset(h, 0, sizeof(*h));
		h->live = 1;
		h->id = fs.next_id++;
		h->cid = cid;
		h->pid = fs_sender;
		h->evfd = reg->eventfd >= 0 ? fds[0] : -1;
		if (h->evfd >= 0)
			fds[0] = -1;	/* kept */
		reg->holder_id = h->id;
		*outlen = sizeof(*reg);
		return 0;
	}
	case _IOC_NR(NXQ_IOC_HOLDER_UNREGISTER): {
		struct nxq_holder_id *hid = arg;

		h = fs_find(hid->holder_id);
		if (!h)
			return -ENOENT;
		fs_end_holder(h);
		return 0;
	}
	case _IOC_NR(NXQ_IOC_CHARGE): {
		struct nxq_charge *c = arg;
		int r = fs_charge(c);

		*outlen = sizeof(*c);
		return r;
	}
	case _IOC_NR(NXQ_IOC_UNCHARGE): {
		struct nxq_charge *c = arg;

		h = fs_find(c->holder_id);
		if (!h)
			return -ENOENT;
		if (c->bytes > h->charged)
			return -EINVAL;
		h->charged -= c->bytes;
		fs.used -= c->bytes;
		c->charged = h->charged;
		*outlen = sizeof(*c);
		pthread_cond_broadcast(&fs.cv);
		return 0;
	}
	case _IOC_NR(NXQ_IOC_SET_RECLAIMABLE): {
		struct nxq_reclaimable *rc = arg;

		h = fs_find(rc->holder_id);
		if (!h)
			return -ENOENT;
		if (rc->bytes > h->charged)
			return -EINVAL;
		h->reclaimable = rc->bytes;
		return 0;
	}
	case _IOC_NR(NXQ_IOC_STATUS): {
		struct nxq_status *st = arg;

		h = fs_find(st->holder_id);
		if (!h)
			return -ENOENT;
		if (alen < NXQ_STATUS_SIZE_VER0 || alen > sizeof(*st))
			return -EINVAL;
		fs.statuses++;
		st->holder_charge = h->charged;
		st->node_current = fs.used;
		st->node_max = fs.cap;
		st->headroom = fs.cap - fs.used;
		st->device_capacity = fs.cap;
		st->device_used = fs.used;
		/* version 1 (cut off below for an older daemon) */
		st->node_effective_max = fs.cap;
		st->room = fs.cap - fs.used;
		st->limit = fs.cap;
		st->last_error = fs.last_err;
		st->last_level = 0;
		st->last_bytes = fs.last_bytes;
		st->last_limit = fs.cap;
		st->last_usage = fs.used;
		*outlen = fs.status_ver0 ? NXQ_STATUS_SIZE_VER0 : alen;
		return 0;
	}
	}
	return -ENOTTY;
}

/* A counter of fs, read under its lock. */
static int fs_get(const int *field)
{
	int v;

	pthread_mutex_lock(&fs.mu);
	v = *field;
	pthread_mutex_unlock(&fs.mu);
	return v;
}

static void fs_stop(void);
static void fs_start(uint64_t cap);

/*
 * A hostile daemon (fs.hostile): 1 attaches a descriptor to the reply
 * (one open since fs_start(): a descriptor opened and closed here would
 * change the process's count while the library counts, since both run in
 * one process), 2 answers a positive "errno", 3 a reply shorter than its header,
 * 4 a reply longer than any struct.  Returns 1 if it replied.
 */
static int fs_hostile(int fd, void *rep, size_t len)
{
	union {
		char c[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	static char big[NXQD_ARG_MAX + 64];
	struct iovec iov = { rep, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	int mode = fs_get(&fs.hostile), x;

	switch (mode) {
	case 1:
		x = fs.null_fd;
		memset(&cm, 0, sizeof(cm));
		m.msg_control = cm.c;
		m.msg_controllen = sizeof(cm.c);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &x, sizeof(int));
		sendmsg(fd, &m, MSG_NOSIGNAL);
		return 1;
	case 2:
		((struct nxqd_rep *)rep)->err = 5;
		send(fd, rep, len, MSG_NOSIGNAL);
		return 1;
	case 3:
		send(fd, rep, 3, MSG_NOSIGNAL);
		return 1;
	case 4:
		memset(big, 0, sizeof(big));
		memcpy(big, rep, len);
		send(fd, big, sizeof(big), MSG_NOSIGNAL);
		return 1;
	}
	return 0;
}

static void *fs_conn(void *arg)
{
	int slot = (int)(intptr_t)arg, fd = fs.cfd[slot];

	for (;;) {
		struct {
			struct nxqd_req req;
			char arg[NXQD_ARG_MAX];
		} in;
		struct {
			struct nxqd_rep rep;
			char arg[NXQD_ARG_MAX];
		} out;
		union {
			char c[CMSG_SPACE(sizeof(int) * 8) + CMSG_SPACE(sizeof(struct ucred))];
			struct cmsghdr align;
		} cm;
		struct iovec iov = { &in, sizeof(in) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.c,
				    .msg_controllen = sizeof(cm.c) };
		struct cmsghdr *c;
		int fds[8], nfds = 0, r;
		size_t outlen = 0;
		ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);

		if (n <= 0)
			break;
		pthread_mutex_lock(&fs.mu);
		fs_sender = 0;
		for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
				int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

				if (k > 8 - nfds)
					k = 8 - nfds;	/* the control buffer holds 8 */

				memcpy(fds + nfds, CMSG_DATA(c), k * sizeof(int));
				nfds += k;
			} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
				struct ucred cr;

				memcpy(&cr, CMSG_DATA(c), sizeof(cr));
				fs_sender = cr.pid;
			}
		}
		if ((size_t)n < sizeof(in.req)) {
			r = -EINVAL;
		} else if (fs.proto && in.req.version > fs.proto) {
			r = -EPROTONOSUPPORT;
		} else if (nfds && _IOC_NR(in.req.cmd) != _IOC_NR(NXQ_IOC_HOLDER_REGISTER)) {
			r = -EINVAL;
		} else {
			if (_IOC_NR(in.req.cmd) == _IOC_NR(NXQ_IOC_HOLDER_REGISTER))
				fs.reg_flags = in.req.flags;
			r = fs_handle(slot, in.arg, in.req.cmd, n - sizeof(in.req), fds, nfds,
				      &outlen);
		}
		for (int i = 0; i < nfds; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		pthread_mutex_unlock(&fs.mu);
		out.rep.err = r;
		out.rep.reserved = 0;
		out.rep.version = fs.proto;
		memcpy(out.arg, in.arg, outlen);
		if (fs_hostile(fd, &out, sizeof(out.rep) + (r ? 0 : outlen)))
			continue;
		if (send(fd, &out, sizeof(out.rep) + (r ? 0 : outlen), MSG_NOSIGNAL) < 0)
			break;
	}
	pthread_mutex_lock(&fs.mu);
	for (int i = 0; i < fs.nh; i++)
		if (fs.h[i].live && fs.h[i].cid == slot)
			fs_end_holder(&fs.h[i]);
	pthread_mutex_unlock(&fs.mu);
	return NULL;
}

static void *fs_accept(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept4(fs.lfd, NULL, NULL, SOCK_CLOEXEC), one = 1;

		pthread_mutex_lock(&fs.mu);
		if (fs.stopping || fd < 0 || fs.ncth == FS_MAXC) {
			pthread_mutex_unlock(&fs.mu);
			if (fd >= 0)
				close(fd);
			if (fs.stopping || fd < 0)
				break;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
		fs.cfd[fs.ncth] = fd;
		pthread_create(&fs.cth[fs.ncth], NULL, fs_conn, (void *)(intptr_t)fs.ncth);
		fs.ncth++;
		pthread_mutex_unlock(&fs.mu);
	}
	return NULL;
}

/* A fresh daemon on fs.path (state empty, ids from a new range). */
static void fs_start(uint64_t cap)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int one = 1;

	pthread_mutex_lock(&fs.mu);
	fs.stopping = 0;
	fs.ncth = 0;
	fs.nh = 0;
	fs.used = 0;
	fs.cap = cap;
	fs.hostile = 0;
	fs.grace_eagain = fs.next_grace;
	fs.next_grace = 0;
	fs.next_id = 1 + 1000 * (uint64_t)fs.restarts;
	pthread_mutex_unlock(&fs.mu);
	memcpy(a.sun_path, fs.path, strlen(fs.path) + 1);
	unlink(fs.path);
	fs.null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fs.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fs.null_fd < 0 || fs.lfd < 0 || setsockopt(fs.lfd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
	    bind(fs.lfd, (struct sockaddr *)&a, sizeof(a)) || listen(fs.lfd, 64))
		abort();
	pthread_create(&fs.acc, NULL, fs_accept, NULL);
	fs.up = 1;
}

/* The daemon dies: every connection shut down, its state gone. */
static void fs_stop(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (!fs.up)
		return;
	pthread_mutex_lock(&fs.mu);
	fs.stopping = 1;
	for (int i = 0; i < fs.ncth; i++)
		shutdown(fs.cfd[i], SHUT_RDWR);
	pthread_cond_broadcast(&fs.cv);
	pthread_mutex_unlock(&fs.mu);
	/* wake accept() */
	memcpy(a.sun_path, fs.path, strlen(fs.path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		abort();
	pthread_join(fs.acc, NULL);
	close(fd);
	close(fs.lfd);
	close(fs.null_fd);
	unlink(fs.path);
	for (int i = 0; i < fs.ncth; i++) {
		pthread_join(fs.cth[i], NULL);
		close(fs.cfd[i]);
	}
	pthread_mutex_lock(&fs.mu);
	for (int i = 0; i < fs.nh; i++)
		if (fs.h[i].live)
			fs_end_holder(&fs.h[i]);
	fs.ncth = 0;
	fs.restarts++;
	pthread_mutex_unlock(&fs.mu);
	fs.up = 0;
}

static struct {
	uint64_t cap;
	unsigned int ms;
	pthread_t th;
} fs_later;

static void *fs_later_fn(void *arg)
{
	(void)arg;
	usleep(fs_later.ms * 1000);
	fs_start(fs_later.cap);
	return NULL;
}

/* Start again after ms, from another thread (the library retries meanwhile). */
static void fs_start_later(uint64_t cap, unsigned int ms)
{
	fs_later.cap = cap;
	fs_later.ms = ms;
	pthread_create(&fs_later.th, NULL, fs_later_fn, NULL);
}

static void fs_join_later(void)
{
	pthread_join(fs_later.th, NULL);
}

/* The daemon forgets holder i (as a restarted one would), nothing else. */
static void fs_forget(int i)
{
	pthread_mutex_lock(&fs.mu);
	if (fs.h[i].live)
		fs_end_holder(&fs.h[i]);
	pthread_mutex_unlock(&fs.mu);
}

/* Reset the counters (not the state). */
static void fs_zero(void)
{
	pthread_mutex_lock(&fs.mu);
	fs.registers = fs.reg_nfds = fs.wait_charges = fs.statuses = fs.status_ver0 = 0;
	fs.reg_flags = 0;
	fs.last_err = 0;
	fs.last_bytes = 0;
	pthread_mutex_unlock(&fs.mu);
}

static uint64_t fs_holder_charged(int i)
{
	uint64_t v;

	pthread_mutex_lock(&fs.mu);
	v = fs.h[i].live ? fs.h[i].charged : (uint64_t)-1;
	pthread_mutex_unlock(&fs.mu);
	return v;
}

#endif /* NXQ_TEST_FAKE_SRV_H */
