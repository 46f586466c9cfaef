// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad against hostile tenants and faults (issue 21): each case is an
 * attack made as an unprivileged client (uid 65534, in a cgroup the case
 * makes) or a fault injected from outside, and asserts that the daemon
 * refuses it or bounds what it costs the others.  Each failed on the
 * daemon before issue 21 (daemon/README.md has the table).  Root and a
 * writable cgroup2 hierarchy are needed, else the cases are skipped.
 */
#include <grp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include "client_util.h"

#define UNOBODY		65534
/* nxquotad's default bound on connections per cgroup (-K) */
#define NXQD_CONN_PER_CGROUP_T	1024

/* The daemon, for tenants: its socket 0660 to group 65534, the dir open. */
static void start_tenants(struct kunit *test, struct daemon *d,
			  struct tcg *cg, u64 max, const char *devt,
			  const char *const *extra)
{
	const char *args[12] = { "-g", "65534" };
	int n = 2;

	prepare(test, d);
	write_state(test, d, 1000000, devt, cg ? cg->rel : NULL, max);
	while (extra && *extra && n < 11)
		args[n++] = *extra++;
	args[n] = NULL;
	KUNIT_ASSERT_EQ(test, chmod(d->dir, 0755), 0);
	d->pid = spawn_args(test, d, args);
	wait_up(test, d);
}

/* In a child: become uid/gid 65534 (no groups); false if that failed. */
static bool become_nobody(void)
{
	return !setgroups(0, NULL) && !setgid(UNOBODY) && !setuid(UNOBODY);
}

/* Fork a tenant running @fn(@arg); its exit status, or -1. */
static int tenant(int (*fn)(void *arg), void *arg)
{
	pid_t pid = fork();
	int st = 0;

	if (pid < 0)
		return -1;
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(become_nobody() ? fn(arg) : 99);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- the device proof ---- */

struct opath_arg {
	const char *sock;
	int out;		/* where the tenant writes this back */
	int err_path, err_rd;
};

/*
 * A tenant that cannot open the GPU's node holds an O_PATH descriptor of
 * it: that is no proof (the module's fget() refuses it: -EBADF).  One
 * opened for reading is.
 */
static int opath_tenant(void *arg)
{
	struct opath_arg *a = arg;
	int fd = dial(a->sock, SOCK_SEQPACKET), efd, p, rd, fds[2];
	u64 id;

	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p = open("/dev/null", O_PATH | O_CLOEXEC);
	rd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || efd < 0 || p < 0 || rd < 0)
		return 10;
	fds[0] = efd;
	fds[1] = p;
	a->err_path = reg_fds(fd, efd, p, &id, fds, 2);
	fds[1] = rd;
	a->err_rd = reg_fds(fd, efd, rd, &id, fds, 2);
	if (write(a->out, a, sizeof(*a)) != sizeof(*a))
		return 11;
	return 0;
}

static void nxqd_test_opath(struct kunit *test)
{
	struct opath_arg a = { 0 };
	struct daemon d;
	struct tcg cg;
	int p[2];

	cg_enter(test, &cg);
	start_tenants(test, &d, &cg, 1000, "1:3", NULL);	/* /dev/null */
	a.sock = d.sock;
	KUNIT_ASSERT_EQ(test, pipe(p), 0);
	a.out = p[1];
	KUNIT_EXPECT_EQ(test, tenant(opath_tenant, &a), 0);
	close(p[1]);
	KUNIT_EXPECT_EQ(test, (long)read(p[0], &a, sizeof(a)), (long)sizeof(a));
	close(p[0]);
	KUNIT_EXPECT_EQ(test, a.err_path, -EBADF);
	KUNIT_EXPECT_EQ(test, a.err_rd, 0);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/* ---- identity ---- */

struct decoy_arg {
	const char *sock;
	int out;		/* where the tenant writes this back */
	int err;		/* the registration naming the decoy */
	int own;		/* a registration as itself, after */
	int step;		/* what failed, if anything */
};

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		err = -errno;
	close(fd);
	return err;
}

/* Register on @fd with SCM_CREDENTIALS naming @pid (0: none sent). */
static int reg_as(int fd, pid_t pid, u64 *id)
{
	struct {
		struct nxqd_req req;
		struct nxq_holder_reg r;
	} m = { .req = { .cmd = NXQ_IOC_HOLDER_REGISTER },
		.r = { .size = sizeof(m.r), .eventfd = -1 } };
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	unsigned char rep[256];
	struct nxqd_rep r;
	ssize_t n;

	strscpy(m.r.device, KEY, sizeof(m.r.device));
	if (pid) {
		struct ucred uc = { .pid = pid, .uid = getuid(),
				    .gid = getgid() };
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_CREDENTIALS;
		cm->cmsg_len = CMSG_LEN(sizeof(uc));
		memcpy(CMSG_DATA(cm), &uc, sizeof(uc));
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != sizeof(m))
		return -errno;
	n = recv(fd, rep, sizeof(rep), 0);
	if (n < (ssize_t)sizeof(r))
		return 1;
	memcpy(&r, rep, sizeof(r));
	if (!r.err && id)
		memcpy(id, rep + sizeof(r) + offsetof(struct nxq_holder_reg,
						       holder_id), sizeof(*id));
	return r.err;
}

/*
 * PID 1 of a new user and pid namespace (root there, nobody outside):
 * a decoy sleeps as pid 2; a registration whose credentials name the
 * decoy must not make it the holder's owner (the kill would hit it, and
 * the real user keep running while its charge goes).
 */
static int decoy_init(void *arg)
{
	struct decoy_arg *a = arg;
	pid_t decoy;
	int fd;

	decoy = fork();
	if (decoy < 0)
		return 21;
	if (!decoy) {
		for (;;)
			pause();
	}
	fd = dial(a->sock, SOCK_SEQPACKET);
	if (fd < 0) {
		a->step = 2;
		return write(a->out, a, sizeof(*a)) == sizeof(*a) ? 22 : 23;
	}
	a->err = reg_as(fd, decoy, NULL);
	a->own = reg_as(fd, 0, NULL);
	kill(decoy, SIGKILL);
	close(fd);
	return write(a->out, a, sizeof(*a)) == sizeof(*a) ? 0 : 23;
}

