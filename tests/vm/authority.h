/* SPDX-License-Identifier: GPL-2.0 */
/*
 * authority.h - which ledger the scenarios talk to (included by scen.h).
 *
 * NXQ_AUTHORITY=module (the default): /dev/nxquota and
 * /sys/kernel/nxquota, as the scenarios were written.
 *
 * NXQ_AUTHORITY=daemon: nxquotad.  sc_open() connects to its client socket
 * (NXQUOTA_SOCKET, else NXQD_SOCKET_PATH) and sc_ioctl() sends the
 * <linux/nxquotad.h> request (struct nxqd_req + the argument struct; the
 * descriptors of NXQ_IOC_HOLDER_REGISTER by SCM_RIGHTS: the eventfd, then
 * the devfd) and returns the reply's err, copying its output back.  A
 * "file" is a connection; a waiting charge goes on a second connection of
 * that file (the daemon serves one request per connection at a time, and
 * a charge may wait for seconds), everything else on the first, where the
 * holders are registered, so closing the file ends them as close() does
 * on the module.
 *
 * The sysfs helpers (sc_write, sc_read, sc_exists on paths under SC_SYSFS)
 * are translated to the module's generic netlink family: register ->
 * DEVICE_ADD, unregister -> DEVICE_DEL, KEY/'s files of the device
 * table (capacity, default_max, ticket_timeout_ms: NXQ_DEVICE_FIELDS,
 * read as its parse column says, within its bounds) -> DEVICE_SET,
 * KEY/set_budget and the node files of
 * the budget table (max, min, kill_on_ignore: NXQ_BUDGET_FIELDS, read as
 * its parse column says) -> BUDGET_SET, clear_budget -> BUDGET_CLEAR,
 * every read -> a DEVICE_GET or BUDGET_GET dump rendered as the sysfs file
 * would be, abi_version -> NXQ_IOC_VERSION.  The errnos are the sysfs
 * files' (a missing device is ENOENT, as open(2) of its file would be).
 * In daemon mode the family is spoken on nxquotad's control socket
 * (NXQUOTA_CONTROL, else NXQD_CONTROL_PATH; one netlink message per
 * SOCK_SEQPACKET message).  NXQ_ADMIN=genl with the module sends the same
 * requests to the kernel over real netlink: the translation proven on the
 * module before it is used on the daemon.
 *
 * Not translated: devices/KEY/waiters has no netlink attribute; a read of
 * it SKIPs the scenario with that reason (unless the header has
 * NXQUOTA_A_DEVICE_WAITERS: an enum member, so tests/vm/run.sh and
 * tests/daemon-scen.sh grep for it and pass -DSC_HAVE_DEVICE_WAITERS).  Scenarios about the module itself are listed
 * in sc_module_only[]: SKIP in daemon mode, and in NXQ_ADMIN=genl mode
 * they keep the real sysfs files they are about.
 *
 * SC_CGROOT is the cgroup2 mount the VM has; NXQ_CGROOT overrides it at
 * run time (the host's may be /sys/fs/cgroup/unified).
 */
#ifndef NXQ_TESTS_VM_AUTHORITY_H
#define NXQ_TESTS_VM_AUTHORITY_H

#include <sys/socket.h>
#include <stddef.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <linux/nxquotad.h>

/* ---- which authority ---------------------------------------------------- */

static int sc_auth_daemon = -1;		/* -1: not read yet */
static int sc_admin_genl_env = -1;
static int sc_native_sysfs;		/* a module-only scenario: real sysfs */

static SC_UNUSED int sc_daemon(void)
{
	const char *s;

	if (sc_auth_daemon < 0) {
		s = getenv("NXQ_AUTHORITY");
		sc_auth_daemon = s && !strcmp(s, "daemon");
	}
	return sc_auth_daemon;
}

/* Are the sysfs helpers translated to netlink requests? */
static SC_UNUSED int sc_admin_genl(void)
{
	const char *s;

	if (sc_daemon())
		return 1;
	if (sc_admin_genl_env < 0) {
		s = getenv("NXQ_ADMIN");
		sc_admin_genl_env = s && !strcmp(s, "genl");
	}
	return sc_admin_genl_env && !sc_native_sysfs;
}

/* The node files and sockets this authority is reached through. */
static SC_UNUSED const char *sc_client_path(void)
{
	const char *s = getenv("NXQUOTA_SOCKET");

	return s && *s ? s : NXQD_SOCKET_PATH;
}

static SC_UNUSED const char *sc_control_path(void)
{
	const char *s = getenv("NXQUOTA_CONTROL");

	return s && *s ? s : NXQD_CONTROL_PATH;
}

/* /dev/nxquota, or the daemon's client socket: what tenants are given. */
static SC_UNUSED const char *sc_devnode(void)
{
	return sc_daemon() ? sc_client_path() : SC_DEVNODE_PATH;
}

static SC_UNUSED const char *sc_cgroot(void)
{
	const char *s = getenv("NXQ_CGROOT");

	return s && *s ? s : SC_CGROOT;
}

/*
 * Scenarios about the module itself, not about the ledger's rules: what
 * each is about, printed as the reason it skips in daemon mode.
 */
static const struct {
	const char *name, *why;
} sc_module_only[] = {
	{ "abi", "checks the character device node /dev/nxquota" },
	{ "unload", "loads and unloads the module" },
	{ "sysfs_files", "lists the module's sysfs files" },
	{ "bad_sysfs", "malformed writes to the module's sysfs files" },
	{ "bad_ioctl", "the ioctl's pointer, direction and size checks" },
	{ "nonroot", "the modes of the module's sysfs files" },
	{ "atk_priv_sysfs", "the modes of the module's sysfs files" },
	{ "atk_kmem", "the module's memory charged to the tenant's memcg" },
	{ "atk_priv_nl", "the kernel's netlink scope per cgroup namespace" },
	{ "atk_netadmin", "the kernel's netlink capability checks" },
	{ "atk_root_nocap", "the module's sysfs capability checks" },
	{ "fuzz_abi", "fuzzes the ioctls and the kernel's netlink socket" },
	{ "race_budget", "races sysfs against the kernel's netlink" },
	{ "race_device", "races sysfs against the kernel's netlink" },
	{ "nl_budget", "the kernel's generic netlink socket" },
	{ "nl_dump", "the kernel's generic netlink socket" },
	{ "nl_events", "the kernel's generic netlink socket" },
	{ "nl_malformed", "the kernel's generic netlink socket" },
	{ "nl_perm", "the kernel's generic netlink socket" },
	{ "nl_press_events", "the kernel's generic netlink socket" },
	{ "nl_tool", "nxquotactl over the kernel's netlink" },
	{ "press_kill_paths", "rmmod while a charge waits" },
	{ "exit_owners", "the module's exit records (sysfs owners)" },
};

