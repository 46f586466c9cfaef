// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's control socket and state file, tested from outside: the
 * daemon binary ($NXQD_BIN) runs as a child with its sockets and its state
 * directory in a fresh directory, and as its cgroup2 root (nxquotad -C) a
 * fresh directory of the first cgroup2 mount with cgroups a, a/b and c
 * (root only; the cases are skipped where there is no cgroup2 mount one
 * may create cgroups in).  The cases speak the module's generic netlink
 * family to it,
 * built with libnl as nxquotactl builds it, malformed messages included,
 * and restart it on the same state directory.
 */
#include <kunit/test.h>
#include <linux/nxquota.h>
#include <linux/capability.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/attr.h>
#include <linux/genetlink.h>

#include <linux/nxquotad.h>

struct daemon {
	char dir[64], sock[96], ctl[96], state[96], log[96], cg[600];
	pid_t pid;
	int passfd;		/* >= 0: passed as systemd's "control" */
};

/* A connection whose reads give up after 10 s: no case hangs. */
static int dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct timeval tv = { 10, 0 };

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

static void spawn(struct kunit *test, struct daemon *d)
{
	const char *bin = getenv("NXQD_BIN");
	int log;

	KUNIT_ASSERT_NOT_NULL(test, bin);
	d->pid = fork();
	KUNIT_ASSERT_GE(test, d->pid, 0);
	if (!d->pid) {
		/* a case that ends on a failed ASSERT leaves no daemon */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		log = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (log >= 0)
			dup2(log, 2);
		if (d->passfd >= 0) {	/* sd_listen_fds(3)'s protocol */
			char pid[16];

			if (dup2(d->passfd, 3) != 3)
				_exit(126);
			snprintf(pid, sizeof(pid), "%d", getpid());
			setenv("LISTEN_PID", pid, 1);
			setenv("LISTEN_FDS", "1", 1);
			setenv("LISTEN_FDNAMES", "control", 1);
		}
		execl(bin, "nxquotad", "-v", "-s", d->sock, "-c", d->ctl,
		      "-S", d->state, "-C", d->cg, "-G", "0", (char *)NULL);
		_exit(127);
	}
}

/* Wait until the control socket answers; false if the daemon exited. */
static bool wait_up(struct daemon *d)
{
	int i, fd = -1, st;

	for (i = 0; i < 500 && fd < 0; i++) {
		fd = dial(d->ctl);
		if (fd >= 0)
			break;
		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			d->pid = 0;
			return false;
		}
		usleep_range(10000, 11000);
	}
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static int mkcg(struct daemon *d, const char *rel)
{
	char p[700];

	snprintf(p, sizeof(p), "%s%s", d->cg, rel);
	return mkdir(p, 0755) ? -errno : 0;
}

static void rmcg(struct daemon *d, const char *rel)
{
	char p[700];

	snprintf(p, sizeof(p), "%s%s", d->cg, rel);
	rmdir(p);
}

/*
 * Remove what a run that ended on a failed ASSERT left in @mnt: the
 * nxqd-ctl.PID.N cgroups of processes that are gone.
 */
static void sweep(const char *mnt)
{
	static const char *const sub[] = { "/a/b", "/a", "/c", "/s p%", "" };
	char p[700];
	struct dirent *e;
	DIR *dir = opendir(mnt);
	int pid, i;

	while (dir && (e = readdir(dir))) {
		if (sscanf(e->d_name, "nxqd-ctl.%d.", &pid) != 1 ||
		    !kill(pid, 0) || errno != ESRCH)
			continue;
		for (i = 0; i < 5; i++) {
			snprintf(p, sizeof(p), "%s/%s%s", mnt, e->d_name,
				 sub[i]);
			rmdir(p);
		}
	}
	if (dir)
		closedir(dir);
}

/* A fresh directory on the first cgroup2 mount, or "" if none. */
static void cgroup_dir(struct daemon *d)
{
	static int n;
	char line[1024], *f[12], *save;
	FILE *mi = fopen("/proc/self/mountinfo", "re");
	int k, i;

	d->cg[0] = '\0';
	while (mi && fgets(line, sizeof(line), mi)) {
		k = 0;
		f[0] = strtok_r(line, "\n ", &save);
		while (f[k] && k < 11)
			f[++k] = strtok_r(NULL, "\n ", &save);
		for (i = 6; i + 1 < k; i++)
			if (!strcmp(f[i], "-"))
				break;
		if (i + 1 < k && !strcmp(f[i + 1], "cgroup2")) {
			sweep(f[4]);
			snprintf(d->cg, sizeof(d->cg), "%s/nxqd-ctl.%d.%d",
				 f[4], getpid(), n++);
			break;
		}
	}
	if (mi)
		fclose(mi);
	if (d->cg[0] && mkdir(d->cg, 0755))
		d->cg[0] = '\0';
}

static void start(struct kunit *test, struct daemon *d)
{
	snprintf(d->dir, sizeof(d->dir), "/tmp/nxqd-ctl.XXXXXX");
	KUNIT_ASSERT_NOT_NULL(test, mkdtemp(d->dir));
	snprintf(d->sock, sizeof(d->sock), "%s/nxquota.sock", d->dir);
	snprintf(d->ctl, sizeof(d->ctl), "%s/control.sock", d->dir);
	snprintf(d->state, sizeof(d->state), "%s/state", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/log", d->dir);
	d->pid = 0;
	d->passfd = -1;
	cgroup_dir(d);
	if (!d->cg[0]) {
		rmdir(d->dir);
		kunit_skip(test, "no cgroup2 mount to create cgroups in");
	}
	KUNIT_ASSERT_EQ(test, mkcg(d, "/a"), 0);
	KUNIT_ASSERT_EQ(test, mkcg(d, "/a/b"), 0);
	KUNIT_ASSERT_EQ(test, mkcg(d, "/c"), 0);
	spawn(test, d);
	KUNIT_ASSERT_TRUE(test, wait_up(d));
}

/* Signal the daemon; return its exit status (or 128 + signal). */
static int stop(struct daemon *d, int sig)
{
	int st = 0;

	if (!d->pid)
		return -1;
	kill(d->pid, sig);
	if (waitpid(d->pid, &st, 0) != d->pid)
		return -1;
	d->pid = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void cleanup(struct daemon *d)
{
	char cmd[128];

	if (d->pid)
		stop(d, SIGKILL);
	rmcg(d, "/a/b");
	rmcg(d, "/a");
	rmcg(d, "/c");
	rmcg(d, "/s p%");
	rmcg(d, "");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->dir);
	if (system(cmd))
		fprintf(stderr, "ctl_test: could not remove %s\n", d->dir);
}

/* ---- requests and replies ---------------------------------------------- */

#define MAXREP 4096

struct reply {
	int err;			/* the ack's error; 1: none came */
	char msg[256];			/* its NLMSGERR_ATTR_MSG */
	bool done;			/* a dump's NLMSG_DONE came */
	int n;				/* data messages */
	struct nlmsghdr *m[MAXREP];	/* copies */
};

static u32 seq = 1000;

static struct nl_msg *req(u8 cmd, int flags)
{
	struct nl_msg *m = nlmsg_alloc();

	struct nlmsghdr *h;
	struct genlmsghdr *g;

	if (!m)
		return NULL;
	h = nlmsg_put(m, 0, seq++, NXQD_GENL_ID, GENL_HDRLEN,
		      flags | NLM_F_REQUEST | NLM_F_ACK);
	g = nlmsg_data(h);
	g->cmd = cmd;
	g->version = NXQUOTA_FAMILY_VERSION;
	return m;
}

static void reply_free(struct reply *r)
{
	int i;

	for (i = 0; i < r->n; i++)
		free(r->m[i]);
	r->n = 0;
}

/* Read until the ack or DONE of @want_seq; 1 if the connection ended. */
static int read_reply(int fd, u32 want_seq, struct reply *r)
{
	static unsigned char buf[65536];
	struct nlmsghdr *h;
	ssize_t n;

	memset(r, 0, sizeof(*r));
	r->err = 1;
	for (;;) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < (ssize_t)NLMSG_HDRLEN)
			return 1;
		h = (struct nlmsghdr *)buf;
		if (h->nlmsg_len > n)
			return 1;
		if (h->nlmsg_seq != want_seq)
			continue;	/* an event, or an older answer */
		if (h->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr *e = nlmsg_data(h);
			struct nlattr *a;
			int rem;

			r->err = e->error;
			nla_for_each_attr(a, (struct nlattr *)
					  ((char *)e + sizeof(*e)),
					  (int)h->nlmsg_len -
					  (int)(NLMSG_HDRLEN + sizeof(*e)), rem)
				if (nla_type(a) == NLMSGERR_ATTR_MSG)
					snprintf(r->msg, sizeof(r->msg), "%s",
						 (char *)nla_data(a));
			return 0;
		}
		if (h->nlmsg_type == NLMSG_DONE) {
			r->done = true;
			r->err = 0;
			return 0;
		}
		if (r->n < MAXREP) {
			r->m[r->n] = malloc(h->nlmsg_len);
			memcpy(r->m[r->n++], h, h->nlmsg_len);
		}
	}
}

/* Send @m (freed) and read its answer; the ack's error. */
static int call(int fd, struct nl_msg *m, struct reply *r)
{
	struct nlmsghdr *h = nlmsg_hdr(m);
	u32 s = h->nlmsg_seq;

	if (send(fd, h, h->nlmsg_len, MSG_NOSIGNAL) != (ssize_t)h->nlmsg_len) {
		nlmsg_free(m);
		return 1;
	}
	nlmsg_free(m);
	if (read_reply(fd, s, r))
		return 1;
	return r->err;
}

/* The attributes of data message @i of @r. */
static void attrs(struct reply *r, int i, struct nlattr **tb, int maxattr)
{
	memset(tb, 0, sizeof(*tb) * (maxattr + 1));
	nla_parse(tb, maxattr, nlmsg_attrdata(r->m[i], GENL_HDRLEN),
		  nlmsg_attrlen(r->m[i], GENL_HDRLEN), NULL);
}

static int dev_add(int fd, const char *key, u64 cap, const char *devt,
		   struct reply *r)
{
	struct nl_msg *m = req(NXQUOTA_CMD_DEVICE_ADD, 0);