static int decoy_tenant(void *arg)
{
	struct decoy_arg *a = arg;
	char map[64];
	pid_t init;
	int st = 0;

	/* setuid() made it undumpable: its /proc files would be root's */
	prctl(PR_SET_DUMPABLE, 1);
	if (unshare(CLONE_NEWUSER | CLONE_NEWPID)) {
		a->step = 1;
		goto out;
	}
	snprintf(map, sizeof(map), "0 %d 1", UNOBODY);
	if (write_file("/proc/self/setgroups", "deny") ||
	    write_file("/proc/self/uid_map", map) ||
	    write_file("/proc/self/gid_map", map)) {
		a->step = 1;
		goto out;
	}
	init = fork();	/* pid 1 of the new namespace */
	if (init < 0) {
		a->step = 1;
		goto out;
	}
	if (!init)
		_exit(decoy_init(a));
	waitpid(init, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 31;
out:
	return write(a->out, a, sizeof(*a)) == sizeof(*a) ? 0 : 30;
}

static void nxqd_test_decoy_creds(struct kunit *test)
{
	struct decoy_arg a = { 0 };
	struct daemon d;
	struct tcg cg;
	int p[2];

	cg_enter(test, &cg);
	start_tenants(test, &d, &cg, 1000, "-", NULL);
	a.sock = d.sock;
	a.err = a.own = 1;
	KUNIT_ASSERT_EQ(test, pipe(p), 0);
	a.out = p[1];
	KUNIT_EXPECT_EQ(test, tenant(decoy_tenant, &a), 0);
	close(p[1]);
	KUNIT_EXPECT_EQ(test, (long)read(p[0], &a, sizeof(a)), (long)sizeof(a));
	close(p[0]);
	if (a.step == 1)
		kunit_skip(test, "no unprivileged user namespaces here");
	KUNIT_EXPECT_EQ(test, a.step, 0);
	/* refused; registering as itself works */
	KUNIT_EXPECT_EQ(test, a.err, -EPERM);
	KUNIT_EXPECT_EQ(test, a.own, 0);
	KUNIT_EXPECT_GE(test, ctl_dev_attr(d.ctl, KEY,
					   NXQUOTA_A_DEVICE_CREDS_REFUSED), 1ULL);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/* The root's control connection, passed to nobody over @sv. */
static int passed_ctl_tenant(void *arg)
{
	int sv = *(int *)arg, fd = -1, err;
	unsigned char attrs[128];
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	char one;
	struct iovec iov = { .iov_base = &one, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf) };
	__u64 cap = 1ULL << 40;
	size_t off = 0;

	if (recvmsg(sv, &mh, 0) != 1 || !CMSG_FIRSTHDR(&mh))
		return 20;
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(fd));
	/* a 1T device; then its own budget lifted */
	off = nl_put(attrs, off, NXQUOTA_A_DEVICE_KEY, "evil", 5);
	off = nl_put(attrs, off, NXQUOTA_A_DEVICE_CAPACITY, &cap, sizeof(cap));
	err = nl_call(fd, NXQUOTA_CMD_DEVICE_ADD, 0, attrs, off, NULL, NULL,
		      NULL, 0);
	return err == -EPERM ? 0 : err == 0 ? 1 : 2;
}

static void nxqd_test_ctl_passed(struct kunit *test)
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
	struct daemon d;
	int sv[2], fd;

	start_with(test, &d, NULL, 0, "-");
	fd = dial(d.ctl, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_ASSERT_EQ(test, socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	memset(&cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
	KUNIT_ASSERT_EQ(test, (long)sendmsg(sv[0], &mh, 0), 1L);
	/* 0: refused (-EPERM); 1: the device was added */
	KUNIT_EXPECT_EQ(test, tenant(passed_ctl_tenant, &sv[1]), 0);
	KUNIT_EXPECT_EQ(test, ctl_dev_attr(d.ctl, "evil",
					   NXQUOTA_A_DEVICE_CAPACITY), ~0ULL);
	/* root, on its own connection, is served */
	KUNIT_EXPECT_EQ(test, ctl_dev_attr(d.ctl, KEY,
					   NXQUOTA_A_DEVICE_CAPACITY), 1000000ULL);
	close(sv[0]);
	close(sv[1]);
	close(fd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
}

/*
 * Root that is not the module's CAP_SYS_ADMIN: uid 0 with CAP_SYS_ADMIN
 * dropped from all four sets (a container's root), or uid 0 in a user
 * namespace of its own (every capability there, none in the initial
 * one).  It reads the devices, then adds a 1T device and asks for the
 * events.  0: read, both refused with -EPERM; 1: the device was added;
 * 2: set-up failed; 3: the read was refused; 4: the events were given;
 * 77: no user namespace here.
 */
struct nocap_arg {
	const char *ctl;
	bool userns;
};

static int nocap_ctl_root(void *arg)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	const struct nocap_arg *a = arg;
	unsigned char attrs[128];
	__u64 cap = 1ULL << 40;
	size_t off = 0;
	int fd, err;

	if (a->userns) {
		int m;

		if (unshare(CLONE_NEWUSER))
			return 77;
		m = open("/proc/self/uid_map", O_WRONLY);
		if (m < 0 || write(m, "0 0 1", 5) != 5)
			return 2;
		close(m);
	} else {
		if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) ||
		    syscall(SYS_capget, &h, d))
			return 2;
		d[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
		d[CAP_TO_INDEX(CAP_SYS_ADMIN)].permitted &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
		d[CAP_TO_INDEX(CAP_SYS_ADMIN)].inheritable &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
		if (syscall(SYS_capset, &h, d))
			return 2;
	}
	if (geteuid() != 0)
		return 2;
	fd = dial(a->ctl, SOCK_SEQPACKET);
	if (fd < 0)
		return 2;
	if (nl_call(fd, NXQUOTA_CMD_DEVICE_GET, NLM_F_DUMP, NULL, 0, NULL,
		    NULL, NULL, 0))
		return 3;
	off = nl_put(attrs, off, NXQUOTA_A_DEVICE_KEY, "evil", 5);
	off = nl_put(attrs, off, NXQUOTA_A_DEVICE_CAPACITY, &cap, sizeof(cap));
	err = nl_call(fd, NXQUOTA_CMD_DEVICE_ADD, 0, attrs, off, NULL, NULL,
		      NULL, 0);
	if (err != -EPERM)
		return err ? 2 : 1;
	err = nl_call(fd, NXQUOTA_CMD_EVENT, 0, NULL, 0, NULL, NULL, NULL, 0);
	close(fd);
	return err == -EPERM ? 0 : err ? 2 : 4;
}

static void nxqd_test_ctl_nocap(struct kunit *test)
{
	struct nocap_arg a = { .userns = false };
	struct daemon d;
	int i, st = 0;
	pid_t pid;

	start_with(test, &d, NULL, 0, "-");
	a.ctl = d.ctl;
	for (i = 0; i < 2; i++) {
		a.userns = i;
		pid = fork();
		KUNIT_ASSERT_GE(test, pid, 0);
		if (!pid) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			_exit(nocap_ctl_root(&a));
		}
		KUNIT_ASSERT_EQ(test, waitpid(pid, &st, 0), pid);
		KUNIT_ASSERT_TRUE(test, WIFEXITED(st));
		if (a.userns && WEXITSTATUS(st) == 77) {
			kunit_info(test, "no user namespace here: that case not run");
			continue;
		}
		/* 0: read, and refused the change and the events */
		KUNIT_EXPECT_EQ_MSG(test, WEXITSTATUS(st), 0, "%s",
				    a.userns ? "root in a user namespace" :
				    "root without CAP_SYS_ADMIN");
	}
	KUNIT_EXPECT_EQ(test, ctl_dev_attr(d.ctl, "evil",
					   NXQUOTA_A_DEVICE_CAPACITY), ~0ULL);
	/* root with every capability is served */
	KUNIT_EXPECT_EQ(test, ctl_dev_attr(d.ctl, KEY,
					   NXQUOTA_A_DEVICE_CAPACITY), 1000000ULL);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
}

