// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's control socket: the module's generic netlink family
 * "nxquota" (kmod/netlink.c, Documentation/netlink/specs/nxquota.yaml)
 * over a root-only SOCK_SEQPACKET socket (NXQD_CONTROL_PATH, mode 0600).
 *
 * One netlink message per SEQPACKET message, both ways (daemon/proto.h).
 * Messages are built and taken apart with libnl-3 (its core library only:
 * the genl header is a fixed struct after the netlink header, and
 * libnl-genl-3 is missing where the daemon matters most, e.g. the GPU
 * host's Ubuntu image); what is checked is
 * what the kernel's generic netlink checks for the module's family:
 *  - a message without NLM_F_REQUEST, or of a control type, is ignored;
 *  - shorter than its genl header, a genl header's reserved byte set, or
 *    flags other than REQUEST, ACK, ECHO and DUMP: -EINVAL (the kernel's
 *    genl_header_check()); unknown command, a do of a dump-only command
 *    or a dump of a do-only one: -EOPNOTSUPP;
 *  - attributes are validated strictly against the module's policies
 *    (the kernel's __nla_validate_parse() with NL_VALIDATE_STRICT):
 *    unknown types (0 or above the command's maxattr) and attributes the
 *    policy does not name -EINVAL (a command without a policy takes no
 *    attribute at all: genl's reject-all policy), a fixed-size integer
 *    of the wrong length -EINVAL, a string without its NUL -EINVAL or longer than the
 *    policy's -ERANGE, kill-on-ignore above 1 -ERANGE, bytes left over
 *    -EINVAL, NLA_F_NESTED on a scalar -EINVAL;
 *  - then the handler's rules and errnos, the same as kmod/netlink.c's.
 * A do is answered by an NLMSG_ERROR ack (error 0 or -errno, the request's
 * seq, NLM_F_CAPPED, the extended-ack message as NLMSGERR_ATTR_MSG), sent
 * even without NLM_F_ACK (daemon/proto.h); a dump by one message per
 * object (NLM_F_MULTI), then NLMSG_DONE.  A dump is built under the
 * ledger lock in one go, so it is consistent and never NLM_F_DUMP_INTR.
 *
 * Who may speak: the socket file is 0600, and a peer whose SO_PEERCRED
 * uid is not 0 is closed at once (the module asks CAP_SYS_ADMIN for every
 * change and shows non-admins only their own subtree; here, root only).
 *
 * Events: a request of NXQUOTA_CMD_EVENT subscribes its connection (the
 * module's "events" multicast group); nxqd_ctl_event(), the ledger's event
 * hook, sends each event to every subscriber with MSG_DONTWAIT, and an
 * event some subscriber's full socket refused is counted once in the
 * device's events_dropped, as genlmsg_multicast()'s -ENOBUFS is.
 *
 * Threads: one listener, one thread per connection (at most
 * NXQD_CTL_CONNS); each is a task for the compat layer the first time it
 * takes a ledger lock.  ctl_lock (a pthread mutex, never held with a
 * ledger lock) guards the connection list.
 */
#include <linux/types.h>
#include <linux/nxquota.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/attr.h>
#include <linux/genetlink.h>

#include "ledger.h"
#include "nxqd.h"
#include "ctl.h"

#define CTL_KEY_LEN	(NXQ_DEVICE_KEY_MAX - 1)
#define CTL_PATH_LEN	(PATH_MAX - 1)
#define CTL_MSG_MAX	(64 * 1024)
#define NXQD_CTL_CONNS	64

/* ---- connections -------------------------------------------------------- */

struct ctl_conn {
	int fd;
	bool subscribed;		/* ctl_lock */
	struct ctl_conn *next;		/* ctl_lock */
};

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ctl_gone = PTHREAD_COND_INITIALIZER;
static struct ctl_conn *ctl_conns;	/* ctl_lock */
static unsigned int ctl_nconns;		/* ctl_lock */
static unsigned int ctl_nsubs;		/* ctl_lock */
static int ctl_lfd = -1;
static bool ctl_stopping;		/* ctl_lock */
static char *ctl_path;			/* bound by us: unlinked at stop */
static pthread_t ctl_listener;

/* ---- what one request carries ------------------------------------------ */

struct ctl_req {
	struct ctl_conn *c;
	struct nlmsghdr *nlh;
	struct genlmsghdr *gh;
	struct nlattr *tb[NXQUOTA_A_BUDGET_LAST + 1];
	const char *msg;		/* extended ack */
	char msg_buf[640];		/* a formatted one, msg points here */
	int miss;			/* missing attribute, 0 none */
	bool acked;			/* a dump answered by its DONE */
};

/* ---- the policies (kmod/netlink.c's) ------------------------------------ */

enum { P_NONE, P_U8, P_U32, P_U64, P_STR, P_FLAG };

struct ctl_pol {
	unsigned char type;
	unsigned short len;		/* P_STR: longest string */
	unsigned char max;		/* P_U8: largest value, 0 any */
};

static const struct ctl_pol device_policy[] = {
	[NXQUOTA_A_DEVICE_KEY] = { P_STR, CTL_KEY_LEN },
	[NXQUOTA_A_DEVICE_CAPACITY] = { P_U64 },
	[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS] = { P_U32 },
	[NXQUOTA_A_DEVICE_DEFAULT_MAX] = { P_U64 },
};

static const struct ctl_pol device_add_policy[] = {
	[NXQUOTA_A_DEVICE_KEY] = { P_STR, CTL_KEY_LEN },
	[NXQUOTA_A_DEVICE_CAPACITY] = { P_U64 },
	[NXQUOTA_A_DEVICE_DEVT] = { P_STR, 31 },
};

static const struct ctl_pol budget_get_policy[] = {
	[NXQUOTA_A_BUDGET_DEVICE] = { P_STR, CTL_KEY_LEN },
};

static const struct ctl_pol budget_set_policy[] = {
	[NXQUOTA_A_BUDGET_DEVICE] = { P_STR, CTL_KEY_LEN },
	[NXQUOTA_A_BUDGET_CGROUP_PATH] = { P_STR, CTL_PATH_LEN },
	[NXQUOTA_A_BUDGET_MAX] = { P_U64 },
	[NXQUOTA_A_BUDGET_MIN] = { P_U64 },
	[NXQUOTA_A_BUDGET_KILL_ON_IGNORE] = { P_U8, 0, 1 },
	[NXQUOTA_A_BUDGET_HOLDERS_MAX] = { P_U32 },
	[NXQUOTA_A_BUDGET_WAITERS_MAX] = { P_U32 },
	[NXQUOTA_A_BUDGET_PRIORITY_MAX] = { P_U32 },
	[NXQUOTA_A_BUDGET_WAIT_MAX_MS] = { P_U32 },
	[NXQUOTA_A_BUDGET_OVERCOMMIT] = { P_FLAG },
};

static const struct ctl_pol holder_get_policy[] = {
	[NXQUOTA_A_HOLDER_DEVICE] = { P_STR, CTL_KEY_LEN },
};

/*
 * The kernel's strict attribute validation (lib/nlattr.c) of the request's
 * attributes against @pol[1..@maxattr]; fills r->tb.
 */
static int ctl_validate(struct ctl_req *r, const struct ctl_pol *pol,
			int maxattr)
{
	struct nlattr *a;
	int rem;

	nla_for_each_attr(a, nlmsg_attrdata(r->nlh, GENL_HDRLEN),
			  nlmsg_attrlen(r->nlh, GENL_HDRLEN), rem) {
		int type = nla_type(a), len = nla_len(a);
		const struct ctl_pol *p;
		const char *s;

		if (type == 0 || type > maxattr) {
			r->msg = "Unknown attribute type";
			return -EINVAL;
		}
		p = &pol[type];
		if (p->type == P_NONE) {
			r->msg = "Unsupported attribute";
			return -EINVAL;
		}
		if ((p->type == P_FLAG && len != 0) ||
		    (p->type == P_U8 && len != 1) ||
		    (p->type == P_U32 && len != 4) ||
		    (p->type == P_U64 && len != 8)) {
			r->msg = "invalid attribute length";
			return -EINVAL;
		}
		if (a->nla_type & NLA_F_NESTED) {
			r->msg = "NLA_F_NESTED not expected";
			return -EINVAL;
		}
		if (p->type == P_STR) {
			s = nla_data(a);
			if (!len || !memchr(s, '\0', len < p->len + 1 ?
					    len : p->len + 1)) {
				r->msg = "Attribute failed policy validation";
				return -EINVAL;
			}
			if (s[len - 1] == '\0')
				len--;
			if (len > p->len) {
				r->msg = "Attribute failed policy validation";
				return -ERANGE;
			}
		}
		if (p->type == P_U8 && p->max && nla_get_u8(a) > p->max) {
			r->msg = "integer out of range";
			return -ERANGE;
		}
		r->tb[type] = a;
	}
	if (rem > 0) {
		r->msg = "bytes leftover after parsing attributes";
		return -EINVAL;
	}
	return 0;
}

/* GENL_REQ_ATTR_CHECK() */
static bool ctl_missing(struct ctl_req *r, int type)
{
	if (r->tb[type])
		return false;
	r->miss = type;
	return true;
}

/* ---- replies ------------------------------------------------------------- */

/* libnl-genl's genlmsg_put(): the netlink header, then the genl one. */
static struct genlmsghdr *ctl_genl_put(struct nl_msg *m, u32 port, u32 seq,
				       int flags, u8 cmd)
{
	struct nlmsghdr *h;
	struct genlmsghdr *g;

	h = nlmsg_put(m, port, seq, NXQD_GENL_ID, GENL_HDRLEN, flags);
	if (!h)
		return NULL;
	g = nlmsg_data(h);
	g->cmd = cmd;
	g->version = NXQUOTA_FAMILY_VERSION;
	g->reserved = 0;
	return g;
}

static struct nl_msg *ctl_msg_new(struct ctl_req *r, int flags, u8 cmd)
{
	struct nl_msg *m = nlmsg_alloc_size(PATH_MAX + 2048);

	if (!m)
		return NULL;
	if (!ctl_genl_put(m, r->nlh->nlmsg_pid, r->nlh->nlmsg_seq, flags,
			  cmd)) {
		nlmsg_free(m);
		return NULL;
	}
	return m;
}

static int ctl_send(int fd, struct nl_msg *m, int flags)
{
	struct nlmsghdr *h = nlmsg_hdr(m);
	ssize_t n;

	n = send(fd, h, h->nlmsg_len, MSG_NOSIGNAL | flags);
	return n == (ssize_t)h->nlmsg_len ? 0 : -errno;
}

/* netlink_ack(): NLMSG_ERROR with the request's header, capped. */
static void ctl_ack(struct ctl_req *r, int err)
{
	struct nlmsgerr e = { .error = err, .msg = *r->nlh };
	int flags = NLM_F_CAPPED;
	struct nl_msg *m;

	if (r->msg || r->miss)
		flags |= NLM_F_ACK_TLVS;
	m = nlmsg_alloc_simple(NLMSG_ERROR, flags);
	if (!m)
		return;
	nlmsg_hdr(m)->nlmsg_seq = r->nlh->nlmsg_seq;
	nlmsg_hdr(m)->nlmsg_pid = r->nlh->nlmsg_pid;
	if (nlmsg_append(m, &e, sizeof(e), NLMSG_ALIGNTO) ||
	    (r->msg && nla_put_string(m, NLMSGERR_ATTR_MSG, r->msg)) ||
	    (r->miss && nla_put_u32(m, NLMSGERR_ATTR_MISS_TYPE, r->miss))) {
		nlmsg_free(m);
		return;
	}
	ctl_send(r->c->fd, m, 0);
	nlmsg_free(m);
}

/*
 * A dump's messages: collected under the locks, sent after them (a slow
 * reader must not hold up the ledger).
 */
struct ctl_dump {
	struct nl_msg **m;
	size_t n, cap;
	int err;
};

static struct nl_msg *ctl_dump_add(struct ctl_dump *d, struct ctl_req *r,
				   u8 cmd)
{
	struct nl_msg *m;

	if (d->err)
		return NULL;
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 16;
		struct nl_msg **v = realloc(d->m, cap * sizeof(*v));

		if (!v) {
			d->err = -ENOMEM;
			return NULL;
		}
		d->m = v;
		d->cap = cap;
	}
	m = ctl_msg_new(r, NLM_F_MULTI, cmd);
	if (!m) {
		d->err = -ENOMEM;
		return NULL;
	}
	d->m[d->n++] = m;
	return m;
}

/* Send what was collected, then NLMSG_DONE (or the error, as an ack). */
static void ctl_dump_end(struct ctl_dump *d, struct ctl_req *r)
{
	struct nl_msg *m;
	int zero = 0;
	size_t i;

	for (i = 0; i < d->n; i++) {
		if (!d->err)
			d->err = ctl_send(r->c->fd, d->m[i], 0);
		nlmsg_free(d->m[i]);
	}
	free(d->m);
	r->acked = true;
	if (d->err) {
		ctl_ack(r, d->err);
		return;
	}
	m = nlmsg_alloc_simple(NLMSG_DONE, NLM_F_MULTI);
	if (!m)
		return;
	nlmsg_hdr(m)->nlmsg_seq = r->nlh->nlmsg_seq;
	nlmsg_hdr(m)->nlmsg_pid = r->nlh->nlmsg_pid;
	if (!nlmsg_append(m, &zero, sizeof(zero), NLMSG_ALIGNTO))
		ctl_send(r->c->fd, m, 0);
	nlmsg_free(m);
}

/* ---- devices ------------------------------------------------------------- */

static int ctl_put_device(struct nl_msg *m, struct nxq_device *dev)
{
	u64 capacity, used, denials, hits, tickets, asked, released, kills;
	u64 waits, timeouts, default_max;
	u32 timeout_ms, waiters;
	char devt[32];

	lockdep_assert_held(&nxqd_ledger.lock);
	spin_lock(&dev->lock);
	capacity = dev->capacity;
	used = dev->used;
	denials = dev->denials;
	hits = dev->capacity_hits;
	tickets = dev->tickets;
	asked = dev->bytes_asked;
	released = dev->bytes_released;
	kills = dev->kills;
	waits = dev->waits;
	timeouts = dev->timeouts;
	timeout_ms = dev->ticket_timeout_ms;
	default_max = dev->default_max;
	waiters = dev->nr_waiters;
	spin_unlock(&dev->lock);
	snprintf(devt, sizeof(devt), "%u:%u", major(dev->devt),
		 minor(dev->devt));
	if (nla_put_string(m, NXQUOTA_A_DEVICE_KEY, dev->key) ||
	    nla_put_u64(m, NXQUOTA_A_DEVICE_CAPACITY, capacity) ||
	    nla_put_u64(m, NXQUOTA_A_DEVICE_USED, used) ||
	    nla_put_u32(m, NXQUOTA_A_DEVICE_HOLDERS, dev->nr_holders) ||
	    nla_put_u64(m, NXQUOTA_A_DEVICE_DENIALS, denials) ||
	    nla_put_u64(m, NXQUOTA_A_DEVICE_CAPACITY_HITS, hits) ||
	    nla_put_u64(m, NXQUOTA_A_DEVICE_TICKETS, tickets) ||
	    nla_put_u64(m, NXQUOTA_A_DEVICE_BYTES_ASKED, asked) ||
	    nla_put_u64(m, NXQUOTA_A_DEVICE_BYTES_RELEASED, released) ||
	    nla_put_u64(m, NXQUOTA_A_DEVICE_KILLS, kills) ||
	    nla_put_u64(m, NXQUOTA_A_DEVICE_WAITS, waits) ||
	    nla_put_u64(m, NXQUOTA_A_DEVICE_TIMEOUTS, timeouts) ||
	    nla_put_u32(m, NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS, timeout_ms) ||
	    (dev->devt && nla_put_string(m, NXQUOTA_A_DEVICE_DEVT, devt)) ||
	    nla_put_u64(m, NXQUOTA_A_DEVICE_DEFAULT_MAX, default_max) ||
	    nla_put_u64(m, NXQUOTA_A_DEVICE_EVENTS_DROPPED,
			atomic64_read(&dev->events_dropped)) ||
	    nla_put_u32(m, NXQUOTA_A_DEVICE_WAITERS, waiters))
		return -EMSGSIZE;
	return 0;
}

static int ctl_device_dump(struct ctl_req *r)
{
	struct ctl_dump d = { 0 };
	struct nxq_device *dev;
	struct nl_msg *m;

	nxqd_client_reap();

	mutex_lock(&nxqd_ledger.lock);
	list_for_each_entry(dev, &nxqd_ledger.devices, link) {
		m = ctl_dump_add(&d, r, NXQUOTA_CMD_DEVICE_GET);
		if (m)
			d.err = ctl_put_device(m, dev);
		if (d.err)
			break;
	}
	mutex_unlock(&nxqd_ledger.lock);
	ctl_dump_end(&d, r);
	return 0;
}

/**
 * nxqd_parse_devt() - parse "MAJOR:MINOR" as kmod/sysfs.c's nxq_parse_devt()
 * @s: the text
 * @devt: set on success (the C library's encoding, as st_rdev); never 0
 *
 * Return: 0 or -EINVAL.
 */
int nxqd_parse_devt(const char *s, dev_t *devt)
{
	unsigned int maj, min;
	char tail;

	if (sscanf(s, "%u:%u%c", &maj, &min, &tail) != 2)
		return -EINVAL;
	/* The kernel's limits: 12 bits of major, 20 of minor. */
	if (maj >= (1U << 12) || min >= (1U << 20) || (!maj && !min))
		return -EINVAL;
	*devt = makedev(maj, min);
	return 0;
}

static int ctl_device_add(struct ctl_req *r)
{
	struct nlattr *key = r->tb[NXQUOTA_A_DEVICE_KEY];
	struct nlattr *devt_attr = r->tb[NXQUOTA_A_DEVICE_DEVT];
	struct nxq_device *dev;
	dev_t devt = 0;

	if (ctl_missing(r, NXQUOTA_A_DEVICE_KEY) ||
	    ctl_missing(r, NXQUOTA_A_DEVICE_CAPACITY))
		return -EINVAL;
	if (!nxq_device_key_valid(nla_data(key))) {
		r->msg = "a key is 1-63 characters of [A-Za-z0-9._:-]";
		return -EINVAL;
	}
	if (devt_attr && nxqd_parse_devt(nla_data(devt_attr), &devt)) {
		r->msg = "a dev_t is MAJOR:MINOR, not 0:0";
		return -EINVAL;
	}
	dev = nxq_device_add(&nxqd_ledger, nla_data(key),
			     nla_get_u64(r->tb[NXQUOTA_A_DEVICE_CAPACITY]),
			     devt);
	if (IS_ERR(dev)) {
		if (PTR_ERR(dev) == -EEXIST)
			r->msg = "device already registered";
		return PTR_ERR(dev);
	}
	return 0;
}

static int ctl_device_del(struct ctl_req *r)
{
	int err;

	if (ctl_missing(r, NXQUOTA_A_DEVICE_KEY))
		return -EINVAL;
	err = nxq_device_remove(&nxqd_ledger,
				nla_data(r->tb[NXQUOTA_A_DEVICE_KEY]));
	if (err == -ENOENT) {
		r->msg = "no such device";
		return -ENODEV;
	}
	if (err == -EBUSY)
		r->msg = "holders are registered on the device";
	return err;
}

static int ctl_device_set(struct ctl_req *r)
{
	struct nlattr **a = r->tb;
	struct nxq_device *dev;
	int err = 0;

	if (ctl_missing(r, NXQUOTA_A_DEVICE_KEY))
		return -EINVAL;
	if (!a[NXQUOTA_A_DEVICE_CAPACITY] && !a[NXQUOTA_A_DEVICE_DEFAULT_MAX] &&
	    !a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS]) {
		r->msg = "nothing to set: give capacity, default-max or ticket-timeout-ms";
		return -EINVAL;
	}
	if (a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS]) {
		u32 ms = nla_get_u32(a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS]);

		if (!ms || ms > 3600 * 1000) {
			r->msg = "1 to 3600000 ms";
			return -EINVAL;
		}
	}
	mutex_lock(&nxqd_ledger.lock);
	dev = nxq_device_find(&nxqd_ledger,
			      nla_data(a[NXQUOTA_A_DEVICE_KEY]));
	if (dev) {
		if (a[NXQUOTA_A_DEVICE_CAPACITY])
			nxq_device_set_capacity(dev,
				nla_get_u64(a[NXQUOTA_A_DEVICE_CAPACITY]));
		if (a[NXQUOTA_A_DEVICE_DEFAULT_MAX])
			nxq_device_set_default_max(dev,
				nla_get_u64(a[NXQUOTA_A_DEVICE_DEFAULT_MAX]));
		if (a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS])
			nxq_device_set_ticket_timeout(dev,
				nla_get_u32(a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS]));
	} else {
		err = -ENODEV;
	}
	mutex_unlock(&nxqd_ledger.lock);
	if (err)
		r->msg = "no such device";
	return err;
}