	nla_put_string(m, NXQUOTA_A_DEVICE_KEY, key);
	nla_put_u64(m, NXQUOTA_A_DEVICE_CAPACITY, cap);
	if (devt)
		nla_put_string(m, NXQUOTA_A_DEVICE_DEVT, devt);
	return call(fd, m, r);
}

static int dump(int fd, u8 cmd, int filter, const char *key, struct reply *r)
{
	struct nl_msg *m = req(cmd, NLM_F_DUMP);

	if (key)
		nla_put_string(m, filter, key);
	return call(fd, m, r);
}

/* Data message of a budget dump for @path, or -1. */
static int find_budget(struct reply *r, const char *path)
{
	struct nlattr *tb[NXQUOTA_A_BUDGET_LAST + 1];
	int i;

	for (i = 0; i < r->n; i++) {
		attrs(r, i, tb, NXQUOTA_A_BUDGET_LAST);
		if (tb[NXQUOTA_A_BUDGET_CGROUP_PATH] &&
		    !strcmp(nla_get_string(tb[NXQUOTA_A_BUDGET_CGROUP_PATH]),
			    path))
			return i;
	}
	return -1;
}

static int budget_set(int fd, const char *path, const char *dev, u64 max,
		      u64 min, int kill, u32 prio, struct reply *r)
{
	struct nl_msg *m = req(NXQUOTA_CMD_BUDGET_SET, 0);

	nla_put_string(m, NXQUOTA_A_BUDGET_CGROUP_PATH, path);
	nla_put_string(m, NXQUOTA_A_BUDGET_DEVICE, dev);
	if (max)
		nla_put_u64(m, NXQUOTA_A_BUDGET_MAX, max);
	nla_put_u64(m, NXQUOTA_A_BUDGET_MIN, min);
	if (kill >= 0)
		nla_put_u8(m, NXQUOTA_A_BUDGET_KILL_ON_IGNORE, kill);
	if (prio != U32_MAX)
		nla_put_u32(m, NXQUOTA_A_BUDGET_PRIORITY_MAX, prio);
	return call(fd, m, r);
}

/* ---- cases ------------------------------------------------------------- */

/*
 * 0600, and a peer that is not uid 0 is closed even if it gets in, with
 * CAP_SYS_ADMIN kept (nxqd_test_ctl_nocap: uid 0 without it).
 */
static void ctl_test_root_only(struct kunit *test)
{
	struct daemon d;
	struct reply r;
	struct stat st;
	int fd, status;
	pid_t pid;

	start(test, &d);
	KUNIT_ASSERT_EQ(test, stat(d.ctl, &st), 0);
	KUNIT_EXPECT_EQ(test, st.st_mode & 07777, 0600);
	KUNIT_EXPECT_TRUE(test, S_ISSOCK(st.st_mode));

	/* Open the file to everyone: the uid check must still refuse. */
	KUNIT_ASSERT_EQ(test, chmod(d.ctl, 0666), 0);
	chmod(d.dir, 0755);
	pid = fork();
	KUNIT_ASSERT_GE(test, pid, 0);
	if (!pid) {
		struct nl_msg *m;
		char buf[256];
		ssize_t n;

		struct __user_cap_header_struct h = {
			.version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct c[2] = {};

		/* uid 65534 that kept CAP_SYS_ADMIN: the uid check alone */
		c[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective =
		c[CAP_TO_INDEX(CAP_SYS_ADMIN)].permitted =
			CAP_TO_MASK(CAP_SYS_ADMIN);
		if (prctl(PR_SET_KEEPCAPS, 1) || setgid(65534) ||
		    setuid(65534) || syscall(SYS_capset, &h, c))
			_exit(10);
		fd = dial(d.ctl);
		if (fd < 0)
			_exit(11);
		m = req(NXQUOTA_CMD_DEVICE_ADD, 0);
		nla_put_string(m, NXQUOTA_A_DEVICE_KEY, "evil");
		nla_put_u64(m, NXQUOTA_A_DEVICE_CAPACITY, 1);
		send(fd, nlmsg_hdr(m), nlmsg_hdr(m)->nlmsg_len, MSG_NOSIGNAL);
		n = recv(fd, buf, sizeof(buf), 0);
		_exit(n <= 0 ? 0 : 12);	/* closed, no answer */
	}
	KUNIT_ASSERT_EQ(test, waitpid(pid, &status, 0), pid);
	KUNIT_EXPECT_TRUE(test, WIFEXITED(status));
	KUNIT_EXPECT_EQ(test, WEXITSTATUS(status), 0);

	/* Nothing was registered; root is served. */
	fd = dial(d.ctl);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_EXPECT_EQ(test, dump(fd, NXQUOTA_CMD_DEVICE_GET, 0, NULL, &r), 0);
	KUNIT_EXPECT_TRUE(test, r.done);
	KUNIT_EXPECT_EQ(test, r.n, 0);
	reply_free(&r);
	close(fd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	KUNIT_EXPECT_NE(test, access(d.ctl, F_OK), 0);	/* removed */
	cleanup(&d);
}

static void ctl_test_devices(struct kunit *test)
{
	struct nlattr *tb[NXQUOTA_A_DEVICE_MAX + 1];
	struct nl_msg *m;
	struct daemon d;
	struct reply r;
	int fd;

	start(test, &d);
	fd = dial(d.ctl);
	KUNIT_ASSERT_GE(test, fd, 0);

	KUNIT_EXPECT_EQ(test, dev_add(fd, "gpu0", 1 << 30, "195:0", &r), 0);
	KUNIT_EXPECT_EQ(test, dev_add(fd, "gpu0", 1 << 20, NULL, &r), -EEXIST);
	KUNIT_EXPECT_STREQ(test, r.msg, "device already registered");
	KUNIT_EXPECT_EQ(test, dev_add(fd, "bad/key", 1, NULL, &r), -EINVAL);
	KUNIT_EXPECT_EQ(test, dev_add(fd, "gpu1", 1, "0:0", &r), -EINVAL);
	KUNIT_EXPECT_EQ(test, dev_add(fd, "gpu1", 1, "195", &r), -EINVAL);
	m = req(NXQUOTA_CMD_DEVICE_ADD, 0);	/* no capacity */
	nla_put_string(m, NXQUOTA_A_DEVICE_KEY, "gpu1");
	KUNIT_EXPECT_EQ(test, call(fd, m, &r), -EINVAL);

	/* set: each attribute, and its refusals */
	m = req(NXQUOTA_CMD_DEVICE_SET, 0);
	nla_put_string(m, NXQUOTA_A_DEVICE_KEY, "gpu0");
	nla_put_u64(m, NXQUOTA_A_DEVICE_CAPACITY, 2ULL << 30);
	nla_put_u64(m, NXQUOTA_A_DEVICE_DEFAULT_MAX, 1 << 29);
	nla_put_u32(m, NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS, 250);
	KUNIT_EXPECT_EQ(test, call(fd, m, &r), 0);
	m = req(NXQUOTA_CMD_DEVICE_SET, 0);
	nla_put_string(m, NXQUOTA_A_DEVICE_KEY, "gpu0");
	nla_put_u32(m, NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS, 0);
	KUNIT_EXPECT_EQ(test, call(fd, m, &r), -ERANGE);	/* the policy's */
	m = req(NXQUOTA_CMD_DEVICE_SET, 0);
	nla_put_string(m, NXQUOTA_A_DEVICE_KEY, "gpu0");
	nla_put_u32(m, NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS, 3600001);
	KUNIT_EXPECT_EQ(test, call(fd, m, &r), -ERANGE);
	m = req(NXQUOTA_CMD_DEVICE_SET, 0);
	nla_put_string(m, NXQUOTA_A_DEVICE_KEY, "gpu0");
	KUNIT_EXPECT_EQ(test, call(fd, m, &r), -EINVAL);	/* nothing */
	m = req(NXQUOTA_CMD_DEVICE_SET, 0);
	nla_put_string(m, NXQUOTA_A_DEVICE_KEY, "nope");
	nla_put_u64(m, NXQUOTA_A_DEVICE_CAPACITY, 1);
	KUNIT_EXPECT_EQ(test, call(fd, m, &r), -ENODEV);

	KUNIT_ASSERT_EQ(test, dump(fd, NXQUOTA_CMD_DEVICE_GET, 0, NULL, &r), 0);
	KUNIT_ASSERT_EQ(test, r.n, 1);
	attrs(&r, 0, tb, NXQUOTA_A_DEVICE_MAX);
	KUNIT_ASSERT_NOT_NULL(test, tb[NXQUOTA_A_DEVICE_KEY]);
	KUNIT_EXPECT_STREQ(test, nla_get_string(tb[NXQUOTA_A_DEVICE_KEY]),
			   "gpu0");
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_DEVICE_CAPACITY]),
			2ULL << 30);
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_DEVICE_DEFAULT_MAX]),
			1ULL << 29);
	KUNIT_EXPECT_EQ(test,
			nla_get_u32(tb[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS]),
			250);
	KUNIT_ASSERT_NOT_NULL(test, tb[NXQUOTA_A_DEVICE_DEVT]);
	KUNIT_EXPECT_STREQ(test, nla_get_string(tb[NXQUOTA_A_DEVICE_DEVT]),
			   "195:0");
	KUNIT_EXPECT_EQ(test, nla_get_u32(tb[NXQUOTA_A_DEVICE_HOLDERS]), 0);
	KUNIT_ASSERT_NOT_NULL(test, tb[NXQUOTA_A_DEVICE_WAITERS]);
	KUNIT_EXPECT_EQ(test, nla_get_u32(tb[NXQUOTA_A_DEVICE_WAITERS]), 0);
	KUNIT_EXPECT_EQ(test, r.m[0]->nlmsg_flags & NLM_F_MULTI,
			NLM_F_MULTI);
	reply_free(&r);

	m = req(NXQUOTA_CMD_DEVICE_DEL, 0);
	nla_put_string(m, NXQUOTA_A_DEVICE_KEY, "nope");
	KUNIT_EXPECT_EQ(test, call(fd, m, &r), -ENODEV);
	m = req(NXQUOTA_CMD_DEVICE_DEL, 0);
	nla_put_string(m, NXQUOTA_A_DEVICE_KEY, "gpu0");
	KUNIT_EXPECT_EQ(test, call(fd, m, &r), 0);
	KUNIT_ASSERT_EQ(test, dump(fd, NXQUOTA_CMD_DEVICE_GET, 0, NULL, &r), 0);
	KUNIT_EXPECT_EQ(test, r.n, 0);
	reply_free(&r);
	close(fd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(&d);
}