/* ---- no tenant I/O under a ledger lock ---- */

/* The fdinfo eventfd-id of @fd, or -1. */
static long efd_id(int fd)
{
	char p[64], line[128];
	long id = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
	f = fopen(p, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		sscanf(line, "eventfd-id: %ld", &id);
	fclose(f);
	return id;
}

/*
 * The fault library built next to this binary (the daemon under test may
 * be elsewhere) in @so; 0, or -1 if it is not there.
 */
static int slow_eventfd_so(char *so, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", so, len - 1);

	if (n <= 0)
		return -1;
	so[n] = '\0';
	*strrchr(so, '/') = '\0';
	strncat(so, "/slow_eventfd.so", len - strlen(so) - 1);
	return access(so, R_OK) ? -1 : 0;
}

/*
 * Start the daemon (1000 bytes, on @cg) with the fault library @so
 * preloaded and $@var=@val: in its environment only, not in the cases
 * that follow.
 */
static void start_slow(struct kunit *test, struct daemon *d, struct tcg *cg,
		       const char *so, const char *var, const char *val)
{
	setenv(var, val, 1);
	setenv("LD_PRELOAD", so, 1);
	setenv("ASAN_OPTIONS",
	       "detect_leaks=1:abort_on_error=0:verify_asan_link_order=0", 1);
	start_with(test, d, cg, 1000, "-");
	unsetenv("LD_PRELOAD");
	unsetenv(var);
	setenv("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0", 1);
}

/*
 * A tenant whose eventfd write would wait (it won the race: the counter
 * full and O_NONBLOCK cleared between the daemon's checks and its write;
 * slow_eventfd.so makes that happen every time) stalls nobody: the
 * neighbour's charges on the same device are answered at once, and the
 * daemon gives up on that file.  The daemon's thread is held up between
 * arming its cut and writing for longer than the cut (as a preempted
 * thread would be): the write is cut short all the same.
 */
static void nxqd_test_eventfd_block(struct kunit *test)
{
	struct timeval tv = { .tv_sec = 3 };
	char idbuf[32], so[PATH_MAX];
	struct daemon d;
	struct tcg cg;
	int fd, nb, efa, efb, efc, i;
	u64 ida, idb, idc, t0, worst = 0, v;
	const char *bin = getenv("NXQD_BIN");

	cg_enter(test, &cg);
	KUNIT_ASSERT_NOT_NULL(test, bin);
	if (slow_eventfd_so(so, sizeof(so)))
		kunit_skip(test, "no %s", so);
	efa = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_GE(test, efa, 0);
	snprintf(idbuf, sizeof(idbuf), "%ld", efd_id(efa));
	setenv("NXQD_TEST_EFD_ID", idbuf, 1);
	/* longer than the cut: its timer fires before the write begins */
	start_slow(test, &d, &cg, so, "NXQD_TEST_EFD_STALL_US", "3000");
	fd = dial(d.sock, SOCK_SEQPACKET);
	nb = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_ASSERT_GE(test, nb, 0);
	KUNIT_ASSERT_EQ(test, setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
					 sizeof(tv)), 0);
	KUNIT_ASSERT_EQ(test, setsockopt(nb, SOL_SOCKET, SO_RCVTIMEO, &tv,
					 sizeof(tv)), 0);
	efb = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	efc = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efa, &ida), 0);
	KUNIT_ASSERT_EQ(test, reg(fd, efb, &idb), 0);
	KUNIT_ASSERT_EQ(test, reg(nb, efc, &idc), 0);
	KUNIT_ASSERT_EQ(test, charge(fd, ida, 900, 0, 0, NULL), 0);
	/* B's refusal asks A: A's eventfd is written, and that write waits */
	KUNIT_EXPECT_EQ(test, charge(fd, idb, 500, 0, 0, NULL), -EDQUOT);
	/* the neighbour, on the same device, meanwhile */
	for (i = 0; i < 20; i++) {
		int e1, e2;

		t0 = now_ms();
		e1 = charge(nb, idc, 10, 0, 0, NULL);
		e2 = e1 ? 0 : uncharge(nb, idc, 10, NULL);
		worst = max(worst, now_ms() - t0);
		KUNIT_EXPECT_EQ(test, e1, 0);
		KUNIT_EXPECT_EQ(test, e2, 0);
		if (e1 || e2)
			break;	/* frozen: 3 s each, no need for more */
		usleep_range(5000, 6000);
	}
	KUNIT_EXPECT_LT(test, worst, 500ULL);
	/* a ticket is open for A all the same; later asks skip its file */
	KUNIT_EXPECT_EQ(test, charge(fd, idb, 500, 0, 0, NULL), -EDQUOT);
	/* (had a write waited, this lets it go) */
	KUNIT_EXPECT_EQ(test, (long)read(efa, &v, sizeof(v)), 8L);
	/* the write that would have waited was cut short, and said so */
	KUNIT_EXPECT_TRUE(test, log_has(&d, "that file is not written again"));
	close(fd);
	close(nb);
	close(efa);
	close(efb);
	close(efc);
	unsetenv("NXQD_TEST_EFD_ID");
	unsetenv("NXQD_TEST_EFD_STALL_US");
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/* ---- tenants slowing each other down ---- */