/* ---- budget nodes --------------------------------------------------------- */

static int ctl_put_budget(struct nl_msg *m, struct nxq_node *node)
{
	u64 tickets, asked, released, kills;
	u32 lim[NXQ_NR_LIMITS];
	struct nxq_budget b;
	const char *path;
	bool kill;
	int i;

	lockdep_assert_held(&nxqd_ledger.lock);
	nxq_node_budget(node, &b);
	spin_lock(&node->dev->lock);
	tickets = node->tickets;
	asked = node->bytes_asked;
	released = node->bytes_released;
	kills = node->kills;
	kill = node->kill_on_ignore;
	for (i = 0; i < NXQ_NR_LIMITS; i++)
		lim[i] = nxq_node_limit(node, i);
	spin_unlock(&node->dev->lock);
	path = nxqd_cgroup_key_path(node->key);

	if (nla_put_string(m, NXQUOTA_A_BUDGET_DEVICE, node->dev->key) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_CGROUP_ID, node->id) ||
	    (path && nla_put_string(m, NXQUOTA_A_BUDGET_CGROUP_PATH, path)) ||
	    (node->parent &&
	     nla_put_u64(m, NXQUOTA_A_BUDGET_PARENT_ID, node->parent->id)) ||
	    (b.max_set && nla_put_u64(m, NXQUOTA_A_BUDGET_MAX, b.max)) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_EFFECTIVE_MAX, b.effective_max) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_MIN, b.min) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_CLAIMED, b.claimed) ||
	    nla_put_u8(m, NXQUOTA_A_BUDGET_OVERCOMMITTED, b.overcommitted) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_EFFECTIVE_MIN, b.effective_min) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_CURRENT, b.current_bytes) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_BORROWED, b.borrowed) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_HEADROOM, b.headroom) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_MAX_HITS, b.max_hits) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_DENIALS, b.denials) ||
	    nla_put_u32(m, NXQUOTA_A_BUDGET_HOLDERS, node->nr_holders) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_TICKETS, tickets) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_BYTES_ASKED, asked) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_BYTES_RELEASED, released) ||
	    nla_put_u64(m, NXQUOTA_A_BUDGET_KILLS, kills) ||
	    nla_put_u8(m, NXQUOTA_A_BUDGET_KILL_ON_IGNORE, kill) ||
	    nla_put_u32(m, NXQUOTA_A_BUDGET_HOLDERS_MAX, lim[NXQ_LIM_HOLDERS]) ||
	    nla_put_u32(m, NXQUOTA_A_BUDGET_WAITERS_MAX, lim[NXQ_LIM_WAITERS]) ||
	    nla_put_u32(m, NXQUOTA_A_BUDGET_PRIORITY_MAX,
			lim[NXQ_LIM_PRIORITY]) ||
	    nla_put_u32(m, NXQUOTA_A_BUDGET_WAIT_MAX_MS, lim[NXQ_LIM_WAIT_MS]))
		return -EMSGSIZE;
	return 0;
}

