// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's client socket: the module's character device (kmod/cdev.c)
 * over a SOCK_SEQPACKET unix socket (<linux/nxquotad.h>), on the loop.
 * The commands' rules (sizes, flags, checks, registration's checks, the
 * device proof) are the ABI's (kmod/abi.c); this file has the transport,
 * who the caller is, the connections and the socket; the handlers are
 * client_cmd.c's, the holders' table client_obj.c's.
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
 * The objects and the files of the client socket: client.h.
 *
 * Bounds: connections in all (-N), per tenant subtree (-K), per uid (-U),
 * per process (-P), with room kept per subtree (-Q): conns.c; holders per
 * connection.  A connection over a bound is closed at once and counted.
 *
 * Tickets: a holder registered at version 2 with NXQD_REQ_NOTIFY is told
 * on the connection it was registered on (client_obj.c sends, signal.c
 * queues), without blocking, whatever else the connection is doing; an
 * eventfd a client before version 2 passed is written by signal.c's
 * thread: no tenant's file is written on the loop or under a ledger lock.
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

#include "client.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD	77
#endif

/* The exit of a process: its holders end, whoever has its connections. */
static void nxqd_proc_gone(struct nxqd_proc *p)
{
	struct nxqd_hent *e, *tmp;

	list_for_each_entry_safe(e, tmp, &p->holders, proc_link)
		nxqd_hent_end(e);
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
	if (q && q->waiting) {
		/* the wait ends as interrupted, nothing charged */
		nxqd_rq_cancel(q);
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

static void nxqd_conn_event(struct nxqd_watch *w, u32 revents)
{
	struct nxqd_conn *c = container_of(w, struct nxqd_conn, w);
	struct nxqd_ctx r = { .c = c };
	ssize_t n;
	int err;

	if (c->out || !list_empty(&c->notes)) {
		/* a reply, then notices, wait for room */
		if ((revents & (EPOLLHUP | EPOLLERR)) || nxqd_conn_flush(c)) {
			nxqd_conn_close(c);
			return;
		}
	} else if (revents & EPOLLOUT) {
		nxqd_conn_watch(c);	/* nothing waits for room any more */
	}
	if (c->busy) {
		/* only a hang-up is read while a request is in progress */
		if (revents & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			nxqd_conn_close(c);
		return;
	}
	/* nothing is read while a reply waits, nor on room alone */
	if (c->out || !(revents & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		return;
	/*
	 * One request per tenant (cgroup subtree) per turn: however many
	 * connections a tenant keeps busy, another's request waits behind one
	 * of its at most.  What is not read now is still readable at the next
	 * turn.
	 */
	if (!nxqd_conn_turn(&c->slot, &c->w))
		return;
	n = nxqd_recv(c, &r);
	if (n < 0)
		return;
	if (n == 0) {
		nxqd_conn_close(c);
		return;
	}
	if (r.fds_trunc)
		nxqd_conn_penalize(&c->slot);
	nxqd_caller(&r);
	if ((size_t)n > sizeof(nxqd_cl.msg))
		err = -E2BIG;
	else
		err = nxqd_handle(&r, (size_t)n);
	nxqd_close_fds(&r);
	if (r.caller_ref)
		nxqd_proc_put(r.caller);
	if (err != 1 && nxqd_reply(c, err, NULL, NULL, 0, NULL, 0))
		nxqd_conn_close(c);
	else if (!list_empty(&c->notes))
		nxqd_conn_watch(c);	/* busy: room is polled all the same */
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
	INIT_LIST_HEAD(&c->notes);
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
	/* the tickets of version 2's holders, told on their connections */
	err = nxqd_notice_start(nxqd_hent_notice);
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

void nxqd_client_refusals(const char *device, struct nxq_abi_refusals *r)
{
	r->conns = nxqd_cl.conns_refused;
	r->creds = nxqd_cl.creds_refused;
	nxqd_grace_stats(device, &r->restored, &r->restore_refused);
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
	nxqd_notice_stop();
	if (nxqd_cl.spare_fd >= 0)
		close(nxqd_cl.spare_fd);
}