/* Median of @n samples (sorted in place). */
static u64 median(u64 *v, int n)
{
	int i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			u64 t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The neighbour's charge+uncharge pair, median of @n (ns). */
static u64 pair_ns(int fd, u64 id, int n)
{
	u64 *v = calloc(n, sizeof(*v)), t0, m;
	int i;

	for (i = 0; i < n; i++) {
		t0 = now_ns();
		if (charge(fd, id, 4096, 0, 0, NULL) ||
		    uncharge(fd, id, 4096, NULL))
			v[i] = ~0ULL;
		else
			v[i] = now_ns() - t0;
	}
	m = median(v, n);
	free(v);
	return m;
}

struct storm {
	const char *sock;
	volatile int *stop;
};

/* Register and unregister, as fast as the daemon answers. */
static int storm_tenant(void *arg)
{
	struct storm *s = arg;
	int fd = dial(s->sock, SOCK_SEQPACKET);
	u64 id;

	if (fd < 0)
		return 1;
	while (!*s->stop)
		if (!reg(fd, -1, &id))
			unreg(fd, id);
	return 0;
}

/*
 * Four unprivileged register/unregister loops in another cgroup cost a
 * neighbour's charge+uncharge pair at most a few times what it costs
 * without them (the record is not rewritten, nor fsync()ed, on the
 * registration path, and one tenant's requests wait behind at most one
 * of each other tenant's).  Before: 141x.
 */
static void nxqd_test_register_storm(struct kunit *test)
{
	volatile int *halt = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct storm s;
	struct daemon d;
	struct tcg cg, atk;
	pid_t pids[4];
	u64 base, loaded, id;
	char procs[600], pid[32];
	int fd, efd, i;

	KUNIT_ASSERT_NE(test, (void *)halt, MAP_FAILED);
	cg_enter(test, &atk);	/* the storm's cgroup */
	cg_enter(test, &cg);	/* the neighbour's */
	start_tenants(test, &d, &cg, 1ULL << 30, "-", NULL);
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efd, &id), 0);
	pair_ns(fd, id, 200);	/* warm */
	/* the best of three: this machine may be shared */
	base = min(pair_ns(fd, id, 300), pair_ns(fd, id, 300));
	base = min(base, pair_ns(fd, id, 300));
	s.sock = d.sock;
	s.stop = halt;
	*halt = 0;
	for (i = 0; i < 4; i++) {
		pids[i] = fork();
		KUNIT_ASSERT_GE(test, pids[i], 0);
		if (!pids[i]) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			snprintf(procs, sizeof(procs), "%s/cgroup.procs",
				 atk.dir);
			snprintf(pid, sizeof(pid), "%d", (int)getpid());
			if (write_str(procs, pid) || !become_nobody())
				_exit(99);
			_exit(storm_tenant(&s));
		}
	}
	usleep_range(200000, 201000);
	loaded = min(pair_ns(fd, id, 300), pair_ns(fd, id, 300));
	loaded = min(loaded, pair_ns(fd, id, 300));
	*halt = 1;
	for (i = 0; i < 4; i++)
		waitpid(pids[i], NULL, 0);
	kunit_info(test, "neighbour's pair: %llu ns alone, %llu ns under 4 register loops (%.1fx)",
		   (unsigned long long)base, (unsigned long long)loaded,
		   (double)loaded / base);
	/*
	 * The benchmark's target is 2x (client_bench --attacks, on a machine
	 * with cores to spare); here four loops, the daemon and the
	 * neighbour may share two cores: room for that (before: 141x-418x).
	 */
	KUNIT_EXPECT_LT(test, loaded, 8 * base);
	close(fd);
	close(efd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
	cg_leave(&atk);
	munmap((void *)halt, 4096);
}

struct flood {
	const char *sock;
	int n, made, served;
};

/* Hold as many connections as it can get; report; wait to be killed. */
static int flood_tenant(void *arg)
{
	struct flood *f = arg;
	struct nxq_version v = { .size = sizeof(v) };
	struct timeval tv = { .tv_sec = 2 };
	size_t rlen;
	int i, fd;

	for (i = 0; i < f->n; i++) {
		fd = dial(f->sock, SOCK_SEQPACKET);
		if (fd < 0)
			continue;
		f->made++;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (i % 64 == 0 || i + 1 == f->n)
			f->served += !call(fd, NXQ_IOC_VERSION, 0, &v,
					   sizeof(v), NULL, &rlen);
	}
	if (write(3, f, sizeof(*f)) != sizeof(*f))
		return 1;
	for (;;)
		pause();
}

/*
 * A tenant that opens thousands of connections from several processes
 * is bounded by its cgroup's share (-K), each refusal counted; a neighbour of the same uid
 * in another cgroup is not locked out; the daemon spends no thread per
 * connection.  Before: one thread each, bounded per uid only, so the
 * neighbour got ECONNRESET.
 */
static void nxqd_test_conn_flood(struct kunit *test)
{
	struct nxq_version v = { .size = sizeof(v) };
	struct timeval tv = { .tv_sec = 3 };
	struct flood f = { 0 }, got;
	struct rlimit rl;
	struct daemon d;
	struct tcg cg, atk;
	char procs[600], pidbuf[32];
	int p[2], nb, threads, i, k, made = 0, served = 0;
	u64 refused = ~0ULL;
	size_t rlen;
	pid_t pid, fpid[5];

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_max < 5000)
		kunit_skip(test, "needs 5000 descriptors");
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	cg_enter(test, &atk);
	cg_enter(test, &cg);
	start_tenants(test, &d, &cg, 1000, "-", NULL);
	f.sock = d.sock;
	/*
	 * Five processes of one uid in one cgroup, 840 each: under the bound
	 * per process (1024), past the bound per uid before (4096) together,
	 * and past the bound per cgroup (1024).
	 */
	f.n = 840;
	KUNIT_ASSERT_EQ(test, pipe(p), 0);
	for (k = 0; k < 5; k++) {
		fpid[k] = fork();
		KUNIT_ASSERT_GE(test, fpid[k], 0);
		if (!fpid[k]) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			snprintf(procs, sizeof(procs), "%s/cgroup.procs",
				 atk.dir);
			snprintf(pidbuf, sizeof(pidbuf), "%d", (int)getpid());
			if (dup2(p[1], 3) != 3 || write_str(procs, pidbuf) ||
			    !become_nobody())
				_exit(99);
			_exit(flood_tenant(&f));
		}
	}
	close(p[1]);
	for (k = 0; k < 5; k++) {
		KUNIT_EXPECT_EQ(test, (long)read(p[0], &got, sizeof(got)),
				(long)sizeof(got));
		made += got.made;
		served += got.served;
	}
	close(p[0]);
	/* the neighbour: uid 65534 too, its own cgroup */
	pid = fork();
	KUNIT_ASSERT_GE(test, pid, 0);
	if (!pid) {
		if (!become_nobody())
			_exit(99);
		nb = dial(d.sock, SOCK_SEQPACKET);
		if (nb < 0)
			_exit(2);
		setsockopt(nb, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		_exit(call(nb, NXQ_IOC_VERSION, 0, &v, sizeof(v), NULL, &rlen) ?
		      3 : 0);
	}
	{
		int st = 0;

		KUNIT_EXPECT_EQ(test, waitpid(pid, &st, 0), pid);
		KUNIT_EXPECT_TRUE(test, WIFEXITED(st) && !WEXITSTATUS(st));
	}
	threads = count_threads(d.pid);
	/* the bound per cgroup (1024 by default) held; each refusal counted */
	for (i = 0; i < 300; i++) {
		refused = ctl_dev_attr(d.ctl, KEY,
				       NXQUOTA_A_DEVICE_CONNS_REFUSED);
		if (refused != ~0ULL &&
		    refused >= (u64)(5 * f.n - NXQD_CONN_PER_CGROUP_T))
			break;
		usleep_range(10000, 11000);
	}
	kunit_info(test, "flood: %d connections made by 5 processes, %d served, the daemon has %d threads, %llu refused",
		   made, served, threads, (unsigned long long)refused);
	KUNIT_EXPECT_LE(test, threads, 8);
	KUNIT_EXPECT_NE(test, refused, ~0ULL);
	KUNIT_EXPECT_GE(test, refused, (u64)(5 * f.n - NXQD_CONN_PER_CGROUP_T));
	for (k = 0; k < 5; k++) {
		kill(fpid[k], SIGKILL);
		waitpid(fpid[k], NULL, 0);
	}
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
	cg_leave(&atk);
}