/* The dumps' device filter, as nxq_nl_dump_start(): -ENODEV if unknown. */
static int ctl_filter(struct ctl_req *r, int attr, const char **key)
{
	*key = NULL;
	if (!r->tb[attr])
		return 0;
	*key = nla_data(r->tb[attr]);
	if (nxq_device_find(&nxqd_ledger, *key))
		return 0;
	r->msg = "no such device";
	return -ENODEV;
}

static int ctl_budget_dump(struct ctl_req *r)
{
	struct ctl_dump d = { 0 };
	struct nxq_device *dev;
	struct nxq_node *node;
	unsigned long id;
	struct nl_msg *m;
	const char *key;
	int err;

	nxqd_client_reap();

	mutex_lock(&nxqd_ledger.lock);
	err = ctl_filter(r, NXQUOTA_A_BUDGET_DEVICE, &key);
	if (err) {
		mutex_unlock(&nxqd_ledger.lock);
		return err;
	}
	list_for_each_entry(dev, &nxqd_ledger.devices, link) {
		if (key && strcmp(key, dev->key))
			continue;
		/* a budget whose cgroup was removed goes with it */
		nxq_device_prune(dev);
		xa_for_each(&dev->nodes, id, node) {
			m = ctl_dump_add(&d, r, NXQUOTA_CMD_BUDGET_GET);
			if (m)
				d.err = ctl_put_budget(m, node);
			if (d.err)
				break;
		}
		if (d.err)
			break;
	}
	mutex_unlock(&nxqd_ledger.lock);
	ctl_dump_end(&d, r);
	return 0;
}