static SC_UNUSED const char *sc_module_only_why(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(sc_module_only) / sizeof(sc_module_only[0]);
	     i++)
		if (!strcmp(sc_module_only[i].name, name))
			return sc_module_only[i].why;
	return NULL;
}

/* ---- the daemon's client socket ---------------------------------------- */

/* Spare connections of a file (its first connection's fd), for waits. */
#define SC_D_FDS	1024
#define SC_D_SPARE	4
static int sc_d_spare[SC_D_FDS][SC_D_SPARE];	/* fd + 1, 0: none */

static SC_UNUSED int sc_d_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = sc_client_path();
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/*
 * Close a file as close(2) closes /dev/nxquota: when it returns, its
 * holders are gone.  The daemon ends them when it sees the connection's
 * end and then closes its side, so: shutdown, wait (10 s) for that EOF,
 * close.  0 or -errno.
 */
static SC_UNUSED int sc_d_close(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec ts;
	int64_t end, now;
	char buf[64];
	ssize_t n;

	if (shutdown(fd, SHUT_WR) < 0) {
		n = -errno;
		close(fd);
		return n == -ENOTCONN ? 0 : (int)n;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000 + 10000;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
		if (now >= end || poll(&p, 1, (int)(end - now)) <= 0)
			break;	/* the daemon kept it open: nothing to wait for */
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			break;
	}
	return close(fd) < 0 ? -errno : 0;
}

static SC_UNUSED void sc_d_close_spares(int fd)
{
	int i, s;

	if (fd < 0 || fd >= SC_D_FDS)
		return;
	for (i = 0; i < SC_D_SPARE; i++) {
		s = __atomic_exchange_n(&sc_d_spare[fd][i], 0, __ATOMIC_SEQ_CST);
		if (s)
			close(s - 1);
	}
}

/* A connection for a waiting charge on file fd: a spare or a new one. */
static int sc_d_get_spare(int fd)
{
	int i, s;

	if (fd >= 0 && fd < SC_D_FDS)
		for (i = 0; i < SC_D_SPARE; i++) {
			s = __atomic_exchange_n(&sc_d_spare[fd][i], 0,
						__ATOMIC_SEQ_CST);
			if (s)
				return s - 1;
		}
	return sc_d_connect();
}

static void sc_d_put_spare(int fd, int c)
{
	int i, zero;

	if (fd >= 0 && fd < SC_D_FDS)
		for (i = 0; i < SC_D_SPARE; i++) {
			zero = 0;
			if (__atomic_compare_exchange_n(&sc_d_spare[fd][i],
							&zero, c + 1, 0,
							__ATOMIC_SEQ_CST,
							__ATOMIC_SEQ_CST))
				return;
		}
	close(c);
}

/* Copy len bytes of our own memory that may not be mapped: 0 or -EFAULT. */
static int sc_d_peek(void *dst, const void *src, size_t len)
{
	struct iovec l = { dst, len }, r = { (void *)src, len };

	if (!len)
		return 0;
	if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)len)
		return -EFAULT;
	return 0;
}

static long sc_d_call_buf(int c, unsigned long cmd, void *arg,
			  const int *fds, int nfds, unsigned char *msg,
			  unsigned char *rep);

/* Send one request on connection c and read its reply. */
static long sc_d_call(int c, unsigned long cmd, void *arg, const int *fds,
		      int nfds)
{
	/* Heap, not TLS or stack: threads of 64K stacks call this. */
	struct {
		unsigned char msg[sizeof(struct nxqd_req) + NXQD_ARG_MAX + 1];
		unsigned char rep[sizeof(struct nxqd_rep) + NXQD_ARG_MAX];
	} *b = malloc(sizeof(*b));
	long rc;

	if (!b)
		return -ENOMEM;
	rc = sc_d_call_buf(c, cmd, arg, fds, nfds, b->msg, b->rep);
	free(b);
	return rc;
}

static long sc_d_call_buf(int c, unsigned long cmd, void *arg,
			  const int *fds, int nfds, unsigned char *msg,
			  unsigned char *rep)
{
	const size_t rep_size = sizeof(struct nxqd_rep) + NXQD_ARG_MAX;
	struct nxqd_req *req = (struct nxqd_req *)msg;
	struct nxqd_rep *r = (struct nxqd_rep *)rep;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * NXQD_FDS_MAX)];
	} cm;
	struct iovec iov;
	struct msghdr mh;
	uint32_t size;
	size_t alen;
	ssize_t n;

	if (sc_d_peek(&size, arg, sizeof(size)))
		return -EFAULT;
	alen = size > NXQD_ARG_MAX ? NXQD_ARG_MAX + 1 : size;
	if (alen < sizeof(size))
		alen = sizeof(size);
	req->cmd = (uint32_t)cmd;
	req->reserved = 0;
	if (sc_d_peek(msg + sizeof(*req), arg, alen))
		return -EFAULT;
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = msg;
	iov.iov_len = sizeof(*req) + alen;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds) {
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm.h.cmsg_level = SOL_SOCKET;
		cm.h.cmsg_type = SCM_RIGHTS;
		cm.h.cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(&cm.h), fds, sizeof(int) * nfds);
	}
	if (sendmsg(c, &mh, MSG_NOSIGNAL) < 0)
		return -errno;	/* a descriptor that is not open: EBADF */
	do
		n = recv(c, rep, rep_size, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;	/* the daemon went away */
	if ((size_t)n < sizeof(*r))
		return -EPROTO;
	n -= sizeof(*r);
	/*
	 * A refused charge's node path follows its struct (nxquotad.h): it
	 * goes where the struct sent said, as the module's copy_to_user().
	 */
	if (n > (ssize_t)size && _IOC_NR(cmd) == _IOC_NR(NXQ_IOC_CHARGE) &&
	    size >= NXQ_CHARGE_SIZE_VER1) {
		struct nxq_charge ch;
		size_t tail = (size_t)n - size;
		struct iovec l = { rep + sizeof(*r) + size, tail }, rr;

		memcpy(&ch, msg + sizeof(*req), sizeof(ch));
		if (!ch.path || tail > ch.path_size)
			return -EPROTO;
		rr.iov_base = (void *)(uintptr_t)ch.path;
		rr.iov_len = tail;
		if (process_vm_writev(getpid(), &l, 1, &rr, 1, 0) != (ssize_t)tail)
			return -EFAULT;
		n = size;
	}
	if (n > (ssize_t)size)
		return -EPROTO;
	if (n) {
		struct iovec l = { rep + sizeof(*r), (size_t)n };
		struct iovec rr = { arg, (size_t)n };

		if (process_vm_writev(getpid(), &l, 1, &rr, 1, 0) != n)
			return -EFAULT;
	}
	return r->err;
}