/* ---- readiness and durability ---- */

/*
 * Type=notify: READY=1 on $NOTIFY_SOCKET once the sockets answer,
 * STOPPING=1 at SIGTERM.
 */
static void nxqd_test_notify(struct kunit *test)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	char buf[256], path[96];
	struct daemon d;
	ssize_t n;
	int ns, fd;

	prepare(test, &d);
	snprintf(path, sizeof(path), "%s/notify.sock", d.dir);
	ns = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	KUNIT_ASSERT_GE(test, ns, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	KUNIT_ASSERT_EQ(test, bind(ns, (struct sockaddr *)&sa, sizeof(sa)), 0);
	KUNIT_ASSERT_EQ(test, setsockopt(ns, SOL_SOCKET, SO_RCVTIMEO, &tv,
					 sizeof(tv)), 0);
	setenv("NOTIFY_SOCKET", path, 1);
	d.pid = spawn(test, &d);
	unsetenv("NOTIFY_SOCKET");
	n = recv(ns, buf, sizeof(buf) - 1, 0);
	KUNIT_ASSERT_GT(test, n, 0L);
	buf[n] = '\0';
	KUNIT_EXPECT_NOT_NULL(test, strstr(buf, "READY=1"));
	/* ready means serving */
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_EXPECT_GE(test, fd, 0);
	if (fd >= 0)
		close(fd);
	KUNIT_EXPECT_GE(test, dial(d.ctl, SOCK_SEQPACKET), 0);
	kill(d.pid, SIGTERM);
	n = recv(ns, buf, sizeof(buf) - 1, 0);
	KUNIT_EXPECT_GT(test, n, 0L);
	buf[n > 0 ? n : 0] = '\0';
	KUNIT_EXPECT_NOT_NULL(test, strstr(buf, "STOPPING=1"));
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	close(ns);
	cleanup(test, &d);
}

/*
 * The tickets a budget change asks for are signalled before its ack, as
 * the module's sysfs write returns after eventfd_signal() (issue 32:
 * press_budget, against nxquotad, read a holder's eventfd just after the
 * change and found nothing, once in a matrix run).  Here every eventfd
 * write of the daemon first waits 150 ms (slow_eventfd.so's delay): the
 * count is there when the ack comes all the same.
 */
static void nxqd_test_ticket_before_ack(struct kunit *test)
{
	char so[PATH_MAX], msg[256];
	struct daemon d;
	struct tcg cg;
	int fd, efd;
	u64 id, v = 0, t0;

	cg_enter(test, &cg);
	if (slow_eventfd_so(so, sizeof(so)))
		kunit_skip(test, "no %s", so);
	start_slow(test, &d, &cg, so, "NXQD_TEST_EFD_DELAY_MS", "150");
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efd, &id), 0);
	KUNIT_ASSERT_EQ(test, charge(fd, id, 900, 0, 0, NULL), 0);
	/* the max lowered below what it holds: it is asked for 400 */
	t0 = now_ms();
	KUNIT_EXPECT_EQ(test, ctl_set_max(&d, cg.rel, 500, msg, sizeof(msg)), 0);
	KUNIT_EXPECT_EQ(test, read(efd, &v, sizeof(v)), (ssize_t)sizeof(v));
	KUNIT_EXPECT_EQ(test, v, 1ULL);
	kunit_info(test, "the ack came %llu ms after the change was sent",
		   (unsigned long long)(now_ms() - t0));
	close(fd);
	close(efd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * A ticket opened while the daemon is still writing the eventfd for the
 * previous one is signalled all the same.  Here each eventfd write of the
 * daemon is done at once and its thread then sleeps 1 s (slow_eventfd.so):
 * A is woken, reads and answers ticket 1, and ticket 2 comes within that
 * second.  Before: the holder's eventfd was still marked queued, ticket 2's
 * signal was skipped and A never read it (bench/serve's lost RECALL
 * ticket, 2 rounds in 38).
 */
static void nxqd_test_ticket_during_write(struct kunit *test)
{
	struct nxq_ticket t = { .size = sizeof(t) };
	struct nxq_ticket_answer a = { .size = sizeof(a) };
	struct pollfd pf = { .events = POLLIN };
	char so[PATH_MAX], msg[256];
	struct daemon d;
	struct tcg cg;
	int fd, efa, efb;
	u64 ida, idb, n = 0, t0, t1, t2;
	size_t rlen;

	cg_enter(test, &cg);
	if (slow_eventfd_so(so, sizeof(so)))
		kunit_skip(test, "no %s", so);
	start_slow(test, &d, &cg, so, "NXQD_TEST_EFD_AFTER_MS", "1000");
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efa = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	efb = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efa, &ida), 0);
	KUNIT_ASSERT_EQ(test, reg(fd, efb, &idb), 0);
	KUNIT_ASSERT_EQ(test, charge(fd, ida, 1000, 0, 0, NULL), 0);
	/* ticket 1: A is woken as soon as the write is done */
	t0 = now_ms();
	KUNIT_EXPECT_EQ(test, charge(fd, idb, 500, 0, 0, NULL), -EDQUOT);
	pf.fd = efa;
	KUNIT_ASSERT_EQ(test, poll(&pf, 1, 3000), 1);
	KUNIT_ASSERT_EQ(test, (long)read(efa, &n, sizeof(n)), 8L);
	t.holder_id = ida;
	KUNIT_ASSERT_EQ(test, call(fd, NXQ_IOC_TICKET_READ, 0, &t, sizeof(t),
				   &t, &rlen), 0);
	kunit_info(test, "ticket 1 asks %llu", (unsigned long long)t.bytes);
	a.holder_id = ida;
	a.generation = t.generation;
	a.released = 500;
	KUNIT_ASSERT_EQ(test, call(fd, NXQ_IOC_TICKET_ANSWER, 0, &a, sizeof(a),
				   &a, &rlen), 0);
	KUNIT_ASSERT_EQ(test, call(fd, NXQ_IOC_TICKET_READ, 0, &t, sizeof(t),
				   &t, &rlen), -EAGAIN);
	t2 = now_ms();
	/*
	 * ticket 2, while the daemon's thread is still in its first write:
	 * the max lowered below A's 500 (the ack waits for the signals it
	 * queued, so A's count is there when it comes)
	 */
	KUNIT_EXPECT_EQ(test, ctl_set_max(&d, cg.rel, 300, msg, sizeof(msg)), 0);
	t1 = now_ms();
	kunit_info(test, "ticket 2 was asked %llu ms after ticket 1, acked at %llu ms",
		   (unsigned long long)(t2 - t0), (unsigned long long)(t1 - t0));
	/* later than the write's sleep proves nothing either way */
	if (t2 - t0 < 1000) {
		KUNIT_EXPECT_EQ(test, poll(&pf, 1, 0), 1);
		KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_TICKET_READ, 0, &t,
					   sizeof(t), &t, &rlen), 0);
		KUNIT_EXPECT_EQ(test, t.bytes, 200ULL);
	}
	close(fd);
	close(efa);
	close(efb);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * A budget change that cannot be written (the disk is full: the state's
 * temporary file is /dev/full) is refused, says so, and is not in effect;
 * the next start finds what was acknowledged.  Before: acknowledged, then
 * lost at the next restart.
 */
