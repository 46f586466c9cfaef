// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's control socket: the module's generic netlink family
 * "nxquota" (kmod/netlink.c) over a root-only SOCK_SEQPACKET socket
 * (NXQD_CONTROL_PATH, mode 0600), one netlink message per packet both
 * ways (<linux/nxquotad.h>), on the loop.
 *
 * One ABI: the operations, their request policies and the attributes of
 * every message sent are kmod/abi_genl.c's (generated from the spec), and the
 * requests are parsed with the kernel's strict validation, rendered in
 * compat/nlattr.c -- the same nla_parse() against the same policies.  What
 * is checked is what generic netlink checks for the module's family:
 *  - a message without NLM_F_REQUEST, or of a control type, is ignored;
 *  - shorter than its genl header, a genl header's reserved byte set, or
 *    flags other than REQUEST, ACK, ECHO and DUMP: -EINVAL (the kernel's
 *    genl_header_check()); an unknown command, a do of a dump-only
 *    command or a dump of a do-only one: -EOPNOTSUPP;
 *  - the attributes, strictly against the operation's policy;
 *  - then the handler's rules and errnos, the same as kmod/netlink.c's
 *    (abi.c's where they are shared).
 * A do is answered by an NLMSG_ERROR ack (error 0 or -errno, the request's
 * seq, NLM_F_CAPPED, the extended ack's message as NLMSGERR_ATTR_MSG and a
 * missing attribute as NLMSGERR_ATTR_MISS_TYPE), sent even without
 * NLM_F_ACK; a dump by one message per object (NLM_F_MULTI), then
 * NLMSG_DONE.  A dump is built in one turn of the loop, so it is
 * consistent and never NLM_F_DUMP_INTR.
 *
 * Who may speak, judged on each message as it is read (ctl_sender(),
 * ctl_admin()), never once for the connection:
 *  - the socket file is 0600, and a peer whose SO_PEERCRED uid is not 0
 *    is closed at once; the connecting process is pinned at accept by a
 *    pidfd (SO_PEERPIDFD, or pidfd_open() and its start time);
 *  - each message's SCM_CREDENTIALS (SO_PASSCRED: the kernel attaches
 *    the sender's to every SOCK_SEQPACKET message, and lets a sender name
 *    a pid other than its own only with CAP_SYS_ADMIN over its pid
 *    namespace) must be uid 0's and name the connecting process, which
 *    must still be live: a connection passed to or inherited by another
 *    process grants nothing, and neither does the connector's pid once it
 *    exited and the pid was given to another process (the pidfd says the
 *    connector exited);
 *  - what changes something (the GENL_ADMIN_PERM operations) and joining
 *    the events need more, as in the module: CAP_SYS_ADMIN in the initial
 *    user namespace, read from /proc for each such message and checked
 *    against the pidfd after the read (nxqd_proc_admin()); and the
 *    connector's pid namespaces must all be owned by the daemon's user
 *    namespace (nxqd_proc_cred_trusted()), or root in a user namespace
 *    owning one could name the connector's pid on a connection it got.
 *    A root without it (a container's root, a process in a user
 *    namespace of its own, or one that dropped it after connecting) reads.
 * Each refusal is -EPERM with an extended ack's message, and counted in
 * the devices' creds-refused.
 *
 * Durability: a change is applied, the state file written, and if that
 * fails the change is undone and refused with the write's errno and a
 * message that says so -- all in one turn of the loop, which no charge
 * interleaves.
 *
 * Events: a request of NXQUOTA_CMD_EVENT subscribes its connection (the
 * module's "events" multicast group); nxqd_ctl_event(), the ledger's event
 * hook, runs on the compat layer's worker thread and sends each event to
 * every subscriber with MSG_DONTWAIT under ctl.lock (which the loop holds
 * to add or close a connection); an event some subscriber's full socket
 * refused is counted once in the device's events_dropped (in all and by
 * type; a coalesced denial as the denials it stands for).
 *
 * Output: what a connection's socket has no room for waits in its queue
 * (the connection is not read meanwhile).
 *
 * This file: the transport, who may speak, dispatch and the events; the
 * family's operations (devices, budgets, holders) are ctl_ops.c's, which
 * gets a request (struct ctl_req, ctl.h) and answers through the helpers
 * here.
 */
#include <linux/types.h>
#include <linux/nxquota.h>
#include <linux/genetlink.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <net/netlink.h>

#include "nxqd.h"
#include "ctl.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD	77
#endif

