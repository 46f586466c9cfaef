/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The daemon from outside, for the KUnit-style suites of daemon/tests:
 * start the binary ($NXQD_BIN) on a socket in a fresh directory (also its
 * state directory), speak <linux/nxquotad.h> to it, stop it.
 */
#ifndef _NXQD_CLIENT_HARNESS_H
#define _NXQD_CLIENT_HARNESS_H

#include <kunit/test.h>
#include <linux/nxquota.h>
#include <linux/nxquotad.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>


struct daemon {
	char dir[64], sock[96], log[96], ctl[96];
	pid_t pid;
};

/* Does the daemon's log (so far, its first 64 KiB) say @what? */
static inline bool log_has(const struct daemon *d, const char *what)
{
	static char buf[65536];
	int fd = open(d->log, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return strstr(buf, what) != NULL;
}

static inline int dial(const char *path, int type)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* Run the daemon with @extra arguments (NULL-terminated, may be NULL). */
static inline pid_t spawn_args(struct kunit *test, struct daemon *d,
			       const char *const *extra)
{
	const char *bin = getenv("NXQD_BIN");
	const char *argv[16] = { "nxquotad", "-v", "-s", d->sock, "-S",
				 d->dir };
	int log, n = 6;
	pid_t pid;

	KUNIT_ASSERT_NOT_NULL(test, bin);
	while (extra && *extra && n < 15)
		argv[n++] = *extra++;
	argv[n] = NULL;
	pid = fork();
	KUNIT_ASSERT_GE(test, pid, 0);
	if (!pid) {
		/* a case that ends on a failed assertion leaves no daemon */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		log = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (log >= 0)
			dup2(log, 2);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static inline pid_t spawn(struct kunit *test, struct daemon *d)
{
	return spawn_args(test, d, NULL);
}

/* Wait until the daemon answers a connection. */
static inline void wait_up(struct kunit *test, struct daemon *d)
{
	int i, fd = -1;

	for (i = 0; i < 500 && fd < 0; i++) {
		fd = dial(d->sock, SOCK_SEQPACKET);
		if (fd < 0)
			usleep_range(10000, 11000);
	}
	KUNIT_ASSERT_GE(test, fd, 0);
	close(fd);
	/*
	 * The control socket is served after the client socket: wait for it
	 * too (up to 5 s; a case whose daemon has none goes on without it).
	 */
	for (i = 0, fd = -1; i < 500 && fd < 0; i++) {
		fd = dial(d->ctl, SOCK_SEQPACKET);
		if (fd < 0)
			usleep_range(10000, 11000);
	}
	if (fd >= 0)
		close(fd);
}

/* A fresh directory for the socket, the log and the state. */
static inline void prepare(struct kunit *test, struct daemon *d)
{
	snprintf(d->dir, sizeof(d->dir), "/tmp/nxqd-test.XXXXXX");
	KUNIT_ASSERT_NOT_NULL(test, mkdtemp(d->dir));
	snprintf(d->sock, sizeof(d->sock), "%s/nxquota.sock", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/log", d->dir);
	snprintf(d->ctl, sizeof(d->ctl), "%s/control.sock", d->dir);
}

/* Start a daemon and wait until it answers a connection. */
static inline void start(struct kunit *test, struct daemon *d)
{
	prepare(test, d);
	d->pid = spawn(test, d);
	wait_up(test, d);
}

/* Send @sig; return its exit status (or 128 + signal). */
static inline int stop(struct daemon *d, int sig)
{
	int st = 0;

	kill(d->pid, sig);
	if (waitpid(d->pid, &st, 0) != d->pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * The daemon's log shows no WARNING (the compat layer's lockdep, refcount
 * and might_sleep checks) and no sanitizer report; then remove the
 * directory.
 */
static inline void cleanup(struct kunit *test, struct daemon *d)
{
	static const char *const files[] = {
		"nxquota.sock", "log", "record", "record.tmp", "state",
		"state.tmp", "control.sock", "notify.sock",
	};
	char p[128], buf[65536];
	size_t i;
	ssize_t n;
	int fd = open(d->log, O_RDONLY | O_CLOEXEC);

	if (getenv("NXQD_TEST_KEEP")) {
		kunit_info(test, "kept %s", d->dir);
		if (fd >= 0)
			close(fd);
		return;
	}

	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		KUNIT_EXPECT_NULL(test, strstr(buf, "WARNING"));
		KUNIT_EXPECT_NULL(test, strstr(buf, "BUG:"));
		KUNIT_EXPECT_NULL(test, strstr(buf, "Sanitizer"));
		KUNIT_EXPECT_NULL(test, strstr(buf, "runtime error"));
	}
	for (i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(p, sizeof(p), "%s/%s", d->dir, files[i]);
		unlink(p);
	}
	rmdir(d->dir);
}

/*
 * Send a request (cmd, then @len bytes of @arg, and @nfds descriptors by
 * SCM_RIGHTS) and read the reply; returns the reply's err, or 1 if the
 * transport failed.  *@rlen: argument bytes in the reply.
 */
static inline int call_fds(int fd, __u32 cmd, __u32 reserved, const void *arg,
			   size_t len, void *out, size_t *rlen,
			   const int *fds, int nfds)
{
	unsigned char msg[sizeof(struct nxqd_req) + 8192];
	unsigned char rep[sizeof(struct nxqd_rep) + 8192];
	struct nxqd_req req = { .cmd = cmd, .reserved = reserved };
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(req) + len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct nxqd_rep r;
	ssize_t n;

	memcpy(msg, &req, sizeof(req));
	memcpy(msg + sizeof(req), arg, len);
	if (nfds) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) + len))
		return 1;
	n = recv(fd, rep, sizeof(rep), 0);
	if (n < (ssize_t)sizeof(r))
		return 1;
	memcpy(&r, rep, sizeof(r));
	*rlen = (size_t)n - sizeof(r);
	if (out)
		memcpy(out, rep + sizeof(r), *rlen);
	return r.err;
}

static inline int call(int fd, __u32 cmd, __u32 reserved, const void *arg,
		       size_t len, void *out, size_t *rlen)
{
	return call_fds(fd, cmd, reserved, arg, len, out, rlen, NULL, 0);
}

/* nxqd_req's version and flags as the first protocol's reserved word. */
static inline __u32 req_vf(__u16 version, __u16 flags)
{
	struct nxqd_req r = { .version = version, .flags = flags };

	return r.reserved;
}

/* ---- the control socket, by hand (no libnl here) ---- */

/* Append attribute @type of @len bytes at @p (room assumed). */
static inline size_t nl_put(unsigned char *p, size_t off, __u16 type,
			    const void *data, size_t len)
{
	struct nlattr a = { .nla_len = NLA_HDRLEN + len, .nla_type = type };

	memcpy(p + off, &a, sizeof(a));
	memcpy(p + off + NLA_HDRLEN, data, len);
	return off + NLA_ALIGN(NLA_HDRLEN + len);
}

/*
 * Send genl @cmd with @flags and the attributes @attrs (@alen bytes) on
 * @fd; read the answer.  @each is called on each data message's
 * attributes (a dump); the ack's error is returned (1: no answer), its
 * message in @msg.
 */
static inline int nl_call(int fd, __u8 cmd, __u16 flags,
			  const unsigned char *attrs, size_t alen,
			  void (*each)(void *ctx, struct nlattr *a, int len),
			  void *ctx, char *msg, size_t msglen)
{
	static __u32 seq = 1;
	unsigned char buf[65536] __attribute__((aligned(8)));
	struct nlmsghdr h = {
		.nlmsg_len = NLMSG_HDRLEN + GENL_HDRLEN + alen,
		.nlmsg_type = NXQD_GENL_ID,
		.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags,
		.nlmsg_seq = ++seq,
	};
	struct genlmsghdr g = { .cmd = cmd, .version = 1 };
	ssize_t n;

	if (msg && msglen)
		msg[0] = '\0';
	memcpy(buf, &h, NLMSG_HDRLEN);
	memcpy(buf + NLMSG_HDRLEN, &g, GENL_HDRLEN);
	if (alen)
		memcpy(buf + NLMSG_HDRLEN + GENL_HDRLEN, attrs, alen);
	if (send(fd, buf, h.nlmsg_len, MSG_NOSIGNAL) != (ssize_t)h.nlmsg_len)
		return 1;
	for (;;) {
		struct nlmsghdr *r = (void *)buf;

		n = recv(fd, buf, sizeof(buf), 0);
		if (n < (ssize_t)NLMSG_HDRLEN)
			return 1;
		if (r->nlmsg_seq != h.nlmsg_seq)
			continue;	/* an event */
		if (r->nlmsg_type == NLMSG_DONE)
			return 0;
		if (r->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr *e = NLMSG_DATA(r);
			struct nlattr *a = (void *)((char *)e + sizeof(*e));
			int rem = (int)r->nlmsg_len - NLMSG_HDRLEN -
				  (int)sizeof(*e);

			for (; rem >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
			       a->nla_len <= rem;
			     rem -= NLA_ALIGN(a->nla_len),
			     a = (void *)((char *)a + NLA_ALIGN(a->nla_len)))
				if (a->nla_type == NLMSGERR_ATTR_MSG && msg)
					snprintf(msg, msglen, "%s",
						 (char *)a + NLA_HDRLEN);
			return e->error;
		}
		if (each)
			each(ctx, (void *)((char *)NLMSG_DATA(r) + GENL_HDRLEN),
			     (int)r->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN);
	}
}

struct nl_dev_want {
	const char *key;
	int attr;
	__u64 v;
	bool found;
};

static inline void nl_dev_each(void *ctx, struct nlattr *a, int rem)
{
	struct nl_dev_want *w = ctx;
	const char *key = NULL;
	__u64 v = 0;
	bool have = false;

	for (; rem >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
	       a->nla_len <= rem;
	     rem -= NLA_ALIGN(a->nla_len),
	     a = (void *)((char *)a + NLA_ALIGN(a->nla_len))) {
		if (a->nla_type == NXQUOTA_A_DEVICE_KEY)
			key = (char *)a + NLA_HDRLEN;
		if (a->nla_type == w->attr) {
			v = 0;
			memcpy(&v, (char *)a + NLA_HDRLEN,
			       a->nla_len - NLA_HDRLEN > 8 ? 8 :
			       a->nla_len - NLA_HDRLEN);
			have = true;
		}
	}
	if (key && !strcmp(key, w->key) && have) {
		w->v = v;
		w->found = true;
	}
}

/* Attribute @attr of device @key from the control socket @ctl; ~0 if none. */
static inline __u64 ctl_dev_attr(const char *ctl, const char *key, int attr)
{
	struct nl_dev_want w = { .key = key, .attr = attr };
	int fd = dial(ctl, SOCK_SEQPACKET);

	if (fd < 0)
		return ~0ULL;
	if (nl_call(fd, NXQUOTA_CMD_DEVICE_GET, NLM_F_DUMP, NULL, 0,
		    nl_dev_each, &w, NULL, 0) || !w.found)
		w.v = ~0ULL;
	close(fd);
	return w.v;
}

/* ctl_dev_attr(), polled until it is @want (3 s). */
static inline __u64 ctl_dev_wait(const char *ctl, const char *key, int attr,
				 __u64 want)
{
	__u64 v = ~0ULL;
	int i;

	for (i = 0; i < 300; i++) {
		v = ctl_dev_attr(ctl, key, attr);
		if (v == want)
			break;
		usleep_range(10000, 11000);
	}
	return v;
}

/* Descriptors open in process @pid, -1 if unknown. */
static inline int count_fds(pid_t pid)
{
	char p[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	d = opendir(p);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Threads of process @pid, -1 if unknown. */
static inline int count_threads(pid_t pid)
{
	char p[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	d = opendir(p);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

#endif /* _NXQD_CLIENT_HARNESS_H */