static void nxqd_test_durability(struct kunit *test)
{
	struct nxq_status st;
	char msg[256], tmp[128];
	struct daemon d;
	struct tcg cg;
	int fd, efd;
	u64 id;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "-");
	snprintf(tmp, sizeof(tmp), "%s/state.tmp", d.dir);
	KUNIT_ASSERT_EQ(test, symlink("/dev/full", tmp), 0);
	KUNIT_EXPECT_EQ(test, ctl_set_max(&d, cg.rel, 5000, msg, sizeof(msg)),
			-ENOSPC);
	KUNIT_EXPECT_NOT_NULL(test, strstr(msg, "could not be saved"));
	unlink(tmp);
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efd, &id), 0);
	KUNIT_EXPECT_EQ(test, status(fd, id, &st), 0);
	KUNIT_EXPECT_EQ(test, st.node_max, 1000ULL);	/* not in effect */
	close(fd);
	close(efd);
	/* a change that can be written is; a restart keeps it */
	KUNIT_EXPECT_EQ(test, ctl_set_max(&d, cg.rel, 3000, msg, sizeof(msg)),
			0);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGKILL), 128 + SIGKILL);
	d.pid = spawn(test, &d);
	wait_up(test, &d);
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efd, &id), 0);
	KUNIT_EXPECT_EQ(test, status(fd, id, &st), 0);
	KUNIT_EXPECT_EQ(test, st.node_max, 3000ULL);
	close(fd);
	close(efd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/* Send a request without reading its answer: 0, or 1 if it was not sent. */
static int send_only(int fd, __u32 cmd, const void *arg, size_t len)
{
	unsigned char msg[sizeof(struct nxqd_req) + 256];
	struct nxqd_req req = { .cmd = cmd };

	memcpy(msg, &req, sizeof(req));
	memcpy(msg + sizeof(req), arg, len);
	return send(fd, msg, sizeof(req) + len, MSG_NOSIGNAL) !=
	       (ssize_t)(sizeof(req) + len);
}

/*
 * Descriptors no command takes (three with a VERSION: more than a
 * request takes, so the kernel drops one; one with a VERSION) penalize
 * the sender's subtree: nothing more is read from any of its connections
 * for NXQD_PENALTY_US, and it is not polled meanwhile.  Another subtree's
 * requests are served in that time, and the penalized one's next request
 * is answered after it (not lost: the connection is polled again).
 * Before: read at once, each such request costing the loop twice a
 * plain one's time (4 loops passing 253 fds: a neighbour's pair 2.1-2.6x).
 */
static void nxqd_test_fds_penalty(struct kunit *test)
{
	struct nxq_version v = { .size = sizeof(v) };
	struct timeval tv = { .tv_sec = 3 };
	struct daemon d;
	struct tcg atk, cg;
	int a1, a2, n, efd[3], i, nfds, first = 0;
	u64 t0, tn, ta, least = ~0ULL;
	size_t rlen;
	unsigned char rep[256];

	cg_enter(test, &atk);
	start_with(test, &d, &atk, 1000, "-");
	a1 = dial(d.sock, SOCK_SEQPACKET);
	a2 = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, a1, 0);
	KUNIT_ASSERT_GE(test, a2, 0);
	/*
	 * A plain request on each first: neither subtree is held back, and
	 * both are answered, so the daemon has accepted them and put them
	 * in this subtree (it reads the connector's cgroup at accept: a
	 * move before that put a2 in the neighbour's, CI run of 1c2bfbd).
	 */
	KUNIT_EXPECT_EQ(test, call(a1, NXQ_IOC_VERSION, 0, &v, sizeof(v), NULL,
				   &rlen), 0);
	KUNIT_EXPECT_EQ(test, call(a2, NXQ_IOC_VERSION, 0, &v, sizeof(v), NULL,
				   &rlen), 0);
	cg_enter(test, &cg);		/* the neighbour's subtree */
	n = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, n, 0);
	KUNIT_ASSERT_EQ(test, setsockopt(a2, SOL_SOCKET, SO_RCVTIMEO, &tv,
					 sizeof(tv)), 0);
	for (i = 0; i < 3; i++)
		efd[i] = eventfd(0, EFD_CLOEXEC);
	for (i = 0; i < 6; i++) {
		nfds = i % 2 ? 1 : 3;
		/* before the penalty begins: it ends 1 ms after, at least */
		t0 = now_ns();
		KUNIT_EXPECT_EQ(test, call_fds(a1, NXQ_IOC_VERSION, 0, &v,
					       sizeof(v), NULL, &rlen, efd,
					       nfds), -EINVAL);
		/* the subtree's other connection, then the neighbour */
		KUNIT_ASSERT_EQ(test, send_only(a2, NXQ_IOC_VERSION, &v,
						sizeof(v)), 0);
		KUNIT_EXPECT_EQ(test, call(n, NXQ_IOC_VERSION, 0, &v,
					   sizeof(v), NULL, &rlen), 0);
		tn = now_ns() - t0;
		KUNIT_EXPECT_GE(test, recv(a2, rep, sizeof(rep), 0), 8L);
		ta = now_ns() - t0;
		first += tn < ta;
		least = min(least, ta);
	}
	kunit_info(test, "the penalized subtree's next answer: %llu us at least after its penalty's request; the neighbour's first in %d of 6",
		   (unsigned long long)least / 1000, first);
	KUNIT_EXPECT_GE(test, least, 1000000ULL);	/* NXQD_PENALTY_US */
	close(a1);
	close(a2);
	close(n);
	for (i = 0; i < 3; i++)
		close(efd[i]);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
	cg_leave(&atk);
}