#define CTL_MSG_MAX	(64 * 1024)
#define NXQD_CTL_CONNS	64

/* ---- connections -------------------------------------------------------- */

struct ctl_buf {
	struct list_head link;
	size_t len;
	unsigned char data[];
};

struct ctl_conn {
	struct nxqd_watch w;
	struct list_head link;		/* ctl.conns; ctl.lock */
	struct ucred peer;
	int pidfd;			/* the connector's, pinned at accept */
	bool pidns_ok;			/* nxqd_proc_cred_trusted(peer.pid) */
	bool subscribed;		/* ctl.lock */
	bool closed;
	struct list_head out;		/* struct ctl_buf, not sent yet */
};

static struct {
	pthread_mutex_t lock;		/* conns, subscribed, their fds */
	struct list_head conns;
	unsigned int nconns, nsubs;
	int lfd;
	struct nxqd_watch lw;
	char *path;			/* bound by us: unlinked at stop */
	unsigned long creds_refused;
	unsigned char buf[CTL_MSG_MAX] __aligned(8);
} ctl = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.conns = LIST_HEAD_INIT(ctl.conns),
	.lfd = -1,
};

/* ---- building messages ---------------------------------------------------- */

/* A message being built: grows, NLA-aligned; @err once it could not. */
struct nlb {
	unsigned char *p;
	size_t len, cap;
	bool err;
};

static void *nlb_put(struct nlb *b, size_t n)
{
	size_t need = b->len + NLA_ALIGN(n);
	void *p;

	if (b->err)
		return NULL;
	if (need > b->cap) {
		size_t cap = max_t(size_t, 2 * b->cap, max_t(size_t, need, 256));
		unsigned char *np = realloc(b->p, cap);

		if (!np) {
			b->err = true;
			return NULL;
		}
		b->p = np;
		b->cap = cap;
	}
	p = b->p + b->len;
	memset(p, 0, NLA_ALIGN(n));
	b->len = need;
	return p;
}

/* A netlink header and, for a genl message, its genl header. */
static void nlb_hdr(struct nlb *b, u16 type, u16 flags, u32 seq, u32 port,
		   int cmd)
{
	struct nlmsghdr *h = nlb_put(b, NLMSG_HDRLEN);
	struct genlmsghdr *g;

	if (!h)
		return;
	h->nlmsg_type = type;
	h->nlmsg_flags = flags;
	h->nlmsg_seq = seq;
	h->nlmsg_pid = port;
	if (cmd < 0)
		return;
	g = nlb_put(b, GENL_HDRLEN);
	if (g) {
		g->cmd = (u8)cmd;
		g->version = NXQUOTA_FAMILY_VERSION;
	}
}

static void nlb_attr(struct nlb *b, u16 type, const void *data, size_t len)
{
	struct nlattr *a = nlb_put(b, NLA_HDRLEN + len);

	if (!a)
		return;
	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
}

/* The attributes abi_genl.c says a message has. */
static void nlb_msg(struct nlb *b, const struct nxq_abi_msg *m)
{
	unsigned int i;

	for (i = 0; i < m->n; i++) {
		const struct nxq_abi_attr *a = &m->a[i];
		u8 v8 = a->v;
		u32 v32 = a->v;

		switch (a->kind) {
		case NXQ_ABI_U8:
			nlb_attr(b, a->type, &v8, sizeof(v8));
			break;
		case NXQ_ABI_U32:
			nlb_attr(b, a->type, &v32, sizeof(v32));
			break;
		case NXQ_ABI_U64:
			nlb_attr(b, a->type, &a->v, sizeof(a->v));
			break;
		default:
			nlb_attr(b, a->type, a->s, strlen(a->s) + 1);
			break;
		}
	}
}

static void nlb_end(struct nlb *b)
{
	if (!b->err)
		((struct nlmsghdr *)b->p)->nlmsg_len = b->len;
}

/* ---- output ---------------------------------------------------------------- */

/* Send @b (one packet) on @c, or queue it; it is consumed. */
static void ctl_out(struct ctl_conn *c, struct nlb *b)
{
	struct ctl_buf *q;
	ssize_t n;

	if (b->err || c->closed) {
		free(b->p);
		return;
	}
	nlb_end(b);
	if (list_empty(&c->out)) {
		n = send(c->w.fd, b->p, b->len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n == (ssize_t)b->len || (n < 0 && errno != EAGAIN)) {
			free(b->p);
			return;
		}
	}
	q = malloc(sizeof(*q) + b->len);
	if (q) {
		q->len = b->len;
		memcpy(q->data, b->p, b->len);
		list_add_tail(&q->link, &c->out);
		nxqd_watch_mod(&c->w, EPOLLOUT | EPOLLRDHUP);
	}
	free(b->p);
}