static int raw_full(int fd, u8 cmd, int flags, u8 reserved,
		    const void *payload, size_t len, size_t cut,
		    struct reply *r);

/* Raw bytes: a genl header of @cmd with @flags, then @len bytes. */
static int raw(int fd, u8 cmd, int flags, const void *payload, size_t len,
	       size_t cut, struct reply *r)
{
	return raw_full(fd, cmd, flags, 0, payload, len, cut, r);
}

static int raw_hdr(int fd, u8 cmd, int flags, u8 reserved,
		   const void *payload, size_t len, struct reply *r)
{
	return raw_full(fd, cmd, flags, reserved, payload, len, 0, r);
}

static int raw_full(int fd, u8 cmd, int flags, u8 reserved,
		    const void *payload, size_t len, size_t cut,
		    struct reply *r)
{
	unsigned char buf[512];
	struct nlmsghdr *h = (void *)buf;
	struct genlmsghdr *g = (void *)(buf + NLMSG_HDRLEN);

	memset(buf, 0, sizeof(buf));
	h->nlmsg_len = NLMSG_HDRLEN + GENL_HDRLEN + len - cut;
	h->nlmsg_type = NXQD_GENL_ID;
	h->nlmsg_flags = flags;
	h->nlmsg_seq = seq++;
	g->cmd = cmd;
	g->version = NXQUOTA_FAMILY_VERSION;
	g->reserved = reserved;
	memcpy(buf + NLMSG_HDRLEN + GENL_HDRLEN, payload, len);
	if (send(fd, buf, h->nlmsg_len, MSG_NOSIGNAL) != (ssize_t)h->nlmsg_len)
		return 1;
	if (read_reply(fd, h->nlmsg_seq, r))
		return 1;
	return r->err;
}

/* One attribute of @type, @len bytes of @data, at @p; its aligned size. */
static size_t put_attr(unsigned char *p, u16 type, const void *data, u16 len)
{
	struct nlattr *a = (void *)p;

	a->nla_len = NLA_HDRLEN + len;
	a->nla_type = type;
	memcpy(p + NLA_HDRLEN, data, len);
	return NLA_ALIGN(a->nla_len);
}

/*
 * The kernel's strict validation, each refusal with its errno, and none
 * of them changes anything.
 */
static void ctl_test_validation(struct kunit *test)
{
	const int rq = NLM_F_REQUEST | NLM_F_ACK;
	unsigned char p[256];
	u64 cap = 1 << 20;
	u32 cap32 = 1 << 20;
	char longkey[80];
	struct nl_msg *m;
	struct daemon d;
	struct reply r;
	size_t n;
	u8 two = 2;
	int fd;

	start(test, &d);
	fd = dial(d.ctl);
	KUNIT_ASSERT_GE(test, fd, 0);

	/* The well-formed request, by hand, is accepted. */
	n = put_attr(p, NXQUOTA_A_DEVICE_KEY, "ok0", 4);
	n += put_attr(p + n, NXQUOTA_A_DEVICE_CAPACITY, &cap, 8);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_ADD, rq, p, n, 0, &r),
			0);

	/* Above maxattr */
	n = put_attr(p, NXQUOTA_A_DEVICE_KEY, "x1", 3);
	n += put_attr(p + n, NXQUOTA_A_DEVICE_CAPACITY, &cap, 8);
	n += put_attr(p + n, NXQUOTA_A_DEVICE_DEFAULT_MAX, &cap, 8);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_ADD, rq, p, n, 0, &r),
			-EINVAL);
	KUNIT_EXPECT_STREQ(test, r.msg, "Unknown attribute type");
	/* Below maxattr but not in the policy */
	n = put_attr(p, NXQUOTA_A_DEVICE_KEY, "x2", 3);
	n += put_attr(p + n, NXQUOTA_A_DEVICE_CAPACITY, &cap, 8);
	n += put_attr(p + n, NXQUOTA_A_DEVICE_USED, &cap, 8);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_ADD, rq, p, n, 0, &r),
			-EINVAL);
	/* A u64 of 4 bytes */
	n = put_attr(p, NXQUOTA_A_DEVICE_KEY, "x3", 3);
	n += put_attr(p + n, NXQUOTA_A_DEVICE_CAPACITY, &cap32, 4);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_ADD, rq, p, n, 0, &r),
			-EINVAL);
	/* A string without its NUL */
	n = put_attr(p, NXQUOTA_A_DEVICE_KEY, "x4", 2);
	n += put_attr(p + n, NXQUOTA_A_DEVICE_CAPACITY, &cap, 8);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_ADD, rq, p, n, 0, &r),
			-EINVAL);
	/* A key of 64 characters: no NUL within the policy's 63 + 1 */
	memset(longkey, 'k', 64);
	longkey[64] = 0;
	n = put_attr(p, NXQUOTA_A_DEVICE_KEY, longkey, 65);
	n += put_attr(p + n, NXQUOTA_A_DEVICE_CAPACITY, &cap, 8);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_ADD, rq, p, n, 0, &r),
			-EINVAL);
	/* "k" and its NUL, then bytes: an attribute longer than 63 */
	memset(longkey, 'x', 70);
	longkey[0] = 'k';
	longkey[1] = 0;
	n = put_attr(p, NXQUOTA_A_DEVICE_KEY, longkey, 70);
	n += put_attr(p + n, NXQUOTA_A_DEVICE_CAPACITY, &cap, 8);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_ADD, rq, p, n, 0, &r),
			-ERANGE);
	/* Bytes left over: a truncated attribute header */
	n = put_attr(p, NXQUOTA_A_DEVICE_KEY, "x5", 3);
	n += put_attr(p + n, NXQUOTA_A_DEVICE_CAPACITY, &cap, 8);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_ADD, rq, p, n + 4, 0,
				  &r), -EINVAL);
	KUNIT_EXPECT_STREQ(test, r.msg,
			   "bytes leftover after parsing attributes");
	/* NLA_F_NESTED on a scalar */
	n = put_attr(p, NXQUOTA_A_DEVICE_KEY, "x6", 3);
	n += put_attr(p + n, NXQUOTA_A_DEVICE_CAPACITY | NLA_F_NESTED, &cap, 8);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_ADD, rq, p, n, 0, &r),
			-EINVAL);
	/* kill-on-ignore is 0 or 1 */
	n = put_attr(p, NXQUOTA_A_BUDGET_DEVICE, "ok0", 4);
	n += put_attr(p + n, NXQUOTA_A_BUDGET_CGROUP_PATH, "/a", 3);
	n += put_attr(p + n, NXQUOTA_A_BUDGET_KILL_ON_IGNORE, &two, 1);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_BUDGET_SET, rq, p, n, 0, &r),
			-ERANGE);
	/* The genl header's reserved byte; flags genl does not take */
	n = put_attr(p, NXQUOTA_A_DEVICE_KEY, "x7", 3);
	n += put_attr(p + n, NXQUOTA_A_DEVICE_CAPACITY, &cap, 8);
	KUNIT_EXPECT_EQ(test, raw_hdr(fd, NXQUOTA_CMD_DEVICE_ADD, rq, 1, p, n,
				      &r), -EINVAL);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_ADD,
				  rq | NLM_F_REPLACE, p, n, 0, &r), -EINVAL);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_GET, rq | NLM_F_ROOT,
				  p, 0, 0, &r), -EINVAL);	/* half a dump */
	/* A command without a policy takes no attribute */
	n = put_attr(p, NXQUOTA_A_DEVICE_KEY, "ok0", 4);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_GET, rq | NLM_F_DUMP,
				  p, n, 0, &r), -EINVAL);
	/* Commands: unknown, a do of a dump, a dump of a do */
	KUNIT_EXPECT_EQ(test, raw(fd, 200, rq, p, 0, 0, &r), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_GET, rq, p, 0, 0, &r),
			-EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_ADD, rq | NLM_F_DUMP,
				  p, 0, 0, &r), -EOPNOTSUPP);
	/* Shorter than the genl header */
	KUNIT_EXPECT_EQ(test, raw(fd, NXQUOTA_CMD_DEVICE_ADD, rq, p, 0, 2, &r),
			-EINVAL);
	/* Not a request: no answer at all, so the next answer is the next's */
	m = req(NXQUOTA_CMD_DEVICE_ADD, 0);
	nlmsg_hdr(m)->nlmsg_flags &= ~NLM_F_REQUEST;
	nla_put_string(m, NXQUOTA_A_DEVICE_KEY, "noreq");
	nla_put_u64(m, NXQUOTA_A_DEVICE_CAPACITY, 1);
	KUNIT_EXPECT_EQ(test, send(fd, nlmsg_hdr(m), nlmsg_hdr(m)->nlmsg_len,
				   0), (ssize_t)nlmsg_hdr(m)->nlmsg_len);
	nlmsg_free(m);

	/* Of all that, only ok0 exists. */
	KUNIT_ASSERT_EQ(test, dump(fd, NXQUOTA_CMD_DEVICE_GET, 0, NULL, &r), 0);
	KUNIT_EXPECT_EQ(test, r.n, 1);
	reply_free(&r);
	/* A dump's filter of an unknown device: -ENODEV, as the module. */
	KUNIT_EXPECT_EQ(test, dump(fd, NXQUOTA_CMD_BUDGET_GET,
				   NXQUOTA_A_BUDGET_DEVICE, "nope", &r), -ENODEV);
	KUNIT_EXPECT_EQ(test, dump(fd, NXQUOTA_CMD_HOLDER_GET,
				   NXQUOTA_A_HOLDER_DEVICE, "nope", &r), -ENODEV);
	close(fd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(&d);
}