/* ---- issue 32: one tenant's connections do not keep another's out ---- */

/* nxquotad's defaults: per uid (-U), in all (-N), room kept per subtree (-Q) */
#define NXQD_CONN_PER_UID_T	4096
#define NXQD_CONNS_MAX_T	8192
#define NXQD_CONN_RESERVE_T	32

/*
 * A cgroup at the cgroup2 root for a case's tenants (not entered),
 * delegated to @owner if not 0: its directory and the files a delegation
 * hands over (cgroup.procs, cgroup.threads, cgroup.subtree_control)
 * chowned, as systemd and container runtimes delegate.
 */
static void cg_make(struct kunit *test, struct tcg *cg, const char *tag, uid_t owner)
{
	static const char *const files[] = { "", "/cgroup.procs", "/cgroup.threads",
					     "/cgroup.subtree_control" };
	char root[256], f[600];

	if (geteuid() || !cg_root(root, sizeof(root)))
		kunit_skip(test, "needs root and a cgroup2 mount");
	snprintf(cg->rel, sizeof(cg->rel), "/nxqd-test.%d.%s", (int)getpid(), tag);
	snprintf(cg->dir, sizeof(cg->dir), "%s%s", root, cg->rel);
	cg->orig[0] = '\0';
	if (mkdir(cg->dir, 0755))
		kunit_skip(test, "cannot make a cgroup in %s", root);
	for (int i = 0; owner && i < 4; i++) {
		snprintf(f, sizeof(f), "%s%s", cg->dir, files[i]);
		KUNIT_ASSERT_EQ(test, chown(f, owner, UNOBODY), 0);
	}
}

/* Remove it, and the child cgroups its tenants made (c0, c1), once empty. */
static void cg_unmake(struct tcg *cg)
{
	char f[600];

	for (int k = 0; k < 2; k++) {
		snprintf(f, sizeof(f), "%s/c%d", cg->dir, k);
		for (int i = 0; i < 100 && rmdir(f) && errno == EBUSY; i++)
			usleep_range(10000, 11000);
	}
	for (int i = 0; i < 100 && rmdir(cg->dir) && errno == EBUSY; i++)
		usleep_range(10000, 11000);
}

/* In a child: uid @uid, gid 65534 (the client socket's group), no others. */
static bool become(uid_t uid)
{
	return !setgroups(0, NULL) && !setgid(UNOBODY) && !setuid(uid);
}

struct filler {
	const char *sock;
	const char *cgdir;	/* entered as root */
	int child;		/* 0, 1: then c<child> made in it and entered, as the tenant; -1 no */
	uid_t uid;
	int max;		/* connections it tries to hold at most */
	int got;		/* connections it holds (each answered NXQ_IOC_VERSION) */
	int step;		/* what failed, if anything */
};

/*
 * A tenant that fills what it can: connections until @max are held or 16
 * in a row are refused (the daemon closes one over a bound at once, so
 * its NXQ_IOC_VERSION gets no answer).  Reports on fd 3, then waits to be
 * killed, holding them.
 */
