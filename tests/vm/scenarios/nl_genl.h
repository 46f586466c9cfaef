/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nl_genl.h - raw generic netlink for the nl_* scenarios (static, no
 * libnl): resolve the "nxquota" family, build requests byte by byte
 * (including malformed ones), run a do or a dump, read the extended ack.
 *
 * Include after scen.h.  Every helper returns >= 0 or a negative errno.
 */
#ifndef NXQ_TESTS_VM_NL_GENL_H
#define NXQ_TESTS_VM_NL_GENL_H

#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/genetlink.h>

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif

#define NL_MAXATTR	32

struct nl_msg {
	union {
		struct nlmsghdr nlh;
		char buf[16384];
	};
};

/* The last error's extended-ack message, "" if none. */
static char nl_errmsg[256];
static uint16_t nl_family_id;
static uint32_t nl_events_grp;

static int nl_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 10 };
	int fd, one = 1;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

static void nl_init(struct nl_msg *m, uint16_t type, uint16_t flags,
		    uint8_t cmd)
{
	struct genlmsghdr *g;

	memset(m, 0, sizeof(m->nlh) + GENL_HDRLEN);
	m->nlh.nlmsg_len = NLMSG_HDRLEN + GENL_HDRLEN;
	m->nlh.nlmsg_type = type;
	m->nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	m->nlh.nlmsg_seq = (uint32_t)sc_now_us();
	g = (struct genlmsghdr *)NLMSG_DATA(&m->nlh);
	g->cmd = cmd;
	g->version = 1;
}