/* ---- what one request carries (struct ctl_req: ctl.h) ------------------ */

/* GENL_REQ_ATTR_CHECK() */
bool ctl_missing(struct ctl_req *r, int type)
{
	if (r->tb[type])
		return false;
	r->ext.miss_type = type;
	return true;
}

/* A refusal the ABI explained (@why, its msg NULL: it said nothing). */
int ctl_fail(struct ctl_req *r, const struct nxq_abi_fail *why, int err)
{
	if (why->msg) {
		r->ext._msg = why->msg;
		r->ext.bad_attr = why->attr;
	}
	return err;
}

/* netlink_ack(): NLMSG_ERROR with the request's header, capped. */
static void ctl_ack(struct ctl_req *r, int err)
{
	struct nlmsgerr e = { .error = err, .msg = *r->nlh };
	struct nlb b = { 0 };
	u16 flags = NLM_F_CAPPED;
	void *p;

	if (r->ext._msg || r->ext.miss_type)
		flags |= NLM_F_ACK_TLVS;
	/* the tickets a change asked for are signalled before its ack */
	nxqd_signal_flush();
	nlb_hdr(&b, NLMSG_ERROR, flags, r->nlh->nlmsg_seq, r->nlh->nlmsg_pid,
		-1);
	p = nlb_put(&b, sizeof(e));
	if (p)
		memcpy(p, &e, sizeof(e));
	if (r->ext._msg)
		nlb_attr(&b, NLMSGERR_ATTR_MSG, r->ext._msg,
			 strlen(r->ext._msg) + 1);
	if (r->ext.miss_type)
		nlb_attr(&b, NLMSGERR_ATTR_MISS_TYPE, &r->ext.miss_type,
			 sizeof(r->ext.miss_type));
	if (r->ext.bad_attr) {
		u32 off = (const unsigned char *)r->ext.bad_attr -
			  (const unsigned char *)r->nlh;

		nlb_attr(&b, NLMSGERR_ATTR_OFFS, &off, sizeof(off));
	}
	ctl_out(r->c, &b);
}

/* One message of a dump, of @cmd, with @m's attributes. */
void ctl_dump_one(struct ctl_req *r, u8 cmd, const struct nxq_abi_msg *m)
{
	struct nlb b = { 0 };

	nlb_hdr(&b, NXQD_GENL_ID, NLM_F_MULTI, r->nlh->nlmsg_seq,
		r->nlh->nlmsg_pid, cmd);
	nlb_msg(&b, m);
	ctl_out(r->c, &b);
}

void ctl_dump_done(struct ctl_req *r)
{
	struct nlb b = { 0 };

	nlb_hdr(&b, NLMSG_DONE, NLM_F_MULTI, r->nlh->nlmsg_seq,
		r->nlh->nlmsg_pid, -1);
	nlb_put(&b, sizeof(int));	/* its error: 0 */
	ctl_out(r->c, &b);
	r->acked = true;
}

/* Requests this socket refused for who sent them (the device dump). */
unsigned long ctl_creds_refused(void)
{
	return ctl.creds_refused;
}

/* ---- events ---------------------------------------------------------------- */

/* The ack goes out before the first event: both under ctl.lock. */
static int ctl_subscribe(struct ctl_req *r)
{
	pthread_mutex_lock(&ctl.lock);
	ctl_ack(r, 0);
	r->acked = true;
	if (!r->c->subscribed) {
		r->c->subscribed = true;
		ctl.nsubs++;
	}
	pthread_mutex_unlock(&ctl.lock);
	return 0;
}

/**
 * nxqd_ctl_listening() - the ledger's listening hook: does anyone listen?
 *
 * A racy look, as the module's: a subscriber that joins now sees the
 * events from its join on.  It spares the ledger queueing (and the worker
 * thread waking for) events nobody gets, as a refused charge in a loop
 * would make.
 *
 * Return: true if a connection subscribed to the events.
 */
bool nxqd_ctl_listening(void)
{
	return __atomic_load_n(&ctl.nsubs, __ATOMIC_RELAXED) > 0;
}