static int fill_tenant(struct filler *f)
{
	struct nxq_version v = { .size = sizeof(v) };
	struct timeval tv = { .tv_sec = 2 };
	int fd, miss = 0;
	size_t rlen;

	while (f->got < f->max && miss < 16) {
		fd = dial(f->sock, SOCK_SEQPACKET);
		if (fd < 0) {
			miss++;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (call(fd, NXQ_IOC_VERSION, 0, &v, sizeof(v), NULL, &rlen)) {
			close(fd);
			miss++;
			continue;
		}
		f->got++;
		miss = 0;
	}
	if (write(3, f, sizeof(*f)) != sizeof(*f))
		return 1;
	for (;;)
		pause();
}

/* Run @f in a child until it reported (f->got); its pid. */
static pid_t fill(struct kunit *test, struct filler *f)
{
	char procs[640], child[620], pidbuf[32];
	int p[2];
	pid_t pid;

	KUNIT_ASSERT_EQ(test, pipe(p), 0);
	pid = fork();
	KUNIT_ASSERT_GE(test, pid, 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		snprintf(pidbuf, sizeof(pidbuf), "%d", (int)getpid());
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", f->cgdir);
		f->step = 1;
		if (dup2(p[1], 3) != 3 || write_str(procs, pidbuf) || !become(f->uid))
			goto out;
		if (f->child >= 0) {
			/* the tenant's own child cgroup: possible only where it was delegated */
			f->step = 2;
			snprintf(child, sizeof(child), "%s/c%d", f->cgdir, f->child);
			snprintf(procs, sizeof(procs), "%s/cgroup.procs", child);
			if (mkdir(child, 0755) || write_str(procs, pidbuf))
				goto out;
		}
		f->step = 0;
		_exit(fill_tenant(f));
out:
		if (write(3, f, sizeof(*f)) != sizeof(*f))
			_exit(98);
		_exit(99);
	}
	close(p[1]);
	KUNIT_EXPECT_EQ(test, (long)read(p[0], f, sizeof(*f)), (long)sizeof(*f));
	KUNIT_EXPECT_EQ(test, f->step, 0);
	close(p[0]);
	return pid;
}

/*
 * A neighbour (uid @uid) in the test's cgroup: connects, registers a
 * holder and charges 100 bytes.  0, or which step failed (2 connect, 3
 * the first request, 4 register, 5 charge).
 */
static int neighbour(const char *sock, uid_t uid)
{
	struct nxq_version v = { .size = sizeof(v) };
	struct timeval tv = { .tv_sec = 3 };
	size_t rlen;
	pid_t pid = fork();
	int st = 0;

	if (pid < 0)
		return -1;
	if (!pid) {
		/* an eventfd: a holder without one may not charge beyond its min (0) */
		int fd, efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		u64 id;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (efd < 0 || !become(uid))
			_exit(99);
		fd = dial(sock, SOCK_SEQPACKET);
		if (fd < 0)
			_exit(2);
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (call(fd, NXQ_IOC_VERSION, 0, &v, sizeof(v), NULL, &rlen))
			_exit(3);
		if (reg(fd, efd, &id))
			_exit(4);
		_exit(charge(fd, id, 100, NXQ_CHARGE_NOWAIT, 0, NULL) ? 5 : 0);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void raise_nofile(struct kunit *test, rlim_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_max < need)
		kunit_skip(test, "needs %lu descriptors", (unsigned long)need);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

/*
 * One uid, five delegated cgroups (each delegated to uid 65534, as
 * systemd or a runtime delegates), two processes in each, each in a child
 * cgroup of its own that the tenant made there: each fills what it can,
 * one subtree after the other.  A delegated subtree counts as one: its
 * children together hold the bound per cgroup (1024), not 1024 each; four
 * subtrees fill the uid's 4096, the fifth gets its reserve (32); and a
 * neighbour of the same uid in another cgroup still connects, registers
 * and charges.  Before (c0bd729): each child cgroup had 1024 of its own,
 * the uid's 4096 filled, and the neighbour was refused -- run as it would
 * be under NXQUOTA_REQUIRE=1, every allocation of its refused.
 */
static void nxqd_test_conn_uid_subtrees(struct kunit *test)
{
	struct tcg cg, dg[5];
	struct daemon d;
	pid_t pid[5][2];
	int got[5] = { 0 }, i, k, nb;
	char tag[16];

	raise_nofile(test, 5000);
	cg_enter(test, &cg);
	start_tenants(test, &d, &cg, 1000, "-", NULL);
	for (i = 0; i < 5; i++) {
		snprintf(tag, sizeof(tag), "d%d", i);
		cg_make(test, &dg[i], tag, UNOBODY);
	}
	for (i = 0; i < 5; i++)
		for (k = 0; k < 2; k++) {
			struct filler f = { .sock = d.sock, .cgdir = dg[i].dir, .child = k,
					    .uid = UNOBODY, .max = 700 };

			pid[i][k] = fill(test, &f);
			got[i] += f.got;
		}
	nb = neighbour(d.sock, UNOBODY);
	kunit_info(test, "one uid, 5 delegated subtrees: %d %d %d %d %d connections; the neighbour: %d",
		   got[0], got[1], got[2], got[3], got[4], nb);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, got[i], NXQD_CONN_PER_CGROUP_T);
	KUNIT_EXPECT_EQ(test, got[4], NXQD_CONN_RESERVE_T);
	KUNIT_EXPECT_EQ(test, nb, 0);
	for (i = 0; i < 5; i++)
		for (k = 0; k < 2; k++) {
			kill(pid[i][k], SIGKILL);
			waitpid(pid[i][k], NULL, 0);
		}
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	for (i = 0; i < 5; i++)
		cg_unmake(&dg[i]);
	cg_leave(&cg);
}

/*
 * Two uids fill the node: four processes of each, each in a cgroup of its
 * own, take 1024 connections each -- 4096 per uid, 8192 in all.  A fifth
 * process of the first uid, in a fifth cgroup, gets only its subtree's
 * reserve (the uid is full, and so is the node beyond the reserves); a
 * neighbour of a third uid in another cgroup still connects, registers
 * and charges.  Before (c0bd729): the node was full, the fifth got 0, the
 * neighbour was refused.
 */
static void nxqd_test_conn_two_uids(struct kunit *test)
{
	struct tcg cg, ug[9];
	struct daemon d;
	pid_t pid[9];
	int got[9], i, nb, total = 0;
	char tag[16];

	raise_nofile(test, 10000);
	cg_enter(test, &cg);
	start_tenants(test, &d, &cg, 1000, "-", NULL);
	for (i = 0; i < 9; i++) {
		struct filler f = { .sock = d.sock, .child = -1, .max = 1100 };

		snprintf(tag, sizeof(tag), "u%d", i);
		cg_make(test, &ug[i], tag, 0);
		f.cgdir = ug[i].dir;
		f.uid = i < 4 || i == 8 ? UNOBODY : UNOBODY - 1;
		pid[i] = fill(test, &f);
		got[i] = f.got;
		total += i < 8 ? f.got : 0;
	}
	nb = neighbour(d.sock, UNOBODY - 2);
	kunit_info(test, "two uids: %d connections in 8 cgroups; a ninth cgroup of the first: %d; the neighbour: %d",
		   total, got[8], nb);
	for (i = 0; i < 8; i++)
		KUNIT_EXPECT_EQ(test, got[i], NXQD_CONN_PER_CGROUP_T);
	KUNIT_EXPECT_EQ(test, total, NXQD_CONNS_MAX_T);
	KUNIT_EXPECT_EQ(test, got[8], NXQD_CONN_RESERVE_T);
	KUNIT_EXPECT_EQ(test, nb, 0);
	for (i = 0; i < 9; i++) {
		kill(pid[i], SIGKILL);
		waitpid(pid[i], NULL, 0);
	}
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	for (i = 0; i < 9; i++)
		cg_unmake(&ug[i]);
	cg_leave(&cg);
}

static struct kunit_case nxqd_attack_cases[] = {
	KUNIT_CASE(nxqd_test_opath),
	KUNIT_CASE(nxqd_test_decoy_creds),
	KUNIT_CASE(nxqd_test_ctl_passed),
	KUNIT_CASE(nxqd_test_ctl_nocap),
	KUNIT_CASE(nxqd_test_eventfd_block),
	KUNIT_CASE(nxqd_test_register_storm),
	KUNIT_CASE(nxqd_test_conn_flood),
	KUNIT_CASE(nxqd_test_notify),
	KUNIT_CASE(nxqd_test_durability),
	KUNIT_CASE(nxqd_test_ticket_before_ack),
	KUNIT_CASE(nxqd_test_ticket_during_write),
	KUNIT_CASE(nxqd_test_fds_penalty),
	KUNIT_CASE(nxqd_test_conn_uid_subtrees),
	KUNIT_CASE(nxqd_test_conn_two_uids),
	{}
};

static struct kunit_suite nxqd_attack_suite = {
	.name = "nxquotad-attack",
	.test_cases = nxqd_attack_cases,
};

kunit_test_suite(nxqd_attack_suite);