static void ctl_test_budgets(struct kunit *test)
{
	struct nlattr *tb[NXQUOTA_A_BUDGET_LAST + 1];
	struct nl_msg *m;
	struct daemon d;
	struct reply r;
	u64 root_id, a_id;
	int fd, i;

	start(test, &d);
	fd = dial(d.ctl);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_ASSERT_EQ(test, dev_add(fd, "gpu0", 8ULL << 30, NULL, &r), 0);

	KUNIT_EXPECT_EQ(test, budget_set(fd, "/a/b", "gpu0", 1ULL << 30,
					 1ULL << 29, 1, 3, &r), 0);
	KUNIT_EXPECT_EQ(test, budget_set(fd, "a/b", "gpu0", 1, 0, -1,
					 U32_MAX, &r), -EINVAL);
	KUNIT_EXPECT_STREQ(test, r.msg, "a cgroup path starts with /");
	KUNIT_EXPECT_EQ(test, budget_set(fd, "/nope", "gpu0", 1, 0, -1,
					 U32_MAX, &r), -ENOENT);
	KUNIT_EXPECT_STREQ(test, r.msg, "no such cgroup");
	KUNIT_EXPECT_EQ(test, budget_set(fd, "/a", "nope", 1, 0, -1, U32_MAX,
					 &r), -ENODEV);
	/* the spec's bound (NXQ_LIMITS), in the policy: ERANGE */
	KUNIT_EXPECT_EQ(test, budget_set(fd, "/a", "gpu0", 1, 0, -1,
					 NXQ_PRIORITY_MAX + 1, &r), -ERANGE);
	m = req(NXQUOTA_CMD_BUDGET_SET, 0);	/* nothing to set */
	nla_put_string(m, NXQUOTA_A_BUDGET_CGROUP_PATH, "/a");
	nla_put_string(m, NXQUOTA_A_BUDGET_DEVICE, "gpu0");
	KUNIT_EXPECT_EQ(test, call(fd, m, &r), -EINVAL);

	/* The chain /, /a, /a/b, with ids, parents, paths and values. */
	KUNIT_ASSERT_EQ(test, dump(fd, NXQUOTA_CMD_BUDGET_GET,
				   NXQUOTA_A_BUDGET_DEVICE, "gpu0", &r), 0);
	KUNIT_EXPECT_EQ(test, r.n, 3);
	i = find_budget(&r, "/");
	KUNIT_ASSERT_GE(test, i, 0);
	attrs(&r, i, tb, NXQUOTA_A_BUDGET_LAST);
	KUNIT_EXPECT_NULL(test, tb[NXQUOTA_A_BUDGET_PARENT_ID]);
	root_id = nla_get_u64(tb[NXQUOTA_A_BUDGET_CGROUP_ID]);
	i = find_budget(&r, "/a");
	KUNIT_ASSERT_GE(test, i, 0);
	attrs(&r, i, tb, NXQUOTA_A_BUDGET_LAST);
	KUNIT_ASSERT_NOT_NULL(test, tb[NXQUOTA_A_BUDGET_PARENT_ID]);
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_BUDGET_PARENT_ID]),
			root_id);
	a_id = nla_get_u64(tb[NXQUOTA_A_BUDGET_CGROUP_ID]);
	i = find_budget(&r, "/a/b");
	KUNIT_ASSERT_GE(test, i, 0);
	attrs(&r, i, tb, NXQUOTA_A_BUDGET_LAST);
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_BUDGET_PARENT_ID]),
			a_id);
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_BUDGET_MAX]),
			1ULL << 30);
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_BUDGET_MIN]),
			1ULL << 29);
	KUNIT_EXPECT_EQ(test, nla_get_u8(tb[NXQUOTA_A_BUDGET_KILL_ON_IGNORE]),
			1);
	KUNIT_EXPECT_EQ(test,
			nla_get_u32(tb[NXQUOTA_A_BUDGET_PRIORITY_MAX]), 3);
	reply_free(&r);

	/* clear: /a/b's node goes, with its now needless ancestors */
	m = req(NXQUOTA_CMD_BUDGET_CLEAR, 0);
	nla_put_string(m, NXQUOTA_A_BUDGET_CGROUP_PATH, "/a/b");
	nla_put_string(m, NXQUOTA_A_BUDGET_DEVICE, "gpu0");
	KUNIT_EXPECT_EQ(test, call(fd, m, &r), 0);
	KUNIT_ASSERT_EQ(test, dump(fd, NXQUOTA_CMD_BUDGET_GET, 0, NULL, &r), 0);
	KUNIT_EXPECT_LT(test, find_budget(&r, "/a/b"), 0);
	reply_free(&r);
	/* the holder dump is served (no holder here) */
	KUNIT_EXPECT_EQ(test, dump(fd, NXQUOTA_CMD_HOLDER_GET, 0, NULL, &r), 0);
	KUNIT_EXPECT_TRUE(test, r.done);
	KUNIT_EXPECT_EQ(test, r.n, 0);
	close(fd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(&d);
}

/* Next event on @fd within @ms: its type, 0 if none. */
static u32 next_event(int fd, int ms, struct nlattr **tb)
{
	static unsigned char buf[4096];
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	struct nlmsghdr *h = (void *)buf;
	struct genlmsghdr *g;
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (;;) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < (ssize_t)(NLMSG_HDRLEN + GENL_HDRLEN))
			return 0;
		g = nlmsg_data(h);
		if (h->nlmsg_type != NXQD_GENL_ID ||
		    g->cmd != NXQUOTA_CMD_EVENT)
			continue;
		memset(tb, 0, sizeof(*tb) * (NXQUOTA_A_EVENT_MAX + 1));
		nla_parse(tb, NXQUOTA_A_EVENT_MAX, nlmsg_attrdata(h, GENL_HDRLEN),
			  nlmsg_attrlen(h, GENL_HDRLEN), NULL);
		return tb[NXQUOTA_A_EVENT_TYPE] ?
		       nla_get_u32(tb[NXQUOTA_A_EVENT_TYPE]) : 0;
	}
}

/* Read the events waiting on @fd without blocking; how many. */
static int drain(int fd, u64 *last_max, u64 *last_min)
{
	struct nlattr *tb[NXQUOTA_A_EVENT_MAX + 1];
	static unsigned char buf[4096];
	struct nlmsghdr *h = (void *)buf;
	int count = 0;
	ssize_t n;

	for (;;) {
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < (ssize_t)(NLMSG_HDRLEN + GENL_HDRLEN))
			return count;
		if (h->nlmsg_type != NXQD_GENL_ID)
			continue;
		nla_parse(tb, NXQUOTA_A_EVENT_MAX,
			  nlmsg_attrdata(h, GENL_HDRLEN),
			  nlmsg_attrlen(h, GENL_HDRLEN), NULL);
		if (!tb[NXQUOTA_A_EVENT_TYPE] ||
		    nla_get_u32(tb[NXQUOTA_A_EVENT_TYPE]) !=
		    NXQUOTA_EVENT_TYPE_BUDGET_CHANGED)
			continue;
		count++;
		*last_max = nla_get_u64(tb[NXQUOTA_A_EVENT_BYTES]);
		*last_min = nla_get_u64(tb[NXQUOTA_A_EVENT_VALUE]);
	}
}

static void ctl_test_events(struct kunit *test)
{
	struct nlattr *tb[NXQUOTA_A_EVENT_MAX + 1];
	struct nlattr *dtb[NXQUOTA_A_DEVICE_MAX + 1];
	int fd, sub, other, stuck, i, sndbuf = 4096;
	u64 dropped, last_max = 0, last_min = 0;
	struct daemon d;
	struct reply r;
	int seen = 0, k;

	start(test, &d);
	fd = dial(d.ctl);
	sub = dial(d.ctl);
	other = dial(d.ctl);
	stuck = dial(d.ctl);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_ASSERT_GE(test, sub, 0);
	KUNIT_ASSERT_GE(test, other, 0);
	KUNIT_ASSERT_GE(test, stuck, 0);
	KUNIT_ASSERT_EQ(test, call(sub, req(NXQUOTA_CMD_EVENT, 0), &r), 0);

	KUNIT_ASSERT_EQ(test, dev_add(fd, "gpu0", 1 << 30, NULL, &r), 0);
	KUNIT_ASSERT_EQ(test, next_event(sub, 2000, tb),
			NXQUOTA_EVENT_TYPE_DEVICE_ADDED);
	KUNIT_EXPECT_STREQ(test, nla_get_string(tb[NXQUOTA_A_EVENT_DEVICE]),
			   "gpu0");
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_EVENT_BYTES]), 1 << 30);
	KUNIT_ASSERT_EQ(test, budget_set(fd, "/c", "gpu0", 1 << 20, 0, -1,
					 U32_MAX, &r), 0);
	KUNIT_ASSERT_EQ(test, next_event(sub, 2000, tb),
			NXQUOTA_EVENT_TYPE_BUDGET_CHANGED);
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_EVENT_BYTES]), 1 << 20);
	KUNIT_EXPECT_NOT_NULL(test, tb[NXQUOTA_A_EVENT_CGROUP_ID]);
	/* A connection that did not subscribe gets none. */
	KUNIT_EXPECT_EQ(test, next_event(other, 200, tb), 0);
	KUNIT_EXPECT_EQ(test, dump(fd, NXQUOTA_CMD_DEVICE_GET, 0, NULL, &r), 0);
	attrs(&r, 0, dtb, NXQUOTA_A_DEVICE_MAX);
	KUNIT_EXPECT_EQ(test,
			nla_get_u64(dtb[NXQUOTA_A_DEVICE_EVENTS_DROPPED]), 0);
	reply_free(&r);

	/*
	 * A subscriber that never reads: the daemon must not block on it,
	 * and what it loses is counted.  (A seqpacket sender is bounded by
	 * its own send buffer; the daemon's is the default one.)
	 */
	usleep_range(100000, 110000);
	drain(sub, &last_max, &last_min);	/* the min's event, above */
	setsockopt(stuck, SOL_SOCKET, SO_RCVBUF, &sndbuf, sizeof(sndbuf));
	KUNIT_ASSERT_EQ(test, call(stuck, req(NXQUOTA_CMD_EVENT, 0), &r), 0);
	for (i = 0; i < 600; i++) {
		KUNIT_ASSERT_EQ(test, budget_set(fd, "/c", "gpu0",
						 (1 << 20) + i, i, -1, U32_MAX,
						 &r), 0);
		/* a reader that keeps up: both events before the next set */
		for (k = 0; k < 2000 && seen < 2 * (i + 1); k++) {
			seen += drain(sub, &last_max, &last_min);
			if (seen < 2 * (i + 1))
				usleep_range(1000, 1100);
		}
	}
	/* the reader that kept reading got every one, the last one last */
	for (i = 0; i < 200 && seen < 1200; i++) {
		usleep_range(10000, 11000);
		seen += drain(sub, &last_max, &last_min);
	}
	KUNIT_EXPECT_EQ(test, seen, 1200);
	KUNIT_EXPECT_EQ(test, last_max, (1 << 20) + 599);
	KUNIT_EXPECT_EQ(test, last_min, 599);
	KUNIT_ASSERT_EQ(test, dump(fd, NXQUOTA_CMD_DEVICE_GET, 0, NULL, &r), 0);
	attrs(&r, 0, dtb, NXQUOTA_A_DEVICE_MAX);
	dropped = nla_get_u64(dtb[NXQUOTA_A_DEVICE_EVENTS_DROPPED]);
	KUNIT_EXPECT_GT(test, dropped, 0);
	KUNIT_EXPECT_LT(test, dropped, 1200);
	/* by type: all of them budget changes */
	KUNIT_ASSERT_NOT_NULL(test,
		dtb[NXQUOTA_A_DEVICE_EVENTS_DROPPED_BUDGET_CHANGED]);
	KUNIT_EXPECT_EQ(test, nla_get_u64(
		dtb[NXQUOTA_A_DEVICE_EVENTS_DROPPED_BUDGET_CHANGED]), dropped);
	KUNIT_EXPECT_EQ(test, nla_get_u64(
		dtb[NXQUOTA_A_DEVICE_EVENTS_DROPPED_DENIED]), 0);
	KUNIT_EXPECT_EQ(test, nla_get_u64(
		dtb[NXQUOTA_A_DEVICE_EVENTS_DROPPED_KILLED]), 0);
	reply_free(&r);
	close(stuck);
	close(other);
	close(sub);
	close(fd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(&d);
}