/* Append an attribute of any type and length (for malformed tests too). */
static void nl_put(struct nl_msg *m, uint16_t type, const void *data,
		   size_t len)
{
	struct nlattr *a = (struct nlattr *)(m->buf + NLMSG_ALIGN(m->nlh.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	m->nlh.nlmsg_len = NLMSG_ALIGN(m->nlh.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static void nl_put_str(struct nl_msg *m, uint16_t type, const char *s)
{
	nl_put(m, type, s, strlen(s) + 1);
}

static SC_UNUSED void nl_put_u64(struct nl_msg *m, uint16_t type,
			     uint64_t v)
{
	nl_put(m, type, &v, sizeof(v));
}

static int nl_send(int fd, struct nl_msg *m)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	if (sendto(fd, m->buf, m->nlh.nlmsg_len, 0, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0)
		return -errno;
	return 0;
}

/* Copy the extended-ack message of an NLMSG_ERROR, if any. */
static void nl_read_extack(struct nlmsghdr *h)
{
	struct nlmsgerr *e = NLMSG_DATA(h);
	struct nlattr *a;
	size_t off, len;

	nl_errmsg[0] = 0;
	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	off = NLMSG_HDRLEN + sizeof(*e);
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	for (; off + NLA_HDRLEN <= h->nlmsg_len; off += NLA_ALIGN(a->nla_len)) {
		a = (struct nlattr *)((char *)h + off);
		if (a->nla_len < NLA_HDRLEN)
			break;
		if (a->nla_type == NLMSGERR_ATTR_MSG) {
			len = a->nla_len - NLA_HDRLEN;
			if (len >= sizeof(nl_errmsg))
				len = sizeof(nl_errmsg) - 1;
			memcpy(nl_errmsg, (char *)a + NLA_HDRLEN, len);
			nl_errmsg[len] = 0;
		}
	}
}

/* Index a message's attributes; tb[] gets NULL for absent ones. */
static void nl_parse(struct nlmsghdr *h, struct nlattr **tb)
{
	size_t off = NLMSG_HDRLEN + GENL_HDRLEN;
	struct nlattr *a;

	memset(tb, 0, sizeof(*tb) * (NL_MAXATTR + 1));
	for (; off + NLA_HDRLEN <= h->nlmsg_len; off += NLA_ALIGN(a->nla_len)) {
		a = (struct nlattr *)((char *)h + off);
		if (a->nla_len < NLA_HDRLEN)
			break;
		if ((a->nla_type & NLA_TYPE_MASK) <= NL_MAXATTR)
			tb[a->nla_type & NLA_TYPE_MASK] = a;
	}
}

static SC_UNUSED uint64_t nl_u64(struct nlattr *a)
{
	uint64_t v;

	memcpy(&v, (char *)a + NLA_HDRLEN, sizeof(v));
	return v;
}

static SC_UNUSED uint32_t nl_u32(struct nlattr *a)
{
	uint32_t v;

	memcpy(&v, (char *)a + NLA_HDRLEN, sizeof(v));
	return v;
}

static SC_UNUSED const char *nl_str(struct nlattr *a)
{
	return (const char *)a + NLA_HDRLEN;
}

typedef int (*nl_cb)(struct nlattr **tb, void *arg);

/* If set, nl_talk() calls it once, after the first part of a reply. */
static void (*nl_between_parts)(void);

/*
 * Send m and read replies until the ack (a do) or NLMSG_DONE (a dump),
 * calling cb for each data message.  Returns the number of data messages,
 * or the negative errno of the kernel's NLMSG_ERROR (message in
 * nl_errmsg).  *intr, if given, is set when a part was flagged
 * NLM_F_DUMP_INTR.
 */
static int nl_talk(int fd, struct nl_msg *m, nl_cb cb, void *arg, int *intr)
{
	static char buf[65536];
	struct nlattr *tb[NL_MAXATTR + 1];
	uint32_t seq = m->nlh.nlmsg_seq;
	int n = 0, rc;
	ssize_t len;

	nl_errmsg[0] = 0;
	if (intr)
		*intr = 0;
	rc = nl_send(fd, m);
	if (rc)
		return rc;
	for (;;) {
		struct nlmsghdr *h;

		len = recv(fd, buf, sizeof(buf), 0);
		if (len < 0)
			return -errno;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_flags & NLM_F_DUMP_INTR && intr)
				*intr = 1;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				nl_read_extack(h);
				return e->error ? e->error : n;
			}
			if (h->nlmsg_type == NLMSG_DONE) {
				int *err = NLMSG_DATA(h);

				if (h->nlmsg_len >= NLMSG_HDRLEN + sizeof(int) &&
				    *err)
					return *err;
				return n;
			}
			n++;
			if (cb) {
				nl_parse(h, tb);
				rc = cb(tb, arg);
				if (rc < 0)
					return rc;
			}
		}
		if (nl_between_parts) {
			nl_between_parts();
			nl_between_parts = NULL;
		}
	}
}

static int nl_ctrl_cb(struct nlattr **tb, void *arg)
{
	struct nlattr *g, *a;
	size_t off, goff;

	(void)arg;
	if (tb[CTRL_ATTR_FAMILY_ID])
		nl_family_id = *(uint16_t *)((char *)tb[CTRL_ATTR_FAMILY_ID] +
					     NLA_HDRLEN);
	g = tb[CTRL_ATTR_MCAST_GROUPS];
	if (!g)
		return 0;
	/* nested: one nest per group, each with NAME and ID */
	for (off = NLA_HDRLEN; off + NLA_HDRLEN <= g->nla_len;
	     off += NLA_ALIGN(((struct nlattr *)((char *)g + off))->nla_len)) {
		struct nlattr *grp = (struct nlattr *)((char *)g + off);
		const char *name = NULL;
		uint32_t id = 0;

		if (grp->nla_len < NLA_HDRLEN)
			break;
		for (goff = NLA_HDRLEN; goff + NLA_HDRLEN <= grp->nla_len;
		     goff += NLA_ALIGN(a->nla_len)) {
			a = (struct nlattr *)((char *)grp + goff);
			if (a->nla_len < NLA_HDRLEN)
				break;
			if (a->nla_type == CTRL_ATTR_MCAST_GRP_NAME)
				name = nl_str(a);
			if (a->nla_type == CTRL_ATTR_MCAST_GRP_ID)
				id = nl_u32(a);
		}
		if (name && !strcmp(name, NXQUOTA_MCGRP_EVENTS))
			nl_events_grp = id;
	}
	return 0;
}

/* Resolve the nxquota family (and its events group) on fd. */
static SC_UNUSED int nl_resolve(int fd)
{
	struct nl_msg m;
	int rc;

	nl_init(&m, GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY);
	nl_put_str(&m, CTRL_ATTR_FAMILY_NAME, NXQUOTA_FAMILY_NAME);
	nl_family_id = 0;
	rc = nl_talk(fd, &m, nl_ctrl_cb, NULL, NULL);
	if (rc < 0)
		return rc;
	return nl_family_id ? 0 : -ENOENT;
}

/* A device registered or unregistered through netlink (sc_cleanup()). */
#define nl_track_key	sc_track_key
#define nl_untrack_key	sc_untrack_key

/* A socket with the family resolved, or FAIL. */
#define NL_OPEN() ({							\
	int _fd = nl_open();						\
	if (_fd < 0)							\
		FAIL("netlink socket: %s", sc_errname(-_fd));		\
	CHECK_OK(nl_resolve(_fd));					\
	_fd;								\
})