static const unsigned int ctl_limit_attr[NXQ_NR_LIMITS] = {
	[NXQ_LIM_HOLDERS]	= NXQUOTA_A_BUDGET_HOLDERS_MAX,
	[NXQ_LIM_WAITERS]	= NXQUOTA_A_BUDGET_WAITERS_MAX,
	[NXQ_LIM_PRIORITY]	= NXQUOTA_A_BUDGET_PRIORITY_MAX,
	[NXQ_LIM_WAIT_MS]	= NXQUOTA_A_BUDGET_WAIT_MAX_MS,
};

/**
 * nxqd_limit_valid() - kmod/sysfs.c's nxq_limit_valid()
 * @which: enum nxq_limit
 * @v: the value
 *
 * Return: true if root may set it.
 */
bool nxqd_limit_valid(enum nxq_limit which, u32 v)
{
	switch (which) {
	case NXQ_LIM_PRIORITY:
		return v <= NXQ_PRIORITY_MAX;
	case NXQ_LIM_WAIT_MS:
		return v <= 3600 * 1000;
	default:
		return v != NXQ_LIMIT_UNSET;
	}
}

static int ctl_budget(struct ctl_req *r, const struct nxq_budget_req *b)
{
	struct nlattr *path = r->tb[NXQUOTA_A_BUDGET_CGROUP_PATH];
	int err;

	if (ctl_missing(r, NXQUOTA_A_BUDGET_DEVICE) ||
	    ctl_missing(r, NXQUOTA_A_BUDGET_CGROUP_PATH))
		return -EINVAL;
	if (*(char *)nla_data(path) != '/') {
		r->msg = "a cgroup path starts with /";
		return -EINVAL;
	}
	err = nxqd_budget_set(nla_data(r->tb[NXQUOTA_A_BUDGET_DEVICE]),
			      nla_data(path), b, r->msg_buf, sizeof(r->msg_buf));
	if (r->msg_buf[0])
		r->msg = r->msg_buf;
	else if (err == -ENOENT)
		r->msg = "no such cgroup";
	else if (err == -ENODEV)
		r->msg = "no such device";
	return err;
}