static SC_UNUSED long sc_d_ioctl(int fd, unsigned long cmd, void *arg)
{
	unsigned long nr = cmd & ~((unsigned long)_IOC_SIZEMASK << _IOC_SIZESHIFT);
	int fds[NXQD_FDS_MAX], nfds = 0, c;
	long rc;

	if (nr == (NXQ_IOC_HOLDER_REGISTER &
		   ~((unsigned long)_IOC_SIZEMASK << _IOC_SIZESHIFT))) {
		struct nxq_holder_reg reg;
		uint32_t size;

		memset(&reg, 0, sizeof(reg));
		if (sc_d_peek(&size, arg, sizeof(size)))
			return -EFAULT;
		if (sc_d_peek(&reg, arg, size < sizeof(reg) ? size : sizeof(reg)))
			return -EFAULT;
		if (size >= offsetof(struct nxq_holder_reg, eventfd) +
			    sizeof(reg.eventfd) && reg.eventfd >= 0)
			fds[nfds++] = reg.eventfd;
#ifdef NXQ_HOLDER_DEVFD
		if (size >= offsetof(struct nxq_holder_reg, devfd) +
			    sizeof(reg.devfd) &&
		    (reg.flags & NXQ_HOLDER_DEVFD))
			fds[nfds++] = reg.devfd;
#endif
	}
	if (nr == (NXQ_IOC_CHARGE &
		   ~((unsigned long)_IOC_SIZEMASK << _IOC_SIZESHIFT))) {
		struct nxq_charge ch;
		uint32_t size;

		memset(&ch, 0, sizeof(ch));
		if (sc_d_peek(&size, arg, sizeof(size)))
			return -EFAULT;
		if (sc_d_peek(&ch, arg, size < sizeof(ch) ? size : sizeof(ch)))
			return -EFAULT;
		if (ch.flags & NXQ_CHARGE_WAIT) {
			c = sc_d_get_spare(fd);
			if (c < 0)
				return c;
			rc = sc_d_call(c, cmd, arg, NULL, 0);
			if (rc == -ECONNRESET || rc == -EPIPE ||
			    rc == -EPROTO)
				close(c);
			else
				sc_d_put_spare(fd, c);
			return rc;
		}
	}
	return sc_d_call(fd, cmd, arg, fds, nfds);
}

/* ---- generic netlink to the module or the daemon's control socket ------ */

#define SC_NL_MAXATTR	32

struct sc_nlreq {
	union {
		struct nlmsghdr nlh;
		char buf[1024];
	};
};

static int sc_nl_fd = -1;
static pid_t sc_nl_pid;
static uint16_t sc_nl_family;
static int sc_nl_lock;

static void sc_nl_init(struct sc_nlreq *m, uint8_t cmd, int dump)
{
	struct genlmsghdr *g;

	memset(m, 0, sizeof(*m));
	m->nlh.nlmsg_len = NLMSG_HDRLEN + GENL_HDRLEN;
	m->nlh.nlmsg_type = sc_nl_family;
	m->nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (dump ? NLM_F_DUMP : 0);
	g = (struct genlmsghdr *)NLMSG_DATA(&m->nlh);
	g->cmd = cmd;
	g->version = NXQUOTA_FAMILY_VERSION;
}

static void sc_nl_put(struct sc_nlreq *m, uint16_t type, const void *data,
		      size_t len)
{
	struct nlattr *a = (struct nlattr *)(m->buf +
					     NLMSG_ALIGN(m->nlh.nlmsg_len));

	if (NLMSG_ALIGN(m->nlh.nlmsg_len) + NLA_HDRLEN + NLA_ALIGN(len) >
	    sizeof(m->buf))
		FAIL("netlink request too long");
	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	m->nlh.nlmsg_len = NLMSG_ALIGN(m->nlh.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static void sc_nl_put_str(struct sc_nlreq *m, uint16_t type, const char *s)
{
	sc_nl_put(m, type, s, strlen(s) + 1);
}

static void sc_nl_put_u64(struct sc_nlreq *m, uint16_t type, uint64_t v)
{
	sc_nl_put(m, type, &v, sizeof(v));
}

static void sc_nl_put_flag(struct sc_nlreq *m, uint16_t type)
{
	sc_nl_put(m, type, NULL, 0);
}

static void sc_nl_put_u32(struct sc_nlreq *m, uint16_t type, uint32_t v)
{
	sc_nl_put(m, type, &v, sizeof(v));
}

static void sc_nl_put_u8(struct sc_nlreq *m, uint16_t type, uint8_t v)
{
	sc_nl_put(m, type, &v, sizeof(v));
}

typedef int (*sc_nl_cb)(struct nlattr **tb, void *arg);

/* Send m on fd, read to the ack or NLMSG_DONE: data messages or -errno. */
static int sc_nl_talk_fd(int fd, struct sc_nlreq *m, sc_nl_cb cb, void *arg)
{
	static char buf[65536];	/* under sc_nl_lock (or before any thread) */
	struct nlattr *tb[SC_NL_MAXATTR + 1];
	static __thread uint32_t seq;
	int n = 0, rc;
	ssize_t len;

	m->nlh.nlmsg_seq = ++seq + (uint32_t)getpid() * 65536;
	if (send(fd, m->buf, m->nlh.nlmsg_len, MSG_NOSIGNAL) < 0)
		return -errno;
	for (;;) {
		struct nlmsghdr *h;

		len = recv(fd, buf, sizeof(buf), 0);
		if (len < 0 && errno == EINTR)
			continue;
		if (len < 0)
			return -errno;
		if (len == 0)
			return -ECONNRESET;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len)) {
			size_t off;
			struct nlattr *a;

			if (h->nlmsg_seq != m->nlh.nlmsg_seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error ? e->error : n;
			}
			if (h->nlmsg_type == NLMSG_DONE) {
				int *err = NLMSG_DATA(h);

				if (h->nlmsg_len >= NLMSG_HDRLEN + sizeof(int) &&
				    *err)
					return *err;
				return n;	/* a dump ends here, ack or not */
			}
			n++;
			if (!cb)
				continue;
			memset(tb, 0, sizeof(tb));
			for (off = NLMSG_HDRLEN + GENL_HDRLEN;
			     off + NLA_HDRLEN <= h->nlmsg_len;
			     off += NLA_ALIGN(a->nla_len)) {
				a = (struct nlattr *)((char *)h + off);
				if (a->nla_len < NLA_HDRLEN)
					break;
				if ((a->nla_type & NLA_TYPE_MASK) <=
				    SC_NL_MAXATTR)
					tb[a->nla_type & NLA_TYPE_MASK] = a;
			}
			rc = cb(tb, arg);
			if (rc < 0)
				return rc;
		}
	}
}