static ssize_t read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* Devices and budgets survive a restart (and a SIGKILL). */
static void ctl_test_restart(struct kunit *test)
{
	struct nlattr *tb[NXQUOTA_A_BUDGET_LAST + 1];
	char path[700], before[4096], after[4096];
	struct nl_msg *m;
	struct daemon d;
	struct reply r;
	int fd, i, f;

	start(test, &d);
	fd = dial(d.ctl);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_ASSERT_EQ(test, dev_add(fd, "gpu0", 8ULL << 30, "195:1", &r), 0);
	KUNIT_ASSERT_EQ(test, dev_add(fd, "gpu1", 4ULL << 30, NULL, &r), 0);
	m = req(NXQUOTA_CMD_DEVICE_SET, 0);
	nla_put_string(m, NXQUOTA_A_DEVICE_KEY, "gpu1");
	nla_put_u64(m, NXQUOTA_A_DEVICE_DEFAULT_MAX, NXQ_UNLIMITED);
	nla_put_u32(m, NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS, 777);
	KUNIT_ASSERT_EQ(test, call(fd, m, &r), 0);
	KUNIT_ASSERT_EQ(test, budget_set(fd, "/a/b", "gpu0", 3ULL << 30,
					 1ULL << 30, 1, 2, &r), 0);
	KUNIT_ASSERT_EQ(test, budget_set(fd, "/c", "gpu1", 0, 5 << 20, -1,
					 U32_MAX, &r), 0);
	KUNIT_ASSERT_EQ(test, budget_set(fd, "/a", "gpu0", 0, 3ULL << 30, -1,
					 U32_MAX, &r), 0);
	/* a name with a blank and a '%': written escaped, read back */
	KUNIT_ASSERT_EQ(test, mkcg(&d, "/s p%"), 0);
	KUNIT_ASSERT_EQ(test, budget_set(fd, "/s p%", "gpu1", 9 << 20, 0, -1,
					 U32_MAX, &r), 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/state", d.state);
	KUNIT_ASSERT_TRUE(test, read_file(path, before, sizeof(before)) > 0);
	/* A crash: no chance to write anything at exit. */
	KUNIT_EXPECT_EQ(test, stop(&d, SIGKILL), 128 + SIGKILL);
	spawn(test, &d);
	KUNIT_ASSERT_TRUE(test, wait_up(&d));
	fd = dial(d.ctl);
	KUNIT_ASSERT_GE(test, fd, 0);

	KUNIT_ASSERT_EQ(test, dump(fd, NXQUOTA_CMD_DEVICE_GET, 0, NULL, &r), 0);
	KUNIT_ASSERT_EQ(test, r.n, 2);
	for (i = 0; i < 2; i++) {
		struct nlattr *dtb[NXQUOTA_A_DEVICE_MAX + 1];
		const char *key;

		attrs(&r, i, dtb, NXQUOTA_A_DEVICE_MAX);
		key = nla_get_string(dtb[NXQUOTA_A_DEVICE_KEY]);
		if (!strcmp(key, "gpu0")) {
			KUNIT_EXPECT_EQ(test, nla_get_u64(
				dtb[NXQUOTA_A_DEVICE_CAPACITY]), 8ULL << 30);
			KUNIT_ASSERT_NOT_NULL(test, dtb[NXQUOTA_A_DEVICE_DEVT]);
			KUNIT_EXPECT_STREQ(test, nla_get_string(
				dtb[NXQUOTA_A_DEVICE_DEVT]), "195:1");
			KUNIT_EXPECT_EQ(test, nla_get_u64(
				dtb[NXQUOTA_A_DEVICE_DEFAULT_MAX]), 0);
		} else {
			KUNIT_EXPECT_STREQ(test, key, "gpu1");
			KUNIT_EXPECT_EQ(test, nla_get_u64(
				dtb[NXQUOTA_A_DEVICE_CAPACITY]), 4ULL << 30);
			KUNIT_EXPECT_NULL(test, dtb[NXQUOTA_A_DEVICE_DEVT]);
			KUNIT_EXPECT_EQ(test, nla_get_u64(
				dtb[NXQUOTA_A_DEVICE_DEFAULT_MAX]),
				NXQ_UNLIMITED);
			KUNIT_EXPECT_EQ(test, nla_get_u32(
				dtb[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS]), 777);
		}
	}
	reply_free(&r);

	KUNIT_ASSERT_EQ(test, dump(fd, NXQUOTA_CMD_BUDGET_GET,
				   NXQUOTA_A_BUDGET_DEVICE, "gpu0", &r), 0);
	i = find_budget(&r, "/a/b");
	KUNIT_ASSERT_GE(test, i, 0);
	attrs(&r, i, tb, NXQUOTA_A_BUDGET_LAST);
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_BUDGET_MAX]),
			3ULL << 30);
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_BUDGET_MIN]),
			1ULL << 30);
	KUNIT_EXPECT_EQ(test, nla_get_u8(tb[NXQUOTA_A_BUDGET_KILL_ON_IGNORE]),
			1);
	KUNIT_EXPECT_EQ(test,
			nla_get_u32(tb[NXQUOTA_A_BUDGET_PRIORITY_MAX]), 2);
	i = find_budget(&r, "/a");
	KUNIT_ASSERT_GE(test, i, 0);
	attrs(&r, i, tb, NXQUOTA_A_BUDGET_LAST);
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_BUDGET_MIN]), 3ULL << 30);
	reply_free(&r);
	KUNIT_ASSERT_EQ(test, dump(fd, NXQUOTA_CMD_BUDGET_GET,
				   NXQUOTA_A_BUDGET_DEVICE, "gpu1", &r), 0);
	i = find_budget(&r, "/c");
	KUNIT_ASSERT_GE(test, i, 0);
	attrs(&r, i, tb, NXQUOTA_A_BUDGET_LAST);
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_BUDGET_MIN]), 5 << 20);
	/* no max of its own: absent; a min alone lifts default_max */
	KUNIT_EXPECT_NULL(test, tb[NXQUOTA_A_BUDGET_MAX]);
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_BUDGET_EFFECTIVE_MAX]),
			NXQ_UNLIMITED);
	i = find_budget(&r, "/s p%");
	KUNIT_ASSERT_GE(test, i, 0);
	attrs(&r, i, tb, NXQUOTA_A_BUDGET_LAST);
	KUNIT_EXPECT_EQ(test, nla_get_u64(tb[NXQUOTA_A_BUDGET_MAX]), 9 << 20);
	reply_free(&r);
	/*
	 * What the restarted daemon holds is what it had, own values and
	 * unset ones alike (no own max on /a, inherited limits): a change
	 * that changes nothing saves the same file.
	 */
	m = req(NXQUOTA_CMD_DEVICE_SET, 0);
	nla_put_string(m, NXQUOTA_A_DEVICE_KEY, "gpu1");
	nla_put_u32(m, NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS, 777);
	KUNIT_ASSERT_EQ(test, call(fd, m, &r), 0);
	KUNIT_ASSERT_TRUE(test, read_file(path, after, sizeof(after)) > 0);
	KUNIT_EXPECT_STREQ(test, after, before);
	close(fd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);

	/*
	 * A cgroup gone while the daemon was down: its budget is dropped,
	 * the daemon starts.
	 */
	KUNIT_ASSERT_EQ(test, mkcg(&d, "/c") == -EEXIST, true);
	rmcg(&d, "/c");
	spawn(test, &d);
	KUNIT_ASSERT_TRUE(test, wait_up(&d));
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);

	/* A state file it cannot read: it refuses to start, and leaves it. */
	f = open(path, O_WRONLY | O_APPEND);
	KUNIT_ASSERT_GE(test, f, 0);
	KUNIT_ASSERT_EQ(test, write(f, "budget gpu0\n", 12), 12);
	close(f);
	spawn(test, &d);
	KUNIT_EXPECT_FALSE(test, wait_up(&d));
	KUNIT_EXPECT_EQ(test, d.pid, 0);	/* it exited */
	cleanup(&d);
}

/*
 * The state file, the last door of the budget table (NXQ_BUDGET_FIELDS;
 * none named here): every field a node keeps, set away from its default
 * through the control socket, is in the state file as NAME=VALUE, and
 * after a SIGKILL and a restart the dump gives each back as it was set.
 * A modifier of the request (a flag) is not written.
 */
struct st_field {
	const char *name;
	int attr, unit, parse, kept;
	u64 hi;
};