static int ctl_budget_set(struct ctl_req *r)
{
	struct nxq_budget_req b = { 0 };
	struct nlattr **a = r->tb;
	int i;

	if (a[NXQUOTA_A_BUDGET_MAX]) {
		b.set_max = true;
		b.max = nla_get_u64(a[NXQUOTA_A_BUDGET_MAX]);
	}
	if (a[NXQUOTA_A_BUDGET_MIN]) {
		b.set_min = true;
		b.min = nla_get_u64(a[NXQUOTA_A_BUDGET_MIN]);
	}
	b.overcommit = a[NXQUOTA_A_BUDGET_OVERCOMMIT] != NULL;
	if (a[NXQUOTA_A_BUDGET_KILL_ON_IGNORE]) {
		b.set_kill = true;
		b.kill_on_ignore = nla_get_u8(a[NXQUOTA_A_BUDGET_KILL_ON_IGNORE]);
	}
	for (i = 0; i < NXQ_NR_LIMITS; i++) {
		struct nlattr *la = a[ctl_limit_attr[i]];

		if (!la)
			continue;
		b.lim[i] = nla_get_u32(la);
		if (!nxqd_limit_valid(i, b.lim[i])) {
			r->msg = "out of range";
			return -EINVAL;
		}
		b.set_lim |= BIT(i);
	}
	if (!b.set_max && !b.set_min && !b.set_kill && !b.set_lim) {
		r->msg = "nothing to set: give max, min, kill-on-ignore or a limit";
		return -EINVAL;
	}
	return ctl_budget(r, &b);
}