/* @m to every subscriber (any thread); true if a full socket refused it. */
bool nxqd_ctl_send(const struct nxq_abi_msg *m)
{
	struct ctl_conn *c;
	struct nlb b = { 0 };
	bool dropped = false;
	ssize_t n;

	pthread_mutex_lock(&ctl.lock);
	if (!ctl.nsubs) {
		pthread_mutex_unlock(&ctl.lock);
		return false;
	}
	nlb_hdr(&b, NXQD_GENL_ID, 0, 0, 0, NXQUOTA_CMD_EVENT);
	nlb_msg(&b, m);
	nlb_end(&b);
	dropped = b.err;
	list_for_each_entry(c, &ctl.conns, link) {
		if (!c->subscribed || b.err)
			continue;
		n = send(c->w.fd, b.p, b.len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN)
			dropped = true;
	}
	pthread_mutex_unlock(&ctl.lock);
	free(b.p);
	return dropped;
}

/**
 * nxqd_ctl_event() - send a ledger event to every subscriber
 * @ev: the event
 *
 * The ledger's event hook: called on the compat layer's worker thread, in
 * the order events happened, with no ledger lock held.  Never blocks on a
 * subscriber: an event that a full socket refuses is lost to it and
 * counted once in the device's events_dropped, as is one that cannot be
 * built.
 */
void nxqd_ctl_event(const struct nxq_event *ev)
{
	struct nxq_abi_msg m;

	if (nxq_abi_event_msg(ev, &m) && nxqd_ctl_send(&m))
		nxq_event_lost(ev);
}

/* ---- dispatch --------------------------------------------------------------- */

/*
 * The handlers; which command is a do or a dump, and its policy,
 * abi_genl.c's.
 */
struct ctl_handlers {
	u8 cmd;
	int (*doit)(struct ctl_req *r);
	int (*dumpit)(struct ctl_req *r);
};

static const struct ctl_handlers ctl_handlers[] = {
	{ NXQUOTA_CMD_DEVICE_GET, NULL, ctl_device_dump },
	{ NXQUOTA_CMD_DEVICE_ADD, ctl_device_add, NULL },
	{ NXQUOTA_CMD_DEVICE_DEL, ctl_device_del, NULL },
	{ NXQUOTA_CMD_DEVICE_SET, ctl_device_set, NULL },
	{ NXQUOTA_CMD_BUDGET_GET, NULL, ctl_budget_dump },
	{ NXQUOTA_CMD_BUDGET_SET, ctl_budget_set, NULL },
	{ NXQUOTA_CMD_BUDGET_CLEAR, ctl_budget_clear, NULL },
	{ NXQUOTA_CMD_HOLDER_GET, NULL, ctl_holder_dump },
};

static const struct ctl_handlers *ctl_handler(u8 cmd)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ctl_handlers); i++)
		if (ctl_handlers[i].cmd == cmd)
			return &ctl_handlers[i];
	return NULL;
}

static const char ctl_not_admin[] =
	"needs CAP_SYS_ADMIN in the initial user namespace, as the module does";
static const char ctl_gone[] =
	"the root process that connected has exited: its pid may be another's";

/*
 * May the sender of a message on @c speak at all?  @uc: its
 * SCM_CREDENTIALS, NULL if it came without.  It must be uid 0 and the
 * process that connected, still live (so that a pid it had is not taken
 * for it once another process has it).  Return: NULL, or why not.
 */
static const char *ctl_sender(struct ctl_conn *c, const struct ucred *uc)
{
	if (!uc || uc->uid != 0 || uc->pid != c->peer.pid)
		return "not sent by the root process that connected";
	if (!nxqd_proc_alive(c->pidfd))
		return ctl_gone;
	return NULL;
}

/*
 * May the sender of @r (ctl_sender() said it is the connector) change
 * something or join the events?  CAP_SYS_ADMIN in the initial user
 * namespace, read now.  And the connector's pid namespaces must all be
 * the daemon's user namespace's: where a user namespace owns one, its
 * root may put the connector's pid in its own credentials, and would
 * speak with the connector's capability on a connection it inherited.
 * Return: 0, or -EPERM with the ack's message.
 */
static int ctl_admin(struct ctl_req *r)
{
	int ret;

	if (!r->c->pidns_ok) {
		ctl.creds_refused++;
		r->ext._msg = "the process that connected is in a pid namespace a user namespace owns: another could send as it";
		return -EPERM;
	}
	ret = nxqd_proc_admin(r->c->peer.pid, r->c->pidfd);
	if (ret == 1)
		return 0;
	ctl.creds_refused++;
	r->ext._msg = ret < 0 ? ctl_gone : ctl_not_admin;
	return -EPERM;
}