static int sc_nl_family_cb(struct nlattr **tb, void *arg)
{
	(void)arg;
	if (tb[CTRL_ATTR_FAMILY_ID])
		memcpy(&sc_nl_family, (char *)tb[CTRL_ATTR_FAMILY_ID] +
		       NLA_HDRLEN, sizeof(sc_nl_family));
	return 0;
}

/* The admin channel of this process (a child opens its own). */
static int sc_nl_open(void)
{
	struct timeval tv = { .tv_sec = 30 };
	int fd, rc;

	if (sc_nl_fd >= 0 && sc_nl_pid == getpid())
		return sc_nl_fd;
	if (sc_nl_fd >= 0)
		close(sc_nl_fd);	/* the parent's, inherited */
	sc_nl_fd = -1;
	if (sc_daemon()) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		const char *path = sc_control_path();

		if (strlen(path) >= sizeof(sa.sun_path))
			return -ENAMETOOLONG;
		strcpy(sa.sun_path, path);
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			rc = -errno;
			close(fd);
			return rc;
		}
		sc_nl_family = NXQD_GENL_ID;
	} else {
		struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
		struct sc_nlreq m;

		fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
			    NETLINK_GENERIC);
		if (fd < 0)
			return -errno;
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			rc = -errno;
			close(fd);
			return rc;
		}
		sc_nl_family = GENL_ID_CTRL;
		sc_nl_init(&m, CTRL_CMD_GETFAMILY, 0);
		sc_nl_put_str(&m, CTRL_ATTR_FAMILY_NAME, NXQUOTA_FAMILY_NAME);
		sc_nl_family = 0;
		rc = sc_nl_talk_fd(fd, &m, sc_nl_family_cb, NULL);
		if (rc >= 0 && !sc_nl_family)
			rc = -ENOENT;
		if (rc < 0) {
			close(fd);
			return rc;
		}
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	sc_nl_fd = fd;
	sc_nl_pid = getpid();
	return fd;
}