static int ctl_budget_clear(struct ctl_req *r)
{
	return ctl_budget(r, NULL);
}

/* ---- holders --------------------------------------------------------------- */

static int ctl_put_holder(struct nl_msg *m, struct nxq_holder *h)
{
	struct nxq_ticket_state *t = &h->ticket;

	lockdep_assert_held(&h->node->dev->lock);
	if (nla_put_string(m, NXQUOTA_A_HOLDER_DEVICE, h->node->dev->key) ||
	    nla_put_u64(m, NXQUOTA_A_HOLDER_CGROUP_ID, h->node->id) ||
	    nla_put_u32(m, NXQUOTA_A_HOLDER_PID, h->tgid) ||
	    nla_put_u32(m, NXQUOTA_A_HOLDER_PRIORITY, h->priority) ||
	    nla_put_u64(m, NXQUOTA_A_HOLDER_CHARGE, h->charge) ||
	    nla_put_u64(m, NXQUOTA_A_HOLDER_RECLAIMABLE, h->reclaimable) ||
	    nla_put_u8(m, NXQUOTA_A_HOLDER_TICKET_OPEN, t->open) ||
	    nla_put_u64(m, NXQUOTA_A_HOLDER_TICKET_GENERATION, t->generation) ||
	    (t->open &&
	     (nla_put_u64(m, NXQUOTA_A_HOLDER_TICKET_BYTES, t->bytes) ||
	      nla_put_u32(m, NXQUOTA_A_HOLDER_TICKET_REASON, t->reason) ||
	      nla_put_u32(m, NXQUOTA_A_HOLDER_TICKET_LEVEL, t->level) ||
	      nla_put_u64(m, NXQUOTA_A_HOLDER_TICKET_DEADLINE_NS,
			  t->deadline_ns))))
		return -EMSGSIZE;
	return 0;
}

static int ctl_holder_dump(struct ctl_req *r)
{
	struct ctl_dump d = { 0 };
	struct nxq_device *dev;
	struct nxq_holder *h;
	struct nl_msg *m;
	const char *key;
	int err;

	nxqd_client_reap();

	mutex_lock(&nxqd_ledger.lock);
	err = ctl_filter(r, NXQUOTA_A_HOLDER_DEVICE, &key);
	if (err) {
		mutex_unlock(&nxqd_ledger.lock);
		return err;
	}
	list_for_each_entry(dev, &nxqd_ledger.devices, link) {
		if (key && strcmp(key, dev->key))
			continue;
		spin_lock(&dev->lock);
		list_for_each_entry(h, &dev->holders, link) {
			m = ctl_dump_add(&d, r, NXQUOTA_CMD_HOLDER_GET);
			if (m)
				d.err = ctl_put_holder(m, h);
			if (d.err)
				break;
		}
		spin_unlock(&dev->lock);
		if (d.err)
			break;
	}
	mutex_unlock(&nxqd_ledger.lock);
	ctl_dump_end(&d, r);
	return 0;
}

/* ---- events ---------------------------------------------------------------- */

/*
 * The ack goes out before the first event: both under ctl_lock, which
 * nxqd_ctl_event() holds while sending.
 */
static int ctl_subscribe(struct ctl_req *r)
{
	pthread_mutex_lock(&ctl_lock);
	ctl_ack(r, 0);
	r->acked = true;
	if (!r->c->subscribed) {
		r->c->subscribed = true;
		ctl_nsubs++;
	}
	pthread_mutex_unlock(&ctl_lock);
	return 0;
}

static u32 ctl_event_type(enum nxq_event_type type)
{
	switch (type) {
	case NXQ_EV_DEVICE_ADDED:
		return NXQUOTA_EVENT_TYPE_DEVICE_ADDED;
	case NXQ_EV_DEVICE_REMOVED:
		return NXQUOTA_EVENT_TYPE_DEVICE_REMOVED;
	case NXQ_EV_BUDGET_CHANGED:
		return NXQUOTA_EVENT_TYPE_BUDGET_CHANGED;
	case NXQ_EV_DENIED:
		return NXQUOTA_EVENT_TYPE_DENIED;
	case NXQ_EV_TICKET_ISSUED:
		return NXQUOTA_EVENT_TYPE_TICKET_ISSUED;
	case NXQ_EV_TICKET_ANSWERED:
		return NXQUOTA_EVENT_TYPE_TICKET_ANSWERED;
	case NXQ_EV_KILLED:
		return NXQUOTA_EVENT_TYPE_KILLED;
	case NXQ_EV_HOLDER_ADDED:
	case NXQ_EV_HOLDER_REMOVED:
		return 0;	/* not multicast by the module either */
	}
	return 0;
}

/**
 * nxqd_ctl_event() - send a ledger event to every subscriber
 * @ev: the event
 *
 * The ledger's event hook: called on the compat layer's worker thread, in
 * the order events happened, with no ledger lock held.  Never blocks on a
 * subscriber: an event that a full socket refuses is lost to it and
 * counted once in the device's events_dropped, as is one that cannot be
 * allocated.
 */