/* One message of @len bytes from @c, sent with the credentials @uc. */
static void ctl_handle(struct ctl_conn *c, void *buf, size_t len,
		       const struct ucred *uc)
{
	struct ctl_req r = { .c = c, .nlh = buf };
	const struct nxq_abi_nlop *op;
	const struct ctl_handlers *h;
	bool dump;
	int err, flags;

	/* netlink_rcv_skb(): what is not a request is not answered. */
	if (len < NLMSG_HDRLEN || r.nlh->nlmsg_len < NLMSG_HDRLEN ||
	    r.nlh->nlmsg_len > len)
		return;
	if (!(r.nlh->nlmsg_flags & NLM_F_REQUEST) ||
	    r.nlh->nlmsg_type < NLMSG_MIN_TYPE)
		return;
	r.ext._msg = ctl_sender(c, uc);
	if (r.ext._msg) {
		ctl.creds_refused++;
		err = -EPERM;
		goto ack;
	}
	if (NLMSG_ALIGN(r.nlh->nlmsg_len) < len) {
		r.ext._msg = "one netlink message per packet";
		err = -EINVAL;
		goto ack;
	}
	if (r.nlh->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN) {
		err = -EINVAL;
		goto ack;
	}
	r.gh = nlmsg_data(r.nlh);
	/* genl_header_check() */
	err = -EINVAL;
	if (r.gh->reserved) {
		r.ext._msg = "genlmsghdr.reserved field is not 0";
		goto ack;
	}
	flags = r.nlh->nlmsg_flags;
	if ((flags & NLM_F_DUMP) == NLM_F_DUMP)
		flags &= ~NLM_F_DUMP;
	if (flags & ~(NLM_F_REQUEST | NLM_F_ACK | NLM_F_ECHO)) {
		r.ext._msg = "ambiguous or reserved bits set in nlmsg_flags";
		goto ack;
	}
	dump = (r.nlh->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
	/* the daemon's own: what joining the "events" group is */
	if (r.gh->cmd == NXQUOTA_CMD_EVENT && !dump) {
		err = ctl_admin(&r);
		if (err)
			goto ack;
		err = nlmsg_parse(r.nlh, GENL_HDRLEN, r.tb, 0, NULL, &r.ext);
		if (!err)
			err = ctl_subscribe(&r);
		goto ack;
	}
	op = nxq_abi_nlop(r.gh->cmd);
	h = op ? ctl_handler(op->cmd) : NULL;
	err = -EOPNOTSUPP;
	if (!op || !h || (dump ? !op->dumpit : !op->doit))
		goto ack;
	if (op->flags & GENL_ADMIN_PERM) {
		err = ctl_admin(&r);
		if (err)
			goto ack;
	}
	/* strictly, against the operation's policy (none: no attribute) */
	err = nlmsg_parse(r.nlh, GENL_HDRLEN, r.tb, op->maxattr, op->policy,
			  &r.ext);
	if (err)
		goto ack;
	/* the sender is the root that connected (and may change, if asked) */
	err = dump ? h->dumpit(&r) : h->doit(&r);
ack:
	if (!r.acked)
		ctl_ack(&r, err);
}

static void ctl_free(void *arg)
{
	struct ctl_conn *c = arg;
	struct ctl_buf *q, *tmp;

	list_for_each_entry_safe(q, tmp, &c->out, link)
		free(q);
	if (c->pidfd >= 0)
		close(c->pidfd);
	free(c);
}

static void ctl_close(struct ctl_conn *c)
{
	if (c->closed)
		return;
	c->closed = true;
	nxqd_watch_del(&c->w);
	pthread_mutex_lock(&ctl.lock);
	list_del(&c->link);
	if (c->subscribed)
		ctl.nsubs--;
	ctl.nconns--;
	close(c->w.fd);
	pthread_mutex_unlock(&ctl.lock);
	nxqd_loop_defer_free(c, ctl_free);
}

/* Send what waits; true when nothing does. */
static bool ctl_flush(struct ctl_conn *c)
{
	struct ctl_buf *q;
	ssize_t n;

	while (!list_empty(&c->out)) {
		q = list_first_entry(&c->out, struct ctl_buf, link);
		n = send(c->w.fd, q->data, q->len,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN)
			return false;
		list_del(&q->link);
		free(q);
		if (n < 0) {
			ctl_close(c);
			return false;
		}
	}
	nxqd_watch_mod(&c->w, EPOLLIN | EPOLLRDHUP);
	return true;
}

static void ctl_event(struct nxqd_watch *w, u32 revents)
{
	struct ctl_conn *c = container_of(w, struct ctl_conn, w);
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred)) +
			 CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = ctl.buf, .iov_len = sizeof(ctl.buf) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
	};
	struct ucred uc, *ucp = NULL;
	struct cmsghdr *cm;
	ssize_t n;

	if (!list_empty(&c->out)) {
		if (revents & (EPOLLHUP | EPOLLERR))
			ctl_close(c);
		else
			ctl_flush(c);
		return;
	}
	n = recvmsg(w->fd, &mh, MSG_TRUNC | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		ctl_close(c);
		return;
	}
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET)
			continue;
		if (cm->cmsg_type == SCM_CREDENTIALS &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			memcpy(&uc, CMSG_DATA(cm), sizeof(uc));
			ucp = &uc;
		} else if (cm->cmsg_type == SCM_RIGHTS) {
			size_t k, nfd = (cm->cmsg_len - CMSG_LEN(0)) /
					sizeof(int);

			for (k = 0; k < nfd; k++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + k * sizeof(int),
				       sizeof(fd));
				close(fd);
			}
		}
	}
	if (n > CTL_MSG_MAX) {
		/* As a netlink socket: too big for the buffer. */
		struct ctl_req r = { .c = c, .nlh = (void *)ctl.buf };

		r.ext._msg = "message too long";
		ctl_ack(&r, -EMSGSIZE);
		return;
	}
	ctl_handle(c, ctl.buf, (size_t)n, ucp);
}