/* One request on this process's channel, serialized between threads. */
static int sc_nl_talk(struct sc_nlreq *m, sc_nl_cb cb, void *arg)
{
	int fd, rc;

	while (__atomic_exchange_n(&sc_nl_lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
	fd = sc_nl_open();
	if (fd < 0) {
		rc = fd;
	} else {
		m->nlh.nlmsg_type = sc_nl_family;
		rc = sc_nl_talk_fd(fd, m, cb, arg);
		if (rc == -ECONNRESET || rc == -EPIPE || rc == -EAGAIN) {
			close(sc_nl_fd);	/* desynchronized: start over */
			sc_nl_fd = -1;
		}
	}
	__atomic_store_n(&sc_nl_lock, 0, __ATOMIC_RELEASE);
	return rc;
}

static int sc_d_pid_cb(struct nlattr **tb, void *arg)
{
	uint32_t *want = arg, pid;

	if (!tb[NXQUOTA_A_HOLDER_PID])
		return 0;
	memcpy(&pid, (char *)tb[NXQUOTA_A_HOLDER_PID] + NLA_HDRLEN,
	       sizeof(pid));
	if (pid == want[0])
		want[1]++;
	return 0;
}

/*
 * A process of ours has been reaped: wait (5 s) until the daemon has
 * ended its holders, as the module has by the time wait(2) returns (the
 * exit closed its files).  The daemon learns of it from the connections'
 * ends and the pidfd, a moment later.  0, or -ETIMEDOUT / -errno.
 */
static SC_UNUSED int sc_d_wait_released(pid_t pid)
{
	struct timespec ts = { 0, 2000000 };
	uint32_t want[2];
	struct sc_nlreq m;
	int i, rc = 0;

	for (i = 0; i < 2500; i++) {
		want[0] = (uint32_t)pid;
		want[1] = 0;
		sc_nl_init(&m, NXQUOTA_CMD_HOLDER_GET, 1);
		rc = sc_nl_talk(&m, sc_d_pid_cb, want);
		if (rc < 0)
			return rc;
		if (!want[1])
			return 0;
		nanosleep(&ts, NULL);
	}
	return -ETIMEDOUT;
}

/* ---- sysfs text, as the module parses and prints it -------------------- */

/* kstrtou64(s, 10): digits, an optional '+' first and '\n' last. */
static int sc_kstrtou64(const char *s, uint64_t *v)
{
	uint64_t x = 0;
	const char *p = s;

	if (*p == '+')
		p++;
	if (!*p || *p == '\n')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '\n')
		p++;
	if (*p)
		return -EINVAL;
	*v = x;
	return 0;
}

static int sc_kstrtou32(const char *s, uint32_t *v)
{
	uint64_t x;
	int rc = sc_kstrtou64(s, &x);

	if (rc)
		return rc;
	if (x > UINT32_MAX)
		return -ERANGE;
	*v = (uint32_t)x;
	return 0;
}

/*
 * The module's nxq_parse_size(): bytes with K/M/G/T/P/E (also Ki..Ei),
 * or "max".
 */
static int sc_parse_size(const char *s, int allow_max, uint64_t *out)
{
	char buf[32];
	unsigned int shift = 0;
	size_t n = strlen(s);
	uint64_t v;

	if (allow_max && !strcmp(s, "max")) {
		*out = NXQ_UNLIMITED;
		return 0;
	}
	if (!n || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n + 1);
	if (n > 2 && buf[n - 1] == 'i' && isalpha((unsigned char)buf[n - 2]))
		buf[--n] = 0;
	switch (buf[n - 1]) {
	case 'K': case 'k': shift = 10; break;
	case 'M': case 'm': shift = 20; break;
	case 'G': case 'g': shift = 30; break;
	case 'T': case 't': shift = 40; break;
	case 'P': case 'p': shift = 50; break;
	case 'E': case 'e': shift = 60; break;
	}
	if (shift)
		buf[--n] = 0;
	if (!n || sc_kstrtou64(buf, &v))
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = v << shift;
	return 0;
}

/* nxq_split(): whitespace-separated words, -EINVAL beyond max. */
static int sc_split(char *line, char **w, int max)
{
	int n = 0;
	char *s;

	while ((s = strsep(&line, " \t\n")) != NULL) {
		if (!*s)
			continue;
		if (n == max)
			return -EINVAL;
		w[n++] = s;
	}
	return n;
}

/* ---- paths under SC_SYSFS ---------------------------------------------- */

struct sc_spath {
	int level;	/* 0 root, 1 devices/, 2 a device, 3 nodes/, 4 a node */
	char key[NXQ_DEVICE_KEY_MAX + 8];
	uint64_t cgid;
	char attr[64];	/* "" for a directory */
};

/* Split a path under SC_SYSFS; -ENOENT if it cannot be a file there. */
static int sc_spath_parse(const char *path, struct sc_spath *p)
{
	char buf[512], *w[8], *s, *end;
	int n = 0;

	memset(p, 0, sizeof(*p));
	if (snprintf(buf, sizeof(buf), "%s", path + strlen(SC_SYSFS)) >=
	    (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (s = strtok(buf, "/"); s; s = strtok(NULL, "/")) {
		if (n == 8)
			return -ENOENT;
		w[n++] = s;
	}
	if (n == 0)
		return 0;
	if (strcmp(w[0], "devices")) {
		if (n > 1)
			return -ENOENT;
		snprintf(p->attr, sizeof(p->attr), "%s", w[0]);
		return 0;
	}
	p->level = 1;
	if (n == 1)
		return 0;
	if (n == 2 && (!strcmp(w[1], "register") ||
		       !strcmp(w[1], "unregister"))) {
		snprintf(p->attr, sizeof(p->attr), "%s", w[1]);
		return 0;
	}
	if (strlen(w[1]) >= NXQ_DEVICE_KEY_MAX)
		return -ENOENT;
	snprintf(p->key, sizeof(p->key), "%s", w[1]);
	p->level = 2;
	if (n == 2)
		return 0;
	if (strcmp(w[2], "nodes")) {
		if (n > 3)
			return -ENOENT;
		snprintf(p->attr, sizeof(p->attr), "%s", w[2]);
		return 0;
	}
	p->level = 3;
	if (n == 3)
		return 0;
	errno = 0;
	p->cgid = strtoull(w[3], &end, 10);
	if (errno || *end || w[3][0] < '0' || w[3][0] > '9')
		return -ENOENT;
	p->level = 4;
	if (n == 4)
		return 0;
	if (n > 5)
		return -ENOENT;
	snprintf(p->attr, sizeof(p->attr), "%s", w[4]);
	return 0;
}

/* How a file of a device or node is read back from its dump attribute. */
enum { SC_F_U64, SC_F_U64MAX, SC_F_U32, SC_F_U32MAX, SC_F_U8, SC_F_STR,
       SC_F_DEVT, SC_F_NONE, SC_F_KEYED };

/* events_dropped_by_type's keys, in the order of the event types */
static const char *const sc_dropped_types[] = {
	"device_added", "device_removed", "budget_changed", "denied",
	"ticket_issued", "ticket_answered", "killed",
};

struct sc_sattr {
	const char *name;
	int attr, fmt;
	int writable;	/* a file root may write */
};

static const struct sc_sattr sc_dev_attrs[] = {
	/*
	 * The device table's fields (NXQ_DEVICE_FIELDS, as the module makes
	 * their files): root writes them.
	 */
#define SC_DFIELD_SATTR(n, N, a, u, p, lo, hi, d, w, add, set)		\
	{ #n, a, (p) == NXQ_PARSE_SIZE_MAX ? SC_F_U64MAX :		\
	  (p) == NXQ_PARSE_SIZE ? SC_F_U64 : SC_F_U32, 1 },
	NXQ_DEVICE_FIELDS(SC_DFIELD_SATTR)
#undef SC_DFIELD_SATTR
	{ "used", NXQUOTA_A_DEVICE_USED, SC_F_U64, 0 },
	{ "denials", NXQUOTA_A_DEVICE_DENIALS, SC_F_U64, 0 },
	{ "capacity_hits", NXQUOTA_A_DEVICE_CAPACITY_HITS, SC_F_U64, 0 },
	{ "holders", NXQUOTA_A_DEVICE_HOLDERS, SC_F_U32, 0 },
	{ "tickets", NXQUOTA_A_DEVICE_TICKETS, SC_F_U64, 0 },
	{ "bytes_asked", NXQUOTA_A_DEVICE_BYTES_ASKED, SC_F_U64, 0 },
	{ "bytes_released", NXQUOTA_A_DEVICE_BYTES_RELEASED, SC_F_U64, 0 },
	{ "kills", NXQUOTA_A_DEVICE_KILLS, SC_F_U64, 0 },
	{ "waits", NXQUOTA_A_DEVICE_WAITS, SC_F_U64, 0 },
	{ "timeouts", NXQUOTA_A_DEVICE_TIMEOUTS, SC_F_U64, 0 },
#ifdef SC_HAVE_DEVICE_WAITERS	/* an enum: run.sh greps the header */
	{ "waiters", NXQUOTA_A_DEVICE_WAITERS, SC_F_U32, 0 },
#else
	{ "waiters", 0, SC_F_NONE, 0 },
#endif
	{ "devt", NXQUOTA_A_DEVICE_DEVT, SC_F_DEVT, 0 },
	{ "events_dropped", NXQUOTA_A_DEVICE_EVENTS_DROPPED, SC_F_U64, 0 },
#ifdef SC_HAVE_EVENTS_DROPPED_TYPE	/* an enum: run.sh greps the header */
	/* "TYPE COUNT" lines: sc_dropped_types' types, their attributes
	 * consecutive from this one */
	{ "events_dropped_by_type",
	  NXQUOTA_A_DEVICE_EVENTS_DROPPED_DEVICE_ADDED, SC_F_KEYED, 0 },
#endif
	{ "set_budget", 0, SC_F_NONE, 1 },
	{ "clear_budget", 0, SC_F_NONE, 1 },
	{ NULL, 0, 0, 0 },
};

static const struct sc_sattr sc_node_attrs[] = {
	{ "path", NXQUOTA_A_BUDGET_CGROUP_PATH, SC_F_STR, 0 },
	/*
	 * The budget table's fields a node keeps (NXQ_BUDGET_FIELDS, as the
	 * module makes their files): a limit's reads the one that binds and
	 * is read-only, the others are written; a request's modifier has no
	 * file (its name here is "", which no path names).
	 */
#define SC_FIELD_SATTR(n, N, a, u, p, lo, hi, d, w, lim, kept)		\
	{ (kept) ? #n : "", a,						\
	  (p) == NXQ_PARSE_SIZE_MAX ? SC_F_U64MAX :			\
	  (p) == NXQ_PARSE_SIZE ? SC_F_U64 :				\
	  (p) == NXQ_PARSE_BOOL ? SC_F_U8 : SC_F_U32MAX, (lim) < 0 },
	NXQ_BUDGET_FIELDS(SC_FIELD_SATTR)
#undef SC_FIELD_SATTR
	{ "effective_min", NXQUOTA_A_BUDGET_EFFECTIVE_MIN, SC_F_U64, 0 },
	{ "effective_max", NXQUOTA_A_BUDGET_EFFECTIVE_MAX, SC_F_U64MAX, 0 },
	{ "claimed", NXQUOTA_A_BUDGET_CLAIMED, SC_F_U64, 0 },
	{ "overcommitted", NXQUOTA_A_BUDGET_OVERCOMMITTED, SC_F_U8, 0 },
	{ "current", NXQUOTA_A_BUDGET_CURRENT, SC_F_U64, 0 },
	{ "borrowed", NXQUOTA_A_BUDGET_BORROWED, SC_F_U64, 0 },
	{ "max_hits", NXQUOTA_A_BUDGET_MAX_HITS, SC_F_U64, 0 },
	{ "denials", NXQUOTA_A_BUDGET_DENIALS, SC_F_U64, 0 },
	{ "holders", NXQUOTA_A_BUDGET_HOLDERS, SC_F_U32, 0 },
	{ "tickets", NXQUOTA_A_BUDGET_TICKETS, SC_F_U64, 0 },
	{ "bytes_asked", NXQUOTA_A_BUDGET_BYTES_ASKED, SC_F_U64, 0 },
	{ "bytes_released", NXQUOTA_A_BUDGET_BYTES_RELEASED, SC_F_U64, 0 },
	{ "kills", NXQUOTA_A_BUDGET_KILLS, SC_F_U64, 0 },
	{ NULL, 0, 0, 0 },
};

static const struct sc_sattr *sc_sattr_find(const struct sc_sattr *t,
					    const char *name)
{
	for (; t->name; t++)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

/* A dump's matching object: its attributes, copied. */
struct sc_found {
	const char *key;
	uint64_t cgid;
	int by_cgid, found;
	char msg[4096];
	struct nlattr *tb[SC_NL_MAXATTR + 1];
};

static void sc_found_copy(struct sc_found *f, struct nlattr **tb)
{
	size_t off = 0;
	int i;

	f->found = 1;
	memset(f->tb, 0, sizeof(f->tb));
	for (i = 0; i <= SC_NL_MAXATTR; i++) {
		if (!tb[i] || off + NLA_ALIGN(tb[i]->nla_len) > sizeof(f->msg))
			continue;
		memcpy(f->msg + off, tb[i], tb[i]->nla_len);
		f->tb[i] = (struct nlattr *)(f->msg + off);
		off += NLA_ALIGN(tb[i]->nla_len);
	}
}

static int sc_found_dev_cb(struct nlattr **tb, void *arg)
{
	struct sc_found *f = arg;
	struct nlattr *k = tb[NXQUOTA_A_DEVICE_KEY];

	if (k && !strcmp((char *)k + NLA_HDRLEN, f->key))
		sc_found_copy(f, tb);
	return 0;
}

static int sc_found_node_cb(struct nlattr **tb, void *arg)
{
	struct sc_found *f = arg;
	struct nlattr *id = tb[NXQUOTA_A_BUDGET_CGROUP_ID];
	uint64_t v;

	if (!id)
		return 0;
	memcpy(&v, (char *)id + NLA_HDRLEN, sizeof(v));
	if (v == f->cgid)
		sc_found_copy(f, tb);
	return 0;
}

/* Find the device (level 2) or node (level 4) of p: 0, -ENOENT, -errno. */
static int sc_find(const struct sc_spath *p, struct sc_found *f)
{
	struct sc_nlreq m;
	int rc;

	memset(f, 0, sizeof(*f));
	f->key = p->key;
	f->cgid = p->cgid;
	if (p->level >= 4) {
		sc_nl_init(&m, NXQUOTA_CMD_BUDGET_GET, 1);
		sc_nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, p->key);
		rc = sc_nl_talk(&m, sc_found_node_cb, f);
		if (rc == -ENODEV)
			return -ENOENT;
	} else {
		sc_nl_init(&m, NXQUOTA_CMD_DEVICE_GET, 1);
		rc = sc_nl_talk(&m, sc_found_dev_cb, f);
	}
	if (rc < 0)
		return rc;
	return f->found ? 0 : -ENOENT;
}

/* ---- the translated helpers -------------------------------------------- */

static SC_UNUSED int sc_admin_exists(const char *path)
{
	struct sc_spath p;
	struct sc_found f;
	const struct sc_sattr *a = NULL;

	if (sc_spath_parse(path, &p) < 0)
		return 0;
	if (p.level == 0)
		return !p.attr[0] || !strcmp(p.attr, "abi_version");
	if (p.level == 1)
		return 1;
	if (p.level == 2 && p.attr[0]) {
		a = sc_sattr_find(sc_dev_attrs, p.attr);
		if (!a)
			return 0;
	}
	if (p.level == 4 && p.attr[0]) {
		a = sc_sattr_find(sc_node_attrs, p.attr);
		if (!a)
			return 0;
	}
	return sc_find(&p, &f) == 0;
}

static long sc_d_ioctl(int fd, unsigned long cmd, void *arg);

static int sc_admin_abi(char *buf, size_t size)
{
	struct nxq_version v;
	long rc;
	int fd;

	fd = sc_daemon() ? sc_d_connect() : open(SC_DEVNODE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return sc_daemon() ? fd : -errno;
	memset(&v, 0, sizeof(v));
	v.size = sizeof(v);
	if (sc_daemon())
		rc = sc_d_ioctl(fd, NXQ_IOC_VERSION, &v);
	else
		rc = ioctl(fd, NXQ_IOC_VERSION, &v) < 0 ? -errno : 0;
	close(fd);
	if (rc < 0)
		return (int)rc;
	return snprintf(buf, size, "%u", v.abi_version);
}

/* Read a file under SC_SYSFS: its text (no newline) and length, or -errno. */
static SC_UNUSED int sc_admin_read(const char *path, char *buf, size_t size)
{
	const struct sc_sattr *a;
	struct sc_spath p;
	struct sc_found f;
	struct nlattr *v;
	uint64_t u64 = 0;
	uint32_t u32 = 0;
	int rc;

	rc = sc_spath_parse(path, &p);
	if (rc < 0)
		return rc;
	if (p.level == 0 && !strcmp(p.attr, "abi_version"))
		return sc_admin_abi(buf, size);
	if (p.level == 1 && (!strcmp(p.attr, "register") ||
			     !strcmp(p.attr, "unregister")))
		return -EACCES;		/* write-only */
	if (!p.attr[0] || (p.level != 2 && p.level != 4))
		return p.level == 0 && p.attr[0] ? -ENOENT : -EISDIR;
	a = sc_sattr_find(p.level == 2 ? sc_dev_attrs : sc_node_attrs, p.attr);
	if (!a)
		return -ENOENT;
	if (a->fmt == SC_F_NONE && a->writable)
		return -EACCES;		/* set_budget, clear_budget */
	rc = sc_find(&p, &f);
	if (rc == -EACCES && p.level == 2 && sc_daemon() && geteuid())
		SKIP("%.200s read by uid %d: nxquotad's control socket is "
		     "root's only (sysfs lets anyone read a device's totals)",
		     path, (int)geteuid());
	if (rc < 0)
		return rc;
	if (a->fmt == SC_F_NONE)
		SKIP("%.200s: %.60s has no netlink attribute, so the %s "
		     "cannot read it", path, p.attr, sc_daemon() ? "daemon" : "genl translation");
	if (a->fmt == SC_F_KEYED) {	/* u64 attributes from a->attr on */
		size_t i, off = 0;

		for (i = 0; i < sizeof(sc_dropped_types) / sizeof(*sc_dropped_types); i++) {
			v = f.tb[a->attr + i];
			if (!v)
				return -ENODATA;
			memcpy(&u64, (char *)v + NLA_HDRLEN, sizeof(u64));
			/* sysfs's text without its last newline, as sc_read() gives */
			off += snprintf(buf + off, off < size ? size - off : 0,
					"%s%s %llu", i ? "\n" : "",
					sc_dropped_types[i], (unsigned long long)u64);
		}
		return (int)off;
	}
	v = f.tb[a->attr];
	if (!v && a->fmt == SC_F_DEVT)
		return snprintf(buf, size, "none");
	/* A node's max: absent from the dump when it has none of its own. */
	if (!v && a->attr == NXQUOTA_A_BUDGET_MAX && p.level == 4)
		return snprintf(buf, size, "max");
	if (!v)
		return -ENODATA;
	switch (a->fmt) {
	case SC_F_U64:
	case SC_F_U64MAX:
		memcpy(&u64, (char *)v + NLA_HDRLEN, sizeof(u64));
		if (a->fmt == SC_F_U64MAX && u64 == NXQ_UNLIMITED)
			return snprintf(buf, size, "max");
		return snprintf(buf, size, "%llu", (unsigned long long)u64);
	case SC_F_U32:
	case SC_F_U32MAX:
		memcpy(&u32, (char *)v + NLA_HDRLEN, sizeof(u32));
		if (a->fmt == SC_F_U32MAX && u32 == UINT32_MAX)
			return snprintf(buf, size, "max");
		return snprintf(buf, size, "%u", u32);
	case SC_F_U8:
		return snprintf(buf, size, "%d", *((uint8_t *)v + NLA_HDRLEN));
	default:	/* a string */
		return snprintf(buf, size, "%s", (char *)v + NLA_HDRLEN);
	}
}

/*
 * The budget table (NXQ_BUDGET_FIELDS) as the module's set_budget and node
 * files read it (kmod/abi_field.c): each field's name, attribute, unit and
 * parse.  None is named here.
 */
struct sc_field {
	const char *name;
	int attr, unit, parse;
};

#define SC_FIELD(n, N, a, u, p, lo, hi, d, w, lim, kept)	{ #n, a, u, p },
static const struct sc_field sc_fields[] = { NXQ_BUDGET_FIELDS(SC_FIELD) };
#undef SC_FIELD
#define SC_NR_FIELDS	((int)(sizeof(sc_fields) / sizeof(sc_fields[0])))

/* The field of a name (its first len bytes), or -1. */
static int sc_field_find(const char *name, size_t len)
{
	int f;

	for (f = 0; f < SC_NR_FIELDS; f++)
		if (strlen(sc_fields[f].name) == len &&
		    !strncmp(name, sc_fields[f].name, len))
			return f;
	return -1;
}

/* A value from its text, as a parse column (enum nxq_parse) says. */
static int sc_parse_by(int parse, const char *s, uint64_t *v)
{
	uint32_t u;

	switch (parse) {
	case NXQ_PARSE_SIZE:
	case NXQ_PARSE_SIZE_MAX:
		return sc_parse_size(s, parse == NXQ_PARSE_SIZE_MAX,
				     v) ? -EINVAL : 0;
	case NXQ_PARSE_BOOL:
		if ((s[0] != '0' && s[0] != '1') || s[1])
			return -EINVAL;
		*v = (uint64_t)(s[0] - '0');
		return 0;
	case NXQ_PARSE_U32:
		if (sc_kstrtou32(s, &u))
			return -EINVAL;
		*v = u;
		return 0;
	default:
		return -EINVAL;
	}
}

/* A field's value from its text, as its parse column says: 0 or -EINVAL. */
static int sc_field_parse(int f, const char *s, uint64_t *v)
{
	return sc_parse_by(sc_fields[f].parse, s, v);
}

/*
 * The device table (NXQ_DEVICE_FIELDS) as the module's register and
 * device files read it: each field's name, attribute, unit, parse and
 * bounds (a size's none).  None is named here.
 */
struct sc_dfield {
	const char *name;
	int attr, unit, parse;
	uint64_t lo, hi;
};

#define SC_DFIELD(n, N, a, u, p, lo, hi, d, w, add, set)	\
	{ #n, a, u, p, lo, hi },
static const struct sc_dfield sc_dfields[] = {
	NXQ_DEVICE_FIELDS(SC_DFIELD)
};
#undef SC_DFIELD
#define SC_NR_DFIELDS	((int)(sizeof(sc_dfields) / sizeof(sc_dfields[0])))

/* The device field of a name, or -1. */
static int sc_dfield_find(const char *name)
{
	int f;

	for (f = 0; f < SC_NR_DFIELDS; f++)
		if (!strcmp(name, sc_dfields[f].name))
			return f;
	return -1;
}

/* As the module's file: read by its parse, within its bounds; -EINVAL. */
static int sc_dfield_parse(int f, const char *s, uint64_t *v)
{
	const struct sc_dfield *d = &sc_dfields[f];

	if (sc_parse_by(d->parse, s, v))
		return -EINVAL;
	if (d->unit != NXQ_UNIT_BYTES && (*v < d->lo || *v > d->hi))
		return -EINVAL;
	return 0;
}

/* A device field's attribute in m, of the type its unit says. */
static void sc_dfield_put(struct sc_nlreq *m, int f, uint64_t v)
{
	if (sc_dfields[f].unit == NXQ_UNIT_BYTES)
		sc_nl_put_u64(m, sc_dfields[f].attr, v);
	else
		sc_nl_put_u32(m, sc_dfields[f].attr, (uint32_t)v);
}

/* A field's attribute in m, of the type its unit says. */
static void sc_field_put(struct sc_nlreq *m, int f, uint64_t v)
{
	switch (sc_fields[f].unit) {
	case NXQ_UNIT_BYTES:
		sc_nl_put_u64(m, sc_fields[f].attr, v);
		break;
	case NXQ_UNIT_BOOL:
		sc_nl_put_u8(m, sc_fields[f].attr, (uint8_t)v);
		break;
	case NXQ_UNIT_FLAG:
		sc_nl_put_flag(m, sc_fields[f].attr);
		break;
	default:
		sc_nl_put_u32(m, sc_fields[f].attr, (uint32_t)v);
	}
}

/*
 * set_budget's "PATH NAME=VALUE... [FLAG]...": the BUDGET_SET request, or
 * -EINVAL (an unknown name, a value that does not read, a name twice).
 */
static int sc_admin_budget_words(struct sc_nlreq *m, char **w, int n)
{
	unsigned long seen = 0;
	uint64_t v = 1;
	int i, f;

	for (i = 1; i < n; i++) {
		char *val = strchr(w[i], '=');

		f = sc_field_find(w[i], val ? (size_t)(val - w[i]) : strlen(w[i]));
		if (f < 0 || (seen & (1UL << f)) ||
		    (sc_fields[f].parse == NXQ_PARSE_FLAG) != !val ||
		    (val && sc_field_parse(f, val + 1, &v)))
			return -EINVAL;
		seen |= 1UL << f;
		sc_field_put(m, f, v);
	}
	return 0;
}

/* Write s to a file under SC_SYSFS: 0 or -errno. */
static SC_UNUSED int sc_admin_write(const char *path, const char *s)
{
	char line[1024], *w[1 + SC_NR_FIELDS];
	const struct sc_sattr *a;
	struct sc_spath p;
	struct sc_nlreq m;
	struct sc_found f;
	uint64_t v;
	int rc, n, fi;

	rc = sc_spath_parse(path, &p);
	if (rc < 0)
		return rc;
	if (strlen(s) >= sizeof(line))
		return -EINVAL;
	strcpy(line, s);
	if (p.level == 1 && !strcmp(p.attr, "register")) {
		n = sc_split(line, w, 3);
		fi = sc_dfield_find("capacity");	/* KEY CAPACITY [DEVT] */
		if ((n != 2 && n != 3) || fi < 0)
			return -EINVAL;
		if (sc_dfield_parse(fi, w[1], &v))
			return -EINVAL;
		sc_nl_init(&m, NXQUOTA_CMD_DEVICE_ADD, 0);
		if (strlen(w[0]) > 200)
			return -EINVAL;
		sc_nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, w[0]);
		sc_dfield_put(&m, fi, v);
		if (n == 3) {
			if (strlen(w[2]) > 200)
				return -EINVAL;
			sc_nl_put_str(&m, NXQUOTA_A_DEVICE_DEVT, w[2]);
		}
		rc = sc_nl_talk(&m, NULL, NULL);
		return rc < 0 ? rc : 0;
	}
	if (p.level == 1 && !strcmp(p.attr, "unregister")) {
		n = sc_split(line, w, 1);
		if (n != 1 || strlen(w[0]) > 200)
			return -EINVAL;
		sc_nl_init(&m, NXQUOTA_CMD_DEVICE_DEL, 0);
		sc_nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, w[0]);
		rc = sc_nl_talk(&m, NULL, NULL);
		return rc == -ENODEV ? -ENOENT : rc < 0 ? rc : 0;
	}
	if ((p.level != 2 && p.level != 4) || !p.attr[0])
		return p.level == 0 && !strcmp(p.attr, "abi_version") ?
			-EACCES : p.level == 0 && p.attr[0] ? -ENOENT :
			-EISDIR;
	a = sc_sattr_find(p.level == 2 ? sc_dev_attrs : sc_node_attrs, p.attr);
	if (!a)
		return -ENOENT;
	rc = sc_find(&p, &f);	/* open(2) of a file of a missing object */
	if (rc < 0)
		return rc;
	if (!a->writable)
		return -EACCES;
	if (p.level == 2) {
		sc_nl_init(&m, NXQUOTA_CMD_DEVICE_SET, 0);
		sc_nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, p.key);
		if (!strcmp(p.attr, "set_budget") ||
		    !strcmp(p.attr, "clear_budget")) {
			int set = p.attr[0] == 's';

			n = sc_split(line, w, set ? 1 + SC_NR_FIELDS : 1);
			if (n < (set ? 2 : 1) || w[0][0] != '/')
				return -EINVAL;
			if (strlen(w[0]) > 4000)
				return -EINVAL;
			sc_nl_init(&m, set ? NXQUOTA_CMD_BUDGET_SET :
				   NXQUOTA_CMD_BUDGET_CLEAR, 0);
			sc_nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, p.key);
			sc_nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH, w[0]);
			if (set && sc_admin_budget_words(&m, w, n))
				return -EINVAL;
		} else {
			/* a field of the device table: one word */
			fi = sc_dfield_find(p.attr);
			n = sc_split(line, w, 1);
			if (fi < 0 || n != 1 || sc_dfield_parse(fi, w[0], &v))
				return -EINVAL;
			sc_dfield_put(&m, fi, v);
		}
	} else {
		struct nlattr *pa = f.tb[NXQUOTA_A_BUDGET_CGROUP_PATH];

		if (!pa)
			return -ENOENT;
		sc_nl_init(&m, NXQUOTA_CMD_BUDGET_SET, 0);
		sc_nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, p.key);
		sc_nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH,
			      (char *)pa + NLA_HDRLEN);
		/* a field's file: one word, as set_budget reads it */
		fi = sc_field_find(p.attr, strlen(p.attr));
		n = sc_split(line, w, 1);
		if (fi < 0 || n != 1 || sc_field_parse(fi, w[0], &v))
			return -EINVAL;
		sc_field_put(&m, fi, v);
	}
	rc = sc_nl_talk(&m, NULL, NULL);
	return rc == -ENODEV ? -ENOENT : rc < 0 ? rc : 0;
}

#endif /* NXQ_TESTS_VM_AUTHORITY_H */