#define ST_FIELD(n, N, a, u, p, lo, hi, d, w, lim, kept)	\
	{ #n, a, u, p, kept, hi },
static const struct st_field st_fields[] = { NXQ_BUDGET_FIELDS(ST_FIELD) };
#undef ST_FIELD

/* Field @i's value in this case: 1G for a size, on for a boolean, else
 * its largest less i (none is its default). */
static u64 st_value(int i)
{
	const struct st_field *f = &st_fields[i];

	if (f->unit == NXQ_UNIT_BYTES)
		return 1ULL << 30;
	if (f->unit == NXQ_UNIT_BOOL || f->unit == NXQ_UNIT_FLAG)
		return 1;
	return f->hi - i;
}

static void ctl_test_state_fields(struct kunit *test)
{
	struct nlattr *tb[NXQUOTA_A_BUDGET_LAST + 1];
	char path[700], text[4096], word[96];
	int n = (int)ARRAY_SIZE(st_fields);
	struct nl_msg *m;
	struct daemon d;
	struct reply r;
	int fd, i;
	u64 v;

	KUNIT_ASSERT_EQ(test, n, NXQ_NR_BUDGET_FIELDS);
	start(test, &d);
	fd = dial(d.ctl);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_ASSERT_EQ(test, dev_add(fd, "gpu0", 8ULL << 30, NULL, &r), 0);
	m = req(NXQUOTA_CMD_BUDGET_SET, 0);
	nla_put_string(m, NXQUOTA_A_BUDGET_CGROUP_PATH, "/a");
	nla_put_string(m, NXQUOTA_A_BUDGET_DEVICE, "gpu0");
	for (i = 0; i < n; i++) {
		if (st_fields[i].unit == NXQ_UNIT_BYTES)
			nla_put_u64(m, st_fields[i].attr, st_value(i));
		else if (st_fields[i].unit == NXQ_UNIT_BOOL)
			nla_put_u8(m, st_fields[i].attr, st_value(i));
		else if (st_fields[i].unit == NXQ_UNIT_FLAG)
			nla_put_flag(m, st_fields[i].attr);
		else
			nla_put_u32(m, st_fields[i].attr, st_value(i));
	}
	KUNIT_ASSERT_EQ_MSG(test, call(fd, m, &r), 0, "%s", r.msg);
	close(fd);

	snprintf(path, sizeof(path), "%s/state", d.state);
	KUNIT_ASSERT_TRUE(test, read_file(path, text, sizeof(text)) > 0);
	for (i = 0; i < n; i++) {
		snprintf(word, sizeof(word), " %s=%llu", st_fields[i].name,
			 (unsigned long long)st_value(i));
		if (st_fields[i].kept)
			KUNIT_EXPECT_TRUE_MSG(test, strstr(text, word) != NULL,
					      "no%s in %s", word, text);
		snprintf(word, sizeof(word), " %s", st_fields[i].name);
		if (!st_fields[i].kept)
			KUNIT_EXPECT_TRUE_MSG(test, strstr(text, word) == NULL,
					      "%s in %s", word, text);
	}

	KUNIT_EXPECT_EQ(test, stop(&d, SIGKILL), 128 + SIGKILL);
	spawn(test, &d);
	KUNIT_ASSERT_TRUE(test, wait_up(&d));
	fd = dial(d.ctl);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_ASSERT_EQ(test, dump(fd, NXQUOTA_CMD_BUDGET_GET,
				   NXQUOTA_A_BUDGET_DEVICE, "gpu0", &r), 0);
	i = find_budget(&r, "/a");
	KUNIT_ASSERT_GE(test, i, 0);
	attrs(&r, i, tb, NXQUOTA_A_BUDGET_LAST);
	for (i = 0; i < n; i++) {
		if (!st_fields[i].kept)
			continue;
		KUNIT_EXPECT_TRUE_MSG(test, tb[st_fields[i].attr] != NULL,
				      "%s not in the dump", st_fields[i].name);
		if (!tb[st_fields[i].attr])
			continue;
		v = st_fields[i].unit == NXQ_UNIT_BYTES ?
		    nla_get_u64(tb[st_fields[i].attr]) :
		    st_fields[i].unit == NXQ_UNIT_BOOL ?
		    nla_get_u8(tb[st_fields[i].attr]) :
		    nla_get_u32(tb[st_fields[i].attr]);
		KUNIT_EXPECT_EQ_MSG(test, v, st_value(i), "%s after a restart",
				    st_fields[i].name);
	}
	reply_free(&r);
	close(fd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(&d);
}

/*
 * The state file, the door of the device table (NXQ_DEVICE_FIELDS; none
 * named here): every field device-set changes, set away from its default,
 * is in the state file as NAME=VALUE and back after a SIGKILL and a
 * restart; a file of the format before the table ("device KEY
 * capacity=.. devt=.. default_max=.. ticket_timeout_ms=..", in that
 * order) loads as it did, a field out of its bounds does not.
 */
struct st_dfield {
	const char *name;
	int attr, unit;
	u64 lo, hi, dflt;
};

#define ST_DFIELD(n, N, a, u, p, lo, hi, d, w, add, set)	\
	{ #n, a, u, lo, hi, d },
static const struct st_dfield st_dfields[] = {
	NXQ_DEVICE_FIELDS(ST_DFIELD)
};
#undef ST_DFIELD

/* Field @i's value: 1G + i for a size, else its largest less i. */
static u64 st_dvalue(int i)
{
	if (st_dfields[i].unit == NXQ_UNIT_BYTES)
		return (1ULL << 30) + i;
	return st_dfields[i].hi - i;
}

/* Device @key's dump, each field of the table into @v; 0 or -ENOENT. */
static int st_dev_get(int fd, const char *key, u64 *v)
{
	struct nlattr *tb[NXQUOTA_A_DEVICE_MAX + 1];
	struct reply r;
	int i, f, err = -ENOENT;

	if (dump(fd, NXQUOTA_CMD_DEVICE_GET, 0, NULL, &r))
		return -EIO;
	for (i = 0; i < r.n; i++) {
		attrs(&r, i, tb, NXQUOTA_A_DEVICE_MAX);
		if (strcmp(nla_get_string(tb[NXQUOTA_A_DEVICE_KEY]), key))
			continue;
		for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++)
			v[f] = !tb[st_dfields[f].attr] ? ~0ULL - 1 :
			       st_dfields[f].unit == NXQ_UNIT_BYTES ?
			       nla_get_u64(tb[st_dfields[f].attr]) :
			       nla_get_u32(tb[st_dfields[f].attr]);
		err = 0;
	}
	reply_free(&r);
	return err;
}

static void ctl_test_state_devices(struct kunit *test)
{
	u64 v[NXQ_NR_DEVICE_FIELDS];
	char path[700], text[4096], word[96];
	struct nl_msg *m;
	struct daemon d;
	struct reply r;
	int fd, f, i;

	KUNIT_ASSERT_EQ(test, (int)ARRAY_SIZE(st_dfields), NXQ_NR_DEVICE_FIELDS);
	start(test, &d);
	fd = dial(d.ctl);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_ASSERT_EQ(test, dev_add(fd, "gpu0", 8ULL << 30, NULL, &r), 0);
	/* a device starts with the table's defaults */
	KUNIT_ASSERT_EQ(test, st_dev_get(fd, "gpu0", v), 0);
	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++)
		if (strcmp(st_dfields[f].name, "capacity"))
			KUNIT_EXPECT_EQ_MSG(test, v[f], st_dfields[f].dflt, "%s",
					    st_dfields[f].name);
	m = req(NXQUOTA_CMD_DEVICE_SET, 0);
	nla_put_string(m, NXQUOTA_A_DEVICE_KEY, "gpu0");
	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++) {
		KUNIT_EXPECT_NE(test, st_dvalue(f), st_dfields[f].dflt);
		if (st_dfields[f].unit == NXQ_UNIT_BYTES)
			nla_put_u64(m, st_dfields[f].attr, st_dvalue(f));
		else
			nla_put_u32(m, st_dfields[f].attr, st_dvalue(f));
	}
	KUNIT_ASSERT_EQ_MSG(test, call(fd, m, &r), 0, "%s", r.msg);
	close(fd);
	snprintf(path, sizeof(path), "%s/state", d.state);
	KUNIT_ASSERT_TRUE(test, read_file(path, text, sizeof(text)) > 0);
	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++) {
		snprintf(word, sizeof(word), " %s=%llu", st_dfields[f].name,
			 (unsigned long long)st_dvalue(f));
		KUNIT_EXPECT_TRUE_MSG(test, strstr(text, word) != NULL,
				      "no%s in %s", word, text);
	}
	KUNIT_EXPECT_EQ(test, stop(&d, SIGKILL), 128 + SIGKILL);

	/* and a device in the format before the table, beside it */
	i = open(path, O_WRONLY | O_APPEND);
	KUNIT_ASSERT_GE(test, i, 0);
	snprintf(text, sizeof(text), "device gpu1 capacity=4096 devt=195:1 "
		 "default_max=max ticket_timeout_ms=250\n");
	KUNIT_ASSERT_EQ(test, write(i, text, strlen(text)),
			(ssize_t)strlen(text));
	close(i);
	spawn(test, &d);
	KUNIT_ASSERT_TRUE(test, wait_up(&d));
	fd = dial(d.ctl);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_ASSERT_EQ(test, st_dev_get(fd, "gpu0", v), 0);
	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++)
		KUNIT_EXPECT_EQ_MSG(test, v[f], st_dvalue(f), "%s after a restart",
				    st_dfields[f].name);
	KUNIT_ASSERT_EQ(test, st_dev_get(fd, "gpu1", v), 0);
	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++) {
		snprintf(word, sizeof(word), " %s=", st_dfields[f].name);
		i = strstr(text, word) ? (int)(strstr(text, word) - text) : -1;
		KUNIT_ASSERT_GE(test, i, 0);
		KUNIT_EXPECT_EQ_MSG(test, v[f],
				    !strncmp(text + i + strlen(word), "max", 3) ?
				    NXQ_UNLIMITED :
				    strtoull(text + i + strlen(word), NULL, 10),
				    "%s of the previous format", st_dfields[f].name);
	}
	close(fd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);

	/* a field past its bound: the file is not read, the daemon stops */
	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++) {
		if (st_dfields[f].unit == NXQ_UNIT_BYTES)
			continue;
		i = open(path, O_WRONLY | O_TRUNC);
		KUNIT_ASSERT_GE(test, i, 0);
		snprintf(text, sizeof(text), "nxquotad-state 1\n"
			 "device gpu2 devt=- capacity=1 %s=%llu\n",
			 st_dfields[f].name,
			 (unsigned long long)st_dfields[f].hi + 1);
		KUNIT_ASSERT_EQ(test, write(i, text, strlen(text)),
				(ssize_t)strlen(text));
		close(i);
		spawn(test, &d);
		KUNIT_EXPECT_FALSE_MSG(test, wait_up(&d), "%s", text);
		KUNIT_EXPECT_EQ(test, d.pid, 0);
	}
	cleanup(&d);
}