static void ctl_accept(struct nxqd_watch *w, u32 revents)
{
	u64 ticks = nxqd_proc_ticks(), start;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct ctl_conn *c;
	int fd, pidfd = -1, on = 1;

	fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	/* Root only: the kernel says who connected. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    cred.uid != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) ||
	    ctl.nconns >= NXQD_CTL_CONNS) {
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	/* the connector, pinned: a pid it leaves is not taken for it */
	len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len))
		pidfd = -1;	/* before Linux 6.5: pidfd_open(), start time */
	pidfd = nxqd_proc_pin(cred.pid, pidfd, ticks, &start);
	if (pidfd < 0) {
		free(c);
		close(fd);
		return;
	}
	c->peer = cred;
	c->pidfd = pidfd;
	c->pidns_ok = nxqd_proc_cred_trusted(cred.pid);
	c->w.fd = fd;
	c->w.events = EPOLLIN | EPOLLRDHUP;
	c->w.fn = ctl_event;
	INIT_LIST_HEAD(&c->out);
	if (nxqd_watch_add(&c->w)) {
		close(pidfd);
		close(fd);
		free(c);
		return;
	}
	pthread_mutex_lock(&ctl.lock);
	list_add_tail(&c->link, &ctl.conns);
	ctl.nconns++;
	pthread_mutex_unlock(&ctl.lock);
}

/**
 * nxqd_ctl_start() - open the control socket and serve it on the loop
 * @path: where to bind it, unless systemd passed one named "control"
 *
 * Return: 0, or a negative errno (-EADDRINUSE: a daemon answers there).
 */
int nxqd_ctl_start(const char *path)
{
	int fd = nxqd_listen_fds("control"), on = 1;

	if (fd < 0) {
		fd = nxqd_bind(path, 0600, -1, 16);
		if (fd < 0)
			return fd;
		ctl.path = strdup(path);
	} else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)) {
		return -errno;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on))) {
		close(fd);
		return -errno;
	}
	ctl.lfd = fd;
	ctl.lw.fd = fd;
	ctl.lw.events = EPOLLIN;
	ctl.lw.fn = ctl_accept;
	return nxqd_watch_add(&ctl.lw);
}

/**
 * nxqd_ctl_stop() - stop serving: no new connection, every connection
 * closed; the socket file removed if nxqd_ctl_start() bound it
 */
void nxqd_ctl_stop(void)
{
	struct ctl_conn *c, *tmp;

	if (ctl.lfd < 0)
		return;
	nxqd_watch_del(&ctl.lw);
	close(ctl.lfd);
	ctl.lfd = -1;
	list_for_each_entry_safe(c, tmp, &ctl.conns, link)
		ctl_close(c);
	if (ctl.path)
		unlink(ctl.path);
	free(ctl.path);
	ctl.path = NULL;
}