void nxqd_ctl_event(const struct nxq_event *ev)
{
	bool dropped = false;
	struct ctl_conn *c;
	struct nl_msg *m;
	u32 type;

	type = ctl_event_type(ev->type);
	if (!type)
		return;
	pthread_mutex_lock(&ctl_lock);
	if (!ctl_nsubs) {
		pthread_mutex_unlock(&ctl_lock);
		return;
	}
	m = nlmsg_alloc_size(1024);
	if (!m || !ctl_genl_put(m, 0, 0, 0, NXQUOTA_CMD_EVENT) ||
	    nla_put_u32(m, NXQUOTA_A_EVENT_TYPE, type) ||
	    (ev->device && nla_put_string(m, NXQUOTA_A_EVENT_DEVICE,
					  ev->device)) ||
	    (ev->cgroup_id &&
	     nla_put_u64(m, NXQUOTA_A_EVENT_CGROUP_ID, ev->cgroup_id)) ||
	    (ev->tgid && nla_put_u32(m, NXQUOTA_A_EVENT_PID, ev->tgid)) ||
	    nla_put_u64(m, NXQUOTA_A_EVENT_BYTES, ev->bytes) ||
	    nla_put_u64(m, NXQUOTA_A_EVENT_VALUE, ev->value) ||
	    nla_put_u32(m, NXQUOTA_A_EVENT_REASON, ev->reason) ||
	    nla_put_u64(m, NXQUOTA_A_EVENT_TIMESTAMP_NS, ev->ts_ns)) {
		dropped = true;
	} else {
		for (c = ctl_conns; c; c = c->next)
			if (c->subscribed &&
			    ctl_send(c->fd, m, MSG_DONTWAIT) == -EAGAIN)
				dropped = true;
	}
	pthread_mutex_unlock(&ctl_lock);
	if (m)
		nlmsg_free(m);
	if (dropped && ev->dropped)
		atomic64_inc(ev->dropped);
}

/* ---- dispatch --------------------------------------------------------------- */

struct ctl_op {
	u8 cmd;
	int (*doit)(struct ctl_req *r);
	int (*dumpit)(struct ctl_req *r);
	const struct ctl_pol *pol;
	int maxattr;
	bool change;		/* persisted on success */
};

static const struct ctl_op ctl_ops[] = {
	{ NXQUOTA_CMD_DEVICE_GET, NULL, ctl_device_dump, NULL, 0, false },
	{ NXQUOTA_CMD_DEVICE_ADD, ctl_device_add, NULL, device_add_policy,
	  NXQUOTA_A_DEVICE_DEVT, true },
	{ NXQUOTA_CMD_DEVICE_DEL, ctl_device_del, NULL, device_policy,
	  NXQUOTA_A_DEVICE_KEY, true },
	{ NXQUOTA_CMD_DEVICE_SET, ctl_device_set, NULL, device_policy,
	  NXQUOTA_A_DEVICE_DEFAULT_MAX, true },
	{ NXQUOTA_CMD_BUDGET_GET, NULL, ctl_budget_dump, budget_get_policy,
	  NXQUOTA_A_BUDGET_DEVICE, false },
	{ NXQUOTA_CMD_BUDGET_SET, ctl_budget_set, NULL, budget_set_policy,
	  NXQUOTA_A_BUDGET_OVERCOMMIT, true },
	{ NXQUOTA_CMD_BUDGET_CLEAR, ctl_budget_clear, NULL, budget_set_policy,
	  NXQUOTA_A_BUDGET_CGROUP_PATH, true },
	{ NXQUOTA_CMD_HOLDER_GET, NULL, ctl_holder_dump, holder_get_policy,
	  NXQUOTA_A_HOLDER_DEVICE, false },
	/* The daemon's own: what joining the "events" group is. */
	{ NXQUOTA_CMD_EVENT, ctl_subscribe, NULL, NULL, 0, false },
};