/* One event from the "events" multicast group. */
struct nl_event {
	uint32_t type, pid, reason;
	uint64_t cgroup, bytes, value, ts;
	char device[NXQ_DEVICE_KEY_MAX];
};

static SC_UNUSED const char *nl_event_name(uint32_t t)
{
	switch (t) {
	case NXQUOTA_EVENT_TYPE_DEVICE_ADDED: return "device-added";
	case NXQUOTA_EVENT_TYPE_DEVICE_REMOVED: return "device-removed";
	case NXQUOTA_EVENT_TYPE_BUDGET_CHANGED: return "budget-changed";
	case NXQUOTA_EVENT_TYPE_DENIED: return "denied";
	case NXQUOTA_EVENT_TYPE_TICKET_ISSUED: return "ticket-issued";
	case NXQUOTA_EVENT_TYPE_TICKET_ANSWERED: return "ticket-answered";
	case NXQUOTA_EVENT_TYPE_KILLED: return "killed";
	}
	return "?";
}

/*
 * The next event on a listener within timeout_ms: 1, or 0 if none came.
 * FAILs on a malformed event or one whose timestamp goes back.
 */
static SC_UNUSED int nl_event_recv(int fd, struct nl_event *e,
				   int timeout_ms)
{
	static uint64_t last_ts;
	static char buf[8192];
	struct nlattr *tb[NL_MAXATTR + 1];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct nlmsghdr *h;
	ssize_t len;

	for (;;) {
		if (poll(&p, 1, timeout_ms) != 1)
			return 0;
		len = recv(fd, buf, sizeof(buf), 0);
		if (len < 0)
			FAIL("recv on the listener: %s", sc_errname(errno));
		h = (struct nlmsghdr *)buf;
		if (!NLMSG_OK(h, (size_t)len) || h->nlmsg_type != nl_family_id)
			continue;
		nl_parse(h, tb);
		break;
	}
	memset(e, 0, sizeof(*e));
	CHECK(((struct genlmsghdr *)NLMSG_DATA(h))->cmd == NXQUOTA_CMD_EVENT);
	CHECK(tb[NXQUOTA_A_EVENT_TYPE] && tb[NXQUOTA_A_EVENT_TIMESTAMP_NS]);
	e->type = nl_u32(tb[NXQUOTA_A_EVENT_TYPE]);
	e->ts = nl_u64(tb[NXQUOTA_A_EVENT_TIMESTAMP_NS]);
	if (tb[NXQUOTA_A_EVENT_DEVICE])
		snprintf(e->device, sizeof(e->device), "%s",
			 nl_str(tb[NXQUOTA_A_EVENT_DEVICE]));
	if (tb[NXQUOTA_A_EVENT_CGROUP_ID])
		e->cgroup = nl_u64(tb[NXQUOTA_A_EVENT_CGROUP_ID]);
	if (tb[NXQUOTA_A_EVENT_PID])
		e->pid = nl_u32(tb[NXQUOTA_A_EVENT_PID]);
	if (tb[NXQUOTA_A_EVENT_BYTES])
		e->bytes = nl_u64(tb[NXQUOTA_A_EVENT_BYTES]);
	if (tb[NXQUOTA_A_EVENT_VALUE])
		e->value = nl_u64(tb[NXQUOTA_A_EVENT_VALUE]);
	if (tb[NXQUOTA_A_EVENT_REASON])
		e->reason = nl_u32(tb[NXQUOTA_A_EVENT_REASON]);
	sc_log("event %s device %s cgroup %" PRIu64 " pid %u bytes %" PRIu64
	       " value %" PRIu64 " reason %u ts %" PRIu64, nl_event_name(e->type),
	       e->device, e->cgroup, e->pid, e->bytes, e->value, e->reason,
	       e->ts);
	if (e->ts < last_ts)
		FAIL("%s event's timestamp went back %" PRIu64 " ns",
		     nl_event_name(e->type), last_ts - e->ts);
	last_ts = e->ts;
	return 1;
}


#endif /* NXQ_TESTS_VM_NL_GENL_H */