/*
 * Socket activation: a control socket passed as systemd passes it
 * (LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES=control on fd 3) is the one
 * served; the daemon binds no other, leaves its mode alone and does not
 * remove it at exit (the socket unit owns it).
 */
static void ctl_test_socket_activation(struct kunit *test)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char passed[128];
	struct daemon d;
	struct reply r;
	struct stat st;
	int fd, lfd;

	start(test, &d);	/* the daemon binding its own */
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);

	snprintf(passed, sizeof(passed), "%s/passed.sock", d.dir);
	KUNIT_ASSERT_LT(test, strlen(passed), sizeof(sa.sun_path));
	memcpy(sa.sun_path, passed, strlen(passed) + 1);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	KUNIT_ASSERT_GE(test, lfd, 0);
	KUNIT_ASSERT_EQ(test, bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	KUNIT_ASSERT_EQ(test, chmod(passed, 0640), 0);
	KUNIT_ASSERT_EQ(test, listen(lfd, 8), 0);
	unlink(d.ctl);
	d.passfd = lfd;
	spawn(test, &d);
	close(lfd);
	snprintf(d.ctl, sizeof(d.ctl), "%s/passed.sock", d.dir);
	KUNIT_ASSERT_TRUE(test, wait_up(&d));
	fd = dial(passed);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_EXPECT_EQ(test, dev_add(fd, "gpu0", 1 << 20, NULL, &r), 0);
	KUNIT_EXPECT_EQ(test, dump(fd, NXQUOTA_CMD_DEVICE_GET, 0, NULL, &r), 0);
	KUNIT_EXPECT_EQ(test, r.n, 1);
	reply_free(&r);
	close(fd);
	KUNIT_ASSERT_EQ(test, stat(passed, &st), 0);
	KUNIT_EXPECT_EQ(test, st.st_mode & 07777, 0640);
	snprintf(passed, sizeof(passed), "%s/control.sock", d.dir);
	KUNIT_EXPECT_NE(test, access(passed, F_OK), 0);	/* not bound */
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	KUNIT_EXPECT_EQ(test, access(d.ctl, F_OK), 0);	/* left in place */
	cleanup(&d);
}

/*
 * Bounds: at most 64 control connections (the 65th is closed unanswered,
 * a freed slot serves again), and a message larger than the daemon reads
 * is refused with -EMSGSIZE, the connection still usable.
 */
static void ctl_test_bounds(struct kunit *test)
{
	static unsigned char big[70000];
	struct nlmsghdr *h = (void *)big;
	int fds[64], extra, i, n = 0;
	struct daemon d;
	struct reply r;
	char c;

	start(test, &d);
	for (i = 0; i < 64; i++) {
		fds[i] = dial(d.ctl);
		if (fds[i] >= 0)
			n++;
	}
	KUNIT_ASSERT_EQ(test, n, 64);
	/* every one is served, the last one too */
	KUNIT_EXPECT_EQ(test, dump(fds[63], NXQUOTA_CMD_DEVICE_GET, 0, NULL,
				   &r), 0);
	extra = dial(d.ctl);
	KUNIT_ASSERT_GE(test, extra, 0);
	KUNIT_EXPECT_EQ(test, recv(extra, &c, 1, 0), 0);	/* closed */
	close(extra);
	close(fds[0]);
	for (i = 0; i < 200; i++) {	/* its thread ends, its slot frees */
		extra = dial(d.ctl);
		KUNIT_ASSERT_GE(test, extra, 0);
		if (!dump(extra, NXQUOTA_CMD_DEVICE_GET, 0, NULL, &r))
			break;
		close(extra);
		extra = -1;
		usleep_range(10000, 11000);
	}
	KUNIT_EXPECT_GE(test, extra, 0);

	h->nlmsg_len = sizeof(big);
	h->nlmsg_type = NXQD_GENL_ID;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	h->nlmsg_seq = 4242;
	KUNIT_ASSERT_EQ(test, send(fds[1], big, sizeof(big), 0),
			(ssize_t)sizeof(big));
	KUNIT_EXPECT_EQ(test, read_reply(fds[1], 4242, &r), 0);
	KUNIT_EXPECT_EQ(test, r.err, -EMSGSIZE);
	KUNIT_EXPECT_EQ(test, dev_add(fds[1], "gpu0", 1, NULL, &r), 0);

	for (i = 1; i < 64; i++)
		close(fds[i]);
	if (extra >= 0)
		close(extra);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(&d);
}

/* ---- capabilities, read from each message's sender ---- */

/* Shared by a case and the processes it forks: what each one got. */
struct cap_res {
	int step;		/* 0: all ran; else where it stopped */
	int err;		/* the errno there */
	pid_t a, b;		/* pid reuse: the admin's pid, its reuser's */
	int add0, dump_noeff, add_noeff, ev_noeff, add_raised, add_gone,
	    dump_gone;
	int a_add, c_add, c_dump, b_dump, b_add;
	int k_dump, k_add;
	char msg[128], c_msg[128], b_msg[128], k_msg[160];
};

static struct cap_res *cap_res_new(struct kunit *test)
{
	struct cap_res *res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	KUNIT_ASSERT_NE(test, (void *)res, MAP_FAILED);
	memset(res, 0, sizeof(*res));
	return res;
}

/*
 * CAP_SYS_ADMIN of this process on (@eff) or off in its effective set;
 * @all: off in every set, the bounding set too (it cannot come back).
 */
static int cap_admin(bool eff, bool all)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct c[2];
	int i = CAP_TO_INDEX(CAP_SYS_ADMIN);
	__u32 bit = CAP_TO_MASK(CAP_SYS_ADMIN);

	if (syscall(SYS_capget, &h, c))
		return -errno;
	if (eff)
		c[i].effective |= bit;
	else
		c[i].effective &= ~bit;
	if (all) {
		c[i].permitted &= ~bit;
		c[i].inheritable &= ~bit;
		if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0))
			return -errno;
	}
	return syscall(SYS_capset, &h, c) ? -errno : 0;
}

/* Is device @key in the daemon's dump (root's own connection)? */
static bool has_dev(struct daemon *d, const char *key)
{
	struct nlattr *tb[NXQUOTA_A_DEVICE_MAX + 1];
	int fd = dial(d->ctl), i;
	struct reply r;
	bool found = false;

	if (fd < 0)
		return false;
	if (!dump(fd, NXQUOTA_CMD_DEVICE_GET, 0, NULL, &r)) {
		for (i = 0; i < r.n; i++) {
			attrs(&r, i, tb, NXQUOTA_A_DEVICE_MAX);
			if (tb[NXQUOTA_A_DEVICE_KEY] &&
			    !strcmp(nla_get_string(tb[NXQUOTA_A_DEVICE_KEY]),
				    key))
				found = true;
		}
	}
	reply_free(&r);
	close(fd);
	return found;
}

/* A dump of the devices on @fd; its ack's error and message in @msg. */
static int dump_devs(int fd, char *msg, size_t len)
{
	struct reply r;
	int err = dump(fd, NXQUOTA_CMD_DEVICE_GET, 0, NULL, &r);

	if (msg)
		snprintf(msg, len, "%s", r.msg);
	reply_free(&r);
	return err;
}

static int add_msg(int fd, const char *key, char *msg, size_t len)
{
	struct reply r;
	int err = dev_add(fd, key, 1 << 20, NULL, &r);

	if (msg)
		snprintf(msg, len, "%s", r.msg);
	return err;
}

/*
 * Root connects with CAP_SYS_ADMIN and drops it: each message is judged
 * by what its sender holds when it is read, not at accept.  Without the
 * capability in its effective set it still reads but adds no device and
 * gets no events (-EPERM, nothing added); raised again, it adds; gone
 * from every set, -EPERM again.
 */
static void ctl_test_cap_dropped(struct kunit *test)
{
	struct cap_res *res = cap_res_new(test);
	struct daemon d;
	int st = 0;
	pid_t pid;

	start(test, &d);
	pid = fork();
	KUNIT_ASSERT_GE(test, pid, 0);
	if (!pid) {
		struct reply r;
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fd = dial(d.ctl);
		res->step = 1;
		if (fd < 0)
			_exit(0);
		res->add0 = add_msg(fd, "before", NULL, 0);
		res->step = 2;
		if (cap_admin(false, false))
			_exit(0);
		res->dump_noeff = dump_devs(fd, NULL, 0);
		res->add_noeff = add_msg(fd, "noeff", res->msg,
					 sizeof(res->msg));
		res->ev_noeff = call(fd, req(NXQUOTA_CMD_EVENT, 0), &r);
		res->step = 3;
		if (cap_admin(true, false))
			_exit(0);
		res->add_raised = add_msg(fd, "raised", NULL, 0);
		res->step = 4;
		if (cap_admin(false, true))
			_exit(0);
		res->add_gone = add_msg(fd, "gone", NULL, 0);
		res->dump_gone = dump_devs(fd, NULL, 0);
		res->step = 0;
		_exit(0);
	}
	KUNIT_ASSERT_EQ(test, waitpid(pid, &st, 0), pid);
	KUNIT_EXPECT_EQ(test, res->step, 0);
	KUNIT_EXPECT_EQ(test, res->add0, 0);
	KUNIT_EXPECT_EQ(test, res->dump_noeff, 0);	/* root reads */
	KUNIT_EXPECT_EQ(test, res->add_noeff, -EPERM);
	KUNIT_EXPECT_NOT_NULL(test, strstr(res->msg, "CAP_SYS_ADMIN"));
	KUNIT_EXPECT_EQ(test, res->ev_noeff, -EPERM);
	KUNIT_EXPECT_EQ(test, res->add_raised, 0);
	KUNIT_EXPECT_EQ(test, res->add_gone, -EPERM);
	KUNIT_EXPECT_EQ(test, res->dump_gone, 0);
	KUNIT_EXPECT_TRUE(test, has_dev(&d, "before"));
	KUNIT_EXPECT_TRUE(test, has_dev(&d, "raised"));
	KUNIT_EXPECT_FALSE(test, has_dev(&d, "noeff"));
	KUNIT_EXPECT_FALSE(test, has_dev(&d, "gone"));
	munmap(res, sizeof(*res));
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(&d);
}