/* One message of @len bytes from @c. */
static void ctl_handle(struct ctl_conn *c, void *buf, size_t len)
{
	struct ctl_req r = { .c = c, .nlh = buf };
	const struct ctl_op *op = NULL;
	int err, flags;
	size_t i;

	/* netlink_rcv_skb(): what is not a request is not answered. */
	if (len < NLMSG_HDRLEN || r.nlh->nlmsg_len < NLMSG_HDRLEN ||
	    r.nlh->nlmsg_len > len)
		return;
	if (!(r.nlh->nlmsg_flags & NLM_F_REQUEST) ||
	    r.nlh->nlmsg_type < NLMSG_MIN_TYPE)
		return;
	if (NLMSG_ALIGN(r.nlh->nlmsg_len) < len) {
		r.msg = "one netlink message per packet";
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
		r.msg = "genlmsghdr.reserved field is not 0";
		goto ack;
	}
	flags = r.nlh->nlmsg_flags;
	if ((flags & NLM_F_DUMP) == NLM_F_DUMP)
		flags &= ~NLM_F_DUMP;
	if (flags & ~(NLM_F_REQUEST | NLM_F_ACK | NLM_F_ECHO)) {
		r.msg = "ambiguous or reserved bits set in nlmsg_flags";
		goto ack;
	}
	for (i = 0; i < ARRAY_SIZE(ctl_ops); i++)
		if (ctl_ops[i].cmd == r.gh->cmd)
			op = &ctl_ops[i];
	err = -EOPNOTSUPP;
	if (!op)
		goto ack;
	if ((r.nlh->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP) {
		if (!op->dumpit)
			goto ack;
	} else if (!op->doit) {
		goto ack;
	}
	/* no policy: genl's reject-all policy, no attribute at all */
	err = ctl_validate(&r, op->pol, op->maxattr);
	if (err)
		goto ack;
	if ((r.nlh->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP) {
		err = op->dumpit(&r);
	} else {
		err = op->doit(&r);
		if (!err && op->change)
			nxqd_state_save();
	}
ack:
	if (!r.acked)
		ctl_ack(&r, err);
}

static void ctl_conn_end(struct ctl_conn *c)
{
	struct ctl_conn **p;

	pthread_mutex_lock(&ctl_lock);
	for (p = &ctl_conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	if (c->subscribed)
		ctl_nsubs--;
	ctl_nconns--;
	close(c->fd);
	pthread_cond_broadcast(&ctl_gone);
	pthread_mutex_unlock(&ctl_lock);
	free(c);
}

static void *ctl_conn_main(void *p)
{
	struct ctl_conn *c = p;
	void *buf = malloc(CTL_MSG_MAX);
	ssize_t n;

	while (buf) {
		n = recv(c->fd, buf, CTL_MSG_MAX, MSG_TRUNC);
		if (n <= 0)
			break;
		if (n > CTL_MSG_MAX) {
			/* As a netlink socket: too big for the buffer. */
			struct ctl_req r = { .c = c, .nlh = buf,
					     .msg = "message too long" };

			ctl_ack(&r, -EMSGSIZE);
			continue;
		}
		ctl_handle(c, buf, (size_t)n);
	}
	free(buf);
	ctl_conn_end(c);
	return NULL;
}

static void *ctl_listen_main(void *p)
{
	(void)p;
	for (;;) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct ctl_conn *c;
		pthread_t tid;
		int fd;

		fd = accept4(ctl_lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			pthread_mutex_lock(&ctl_lock);
			if (ctl_stopping) {
				pthread_mutex_unlock(&ctl_lock);
				return NULL;
			}
			pthread_mutex_unlock(&ctl_lock);
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				usleep(10000);
			continue;
		}
		/* Root only: the kernel says who connected. */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
		    cred.uid != 0) {
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		pthread_mutex_lock(&ctl_lock);
		if (ctl_stopping || ctl_nconns >= NXQD_CTL_CONNS) {
			pthread_mutex_unlock(&ctl_lock);
			close(fd);
			free(c);
			continue;
		}
		c->next = ctl_conns;
		ctl_conns = c;
		ctl_nconns++;
		pthread_mutex_unlock(&ctl_lock);
		if (pthread_create(&tid, NULL, ctl_conn_main, c)) {
			ctl_conn_end(c);
			continue;
		}
		pthread_detach(tid);
	}
}

/**
 * nxqd_listen_fds() - a socket passed by systemd (sd_listen_fds(3) rules)
 * @name: its FileDescriptorName= ("client", "control")
 *
 * Only if LISTEN_PID is this process: the descriptors from 3 on,
 * LISTEN_FDS of them, named by LISTEN_FDNAMES (colon-separated).  The
 * descriptor found is made close-on-exec.  The environment is left as it
 * is, so that each socket can be looked up.
 *
 * Return: the descriptor, or -1 if none by that name was passed.
 */
int nxqd_listen_fds(const char *name)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	const char *names = getenv("LISTEN_FDNAMES"), *p;
	size_t nlen = strlen(name);
	long n, i;
	char *end;

	if (!pid || !fds || !names)
		return -1;
	if (strtol(pid, &end, 10) != getpid() || *end)
		return -1;
	n = strtol(fds, &end, 10);
	if (*end || n <= 0 || n > 64)
		return -1;
	for (i = 0, p = names; i < n && p; i++) {
		if (!strncmp(p, name, nlen) && (p[nlen] == ':' || !p[nlen])) {
			int fd = 3 + (int)i, type = 0;
			socklen_t len = sizeof(type);

			if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) ||
			    type != SOCK_SEQPACKET)
				return -1;
			fcntl(fd, F_SETFD, FD_CLOEXEC);
			return fd;
		}
		p = strchr(p, ':');
		if (p)
			p++;
	}
	return -1;
}

static int ctl_bind(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, probe, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (errno != EADDRINUSE)
			goto fail;
		/* Left by a daemon that died, or a live one? */
		probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (probe >= 0 &&
		    !connect(probe, (struct sockaddr *)&sa, sizeof(sa))) {
			close(probe);
			close(fd);
			return -EADDRINUSE;
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			goto fail;
	}
	/* Root only; nobody can connect before listen(), so no window. */
	if (chmod(path, 0600) || listen(fd, 16)) {
		err = -errno;
		unlink(path);
		close(fd);
		return err;
	}
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

/**
 * nxqd_ctl_start() - open the control socket and start serving it
 * @path: where to bind it, unless systemd passed one named "control"
 *
 * Return: 0, or a negative errno (-EADDRINUSE: a daemon answers there).
 */
int nxqd_ctl_start(const char *path)
{
	int fd = nxqd_listen_fds("control");

	if (fd < 0) {
		fd = ctl_bind(path);
		if (fd < 0)
			return fd;
		ctl_path = strdup(path);
	}
	ctl_lfd = fd;
	if (pthread_create(&ctl_listener, NULL, ctl_listen_main, NULL)) {
		close(fd);
		ctl_lfd = -1;
		if (ctl_path)
			unlink(ctl_path);
		free(ctl_path);
		ctl_path = NULL;
		return -EAGAIN;
	}
	return 0;
}

/**
 * nxqd_ctl_stop() - stop serving: no new connection, every connection
 * closed and its thread gone when this returns; the socket file removed
 * if nxqd_ctl_start() bound it
 */
void nxqd_ctl_stop(void)
{
	struct ctl_conn *c;

	if (ctl_lfd < 0)
		return;
	pthread_mutex_lock(&ctl_lock);
	ctl_stopping = true;
	pthread_mutex_unlock(&ctl_lock);
	shutdown(ctl_lfd, SHUT_RDWR);	/* ends the listener's accept() */
	pthread_join(ctl_listener, NULL);
	close(ctl_lfd);
	ctl_lfd = -1;
	pthread_mutex_lock(&ctl_lock);
	for (c = ctl_conns; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	while (ctl_nconns)
		pthread_cond_wait(&ctl_gone, &ctl_lock);
	pthread_mutex_unlock(&ctl_lock);
	if (ctl_path)
		unlink(ctl_path);
	free(ctl_path);
	ctl_path = NULL;
}