#ifndef SYS_clone3
#define SYS_clone3	435
#endif

/* clone3()'s arguments up to set_tid (CLONE_ARGS_SIZE_VER1). */
struct clone_args_v1 {
	__u64 flags, pidfd, child_tid, parent_tid, exit_signal, stack,
	      stack_size, tls, set_tid, set_tid_size;
};

/*
 * A child whose pid is @pid (free again): clone3()'s set_tid, or else
 * ns_last_pid and fork() tried a few times.  As fork(): 0 in the child.
 */
static pid_t fork_as(pid_t pid)
{
	struct clone_args_v1 a = { .exit_signal = SIGCHLD };
	pid_t tid = pid, got;
	char last[16];
	int i, fd;

	a.set_tid = (__u64)(uintptr_t)&tid;
	a.set_tid_size = 1;
	got = syscall(SYS_clone3, &a, sizeof(a));
	if (got >= 0)
		return got;
	for (i = 0; i < 20; i++) {
		fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		snprintf(last, sizeof(last), "%d", pid - 1);
		if (write(fd, last, strlen(last)) < 0) {
			close(fd);
			return -1;
		}
		close(fd);
		got = fork();
		if (got <= 0 || got == pid)
			return got;
		kill(got, SIGKILL);	/* another process took it first */
		waitpid(got, NULL, 0);
	}
	errno = EAGAIN;
	return -1;
}

static int send_fd(int sock, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	char one = 1;
	struct iovec iov = { .iov_base = &one, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf) };
	struct cmsghdr *cm;

	memset(&cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
	return sendmsg(sock, &mh, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	char one;
	struct iovec iov = { .iov_base = &one, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf) };
	int fd = -1;

	if (recvmsg(sock, &mh, 0) != 1 || !CMSG_FIRSTHDR(&mh))
		return -1;
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(fd));
	return fd;
}

/*
 * The admin A connects (and adds a device) and forks C, which drops
 * CAP_SYS_ADMIN: on the inherited connection C may do nothing, while A
 * lives.  A passes the connection on and exits; a process B without
 * CAP_SYS_ADMIN is made with A's pid (the pid recycled, made certain
 * with clone3()'s set_tid) and sends on it: neither its dump nor its
 * device is taken -- the connection was A's, and A is gone.  Run in a
 * process of its own, single-threaded, for clone3().
 */
static void cap_reuse(struct cap_res *res, const char *ctl)
{
	int sp[2], fd, st;
	pid_t a, c, b;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp))
		_exit(1);
	a = fork();
	if (a < 0)
		_exit(1);
	if (!a) {
		fd = dial(ctl);
		if (fd < 0)
			_exit(1);
		res->a_add = add_msg(fd, "admin", NULL, 0);
		c = fork();
		if (!c) {
			if (cap_admin(false, true))
				_exit(1);
			res->c_add = add_msg(fd, "child", res->c_msg,
					     sizeof(res->c_msg));
			res->c_dump = dump_devs(fd, NULL, 0);
			_exit(0);
		}
		if (c < 0 || waitpid(c, &st, 0) != c || st)
			_exit(1);
		_exit(send_fd(sp[0], fd) ? 1 : 0);
	}
	fd = recv_fd(sp[1]);
	if (waitpid(a, &st, 0) != a || st || fd < 0) {
		res->step = 1;
		_exit(0);
	}
	res->a = a;		/* gone, reaped: its pid is free */
	b = fork_as(a);
	if (b < 0) {
		res->err = errno;
		res->step = 2;
		_exit(0);
	}
	if (!b) {
		res->b = getpid();
		if (cap_admin(false, true))
			_exit(1);
		res->b_dump = dump_devs(fd, res->b_msg, sizeof(res->b_msg));
		res->b_add = add_msg(fd, "reused", NULL, 0);
		_exit(0);
	}
	if (waitpid(b, &st, 0) != b || st)
		res->step = 3;
	_exit(0);
}

static void ctl_test_cap_pid_reused(struct kunit *test)
{
	struct cap_res *res = cap_res_new(test);
	struct daemon d;
	int st = 0;
	pid_t pid;

	start(test, &d);
	pid = fork();
	KUNIT_ASSERT_GE(test, pid, 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		cap_reuse(res, d.ctl);
	}
	KUNIT_ASSERT_EQ(test, waitpid(pid, &st, 0), pid);
	KUNIT_ASSERT_TRUE(test, WIFEXITED(st));
	KUNIT_ASSERT_EQ(test, WEXITSTATUS(st), 0);
	if (res->step == 2) {
		int err = res->err;

		munmap(res, sizeof(*res));
		stop(&d, SIGTERM);
		cleanup(&d);
		kunit_skip(test, "no process could be made with a given pid: %s",
			   strerror(err));
	}
	KUNIT_EXPECT_EQ(test, res->step, 0);
	KUNIT_EXPECT_EQ(test, res->a_add, 0);
	/* the admin alive, its child without the capability */
	KUNIT_EXPECT_EQ(test, res->c_add, -EPERM);
	KUNIT_EXPECT_EQ(test, res->c_dump, -EPERM);
	kunit_info(test, "the child: %s", res->c_msg);
	/* the admin gone, its pid another's */
	KUNIT_EXPECT_EQ(test, res->b, res->a);
	KUNIT_EXPECT_EQ(test, res->b_dump, -EPERM);
	KUNIT_EXPECT_EQ(test, res->b_add, -EPERM);
	kunit_info(test, "pid %d again: %s", res->b, res->b_msg);
	KUNIT_EXPECT_TRUE(test, has_dev(&d, "admin"));
	KUNIT_EXPECT_FALSE(test, has_dev(&d, "child"));
	KUNIT_EXPECT_FALSE(test, has_dev(&d, "reused"));
	munmap(res, sizeof(*res));
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(&d);
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		err = -errno;
	close(fd);
	return err;
}

/*
 * The admin K, with every capability in the initial user namespace, but
 * forked into a pid namespace that a user namespace owns (nsenter -p into
 * a container with user namespaces): root of that user namespace could
 * name K's pid in its own credentials on a connection K made, so K reads
 * but changes nothing.  Run in a process of its own (setns()).
 */
static void cap_pidns(struct cap_res *res, const char *ctl)
{
	int p[2], fd, ns;
	pid_t h, init = 0, k;
	char path[64];

	if (pipe(p))
		_exit(1);
	h = fork();
	if (h < 0)
		_exit(1);
	if (!h) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* one line, its own ids: no capability needed for the maps */
		if (unshare(CLONE_NEWUSER | CLONE_NEWPID) ||
		    write_str("/proc/self/setgroups", "deny") ||
		    write_str("/proc/self/uid_map", "0 0 1") ||
		    write_str("/proc/self/gid_map", "0 0 1"))
			_exit(write(p[1], &init, sizeof(init)) < 0);
		init = fork();	/* the namespace's pid 1 */
		if (!init) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				pause();
		}
		if (write(p[1], &init, sizeof(init)) < 0)
			_exit(1);
		for (;;)
			pause();
	}
	if (read(p[0], &init, sizeof(init)) != sizeof(init) || init <= 0) {
		res->step = 2;	/* no user namespace here */
		kill(h, SIGKILL);
		waitpid(h, NULL, 0);
		_exit(0);
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)init);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0 || setns(ns, CLONE_NEWPID)) {
		res->err = errno;
		res->step = 1;
		_exit(0);
	}
	k = fork();
	if (!k) {
		fd = dial(ctl);
		if (fd < 0)
			_exit(1);
		res->k_dump = dump_devs(fd, NULL, 0);
		res->k_add = add_msg(fd, "pidns", res->k_msg,
				     sizeof(res->k_msg));
		_exit(0);
	}
	if (k < 0 || waitpid(k, &fd, 0) != k || fd)
		res->step = 3;
	kill(h, SIGKILL);
	waitpid(h, NULL, 0);
	_exit(0);
}

static void ctl_test_cap_pidns(struct kunit *test)
{
	struct cap_res *res = cap_res_new(test);
	struct daemon d;
	int st = 0;
	pid_t pid;

	start(test, &d);
	pid = fork();
	KUNIT_ASSERT_GE(test, pid, 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		cap_pidns(res, d.ctl);
	}
	KUNIT_ASSERT_EQ(test, waitpid(pid, &st, 0), pid);
	KUNIT_ASSERT_TRUE(test, WIFEXITED(st));
	KUNIT_ASSERT_EQ(test, WEXITSTATUS(st), 0);
	if (res->step == 2) {
		munmap(res, sizeof(*res));
		stop(&d, SIGTERM);
		cleanup(&d);
		kunit_skip(test, "no user and pid namespaces here");
	}
	KUNIT_EXPECT_EQ(test, res->step, 0);
	KUNIT_EXPECT_EQ(test, res->k_dump, 0);
	KUNIT_EXPECT_EQ(test, res->k_add, -EPERM);
	KUNIT_EXPECT_NOT_NULL(test, strstr(res->k_msg, "pid namespace"));
	KUNIT_EXPECT_FALSE(test, has_dev(&d, "pidns"));
	munmap(res, sizeof(*res));
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(&d);
}

static struct kunit_case ctl_cases[] = {
	KUNIT_CASE(ctl_test_root_only),
	KUNIT_CASE(ctl_test_devices),
	KUNIT_CASE(ctl_test_validation),
	KUNIT_CASE(ctl_test_budgets),
	KUNIT_CASE(ctl_test_events),
	KUNIT_CASE(ctl_test_restart),
	KUNIT_CASE(ctl_test_state_fields),
	KUNIT_CASE(ctl_test_state_devices),
	KUNIT_CASE(ctl_test_socket_activation),
	KUNIT_CASE(ctl_test_bounds),
	KUNIT_CASE(ctl_test_cap_dropped),
	KUNIT_CASE(ctl_test_cap_pid_reused),
	KUNIT_CASE(ctl_test_cap_pidns),
	{}
};

static struct kunit_suite ctl_suite = {
	.name = "nxquotad_ctl",
	.test_cases = ctl_cases,
};
kunit_test_suite(ctl_suite);
