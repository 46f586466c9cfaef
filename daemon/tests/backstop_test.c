// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's backstop (backstop.c, issue 28 item 2) against the fake NVML
 * (tests/fakenvml/fakenvml.c, built as build/nvml/libnvidia-ml.so.1 next to
 * this binary and found by the daemon through LD_LIBRARY_PATH): the
 * fake's file says what each process "uses" on the device host0, and is
 * read again at each poll (FAKE_NVML_LIVE).  Processes are children of
 * the case, in cgroups it makes; none goes through the shim, so what the
 * file gives them is what escaped the ledger unless their holders (made
 * on the client socket) charged it.  Root and a writable cgroup2 are
 * needed, else the cases are skipped.
 *
 * Each case failed with the rule it checks broken (daemon/mutants.sh
 * keeps the mutants: no start-time check, the kill of the whole group,
 * charges left out, the allowance ignored).
 */
#include <sched.h>
#include <sys/syscall.h>

#include "client_util.h"

#define MiB		(1ULL << 20)
#define POLL_MS		50	/* nxquotad -b in these cases */

/* The fake NVML's directory, next to this binary; false if not built. */
static bool bs_fake_dir(char *dir, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", dir, len - 1);

	if (n <= 0)
		return false;
	dir[n] = '\0';
	*strrchr(dir, '/') = '\0';
	strncat(dir, "/nvml", len - strlen(dir) - 1);
	strncat(dir, "/libnvidia-ml.so.1", len - strlen(dir) - 1);
	if (access(dir, R_OK))
		return false;
	*strrchr(dir, '/') = '\0';
	return true;
}

static void bs_path(const struct daemon *d, const char *name, char *buf,
		    size_t len)
{
	snprintf(buf, len, "%s/%s", d->dir, name);
}

/* Replace the fake's file (rename: never read half written). */
static void bs_nvml(struct kunit *test, const struct daemon *d,
		    const char *text)
{
	char p[160], tmp[160];
	FILE *f;

	bs_path(d, "nvml.txt", p, sizeof(p));
	bs_path(d, "nvml.tmp", tmp, sizeof(tmp));
	f = fopen(tmp, "we");
	KUNIT_ASSERT_NOT_NULL(test, f);
	fputs(text, f);
	KUNIT_ASSERT_EQ(test, fclose(f), 0);
	KUNIT_ASSERT_EQ(test, rename(tmp, p), 0);
}

/*
 * The daemon on host0 (1 GiB) with the budgets of the state file the
 * case wrote (@d prepared), the fake NVML and -b POLL_MS -x @allow,
 * @kill: -k.
 */
static void bs_start(struct kunit *test, struct daemon *d, const char *allow,
		     bool kill, const char *delay_ms)
{
	const char *args[] = { "-b", "50", "-x", allow, kill ? "-k" : NULL,
			       NULL };
	char dir[512], p[160];

	if (!bs_fake_dir(dir, sizeof(dir)))
		kunit_skip(test, "no fake NVML next to this binary");
	bs_nvml(test, d, "host0\n");
	bs_path(d, "nvml.txt", p, sizeof(p));
	setenv("LD_LIBRARY_PATH", dir, 1);
	setenv("FAKE_NVML_FILE", p, 1);
	setenv("FAKE_NVML_LIVE", "1", 1);
	bs_path(d, "nvml.log", p, sizeof(p));
	setenv("FAKE_NVML_LOG", p, 1);
	if (delay_ms)
		setenv("FAKE_NVML_DELAY_MS", delay_ms, 1);
	d->pid = spawn_args(test, d, args);
	unsetenv("LD_LIBRARY_PATH");
	unsetenv("FAKE_NVML_FILE");
	unsetenv("FAKE_NVML_LIVE");
	unsetenv("FAKE_NVML_LOG");
	unsetenv("FAKE_NVML_DELAY_MS");
	wait_up(test, d);
}

static void bs_stop(struct kunit *test, struct daemon *d)
{
	char p[160];

	KUNIT_EXPECT_EQ(test, stop(d, SIGTERM), 0);
	bs_path(d, "nvml.txt", p, sizeof(p));
	unlink(p);
	bs_path(d, "nvml.log", p, sizeof(p));
	unlink(p);
	cleanup(test, d);
}

/* A subdirectory @name of the case's cgroup; its path in @rel. */
static void bs_subcg(struct kunit *test, struct tcg *cg, const char *name,
		     char *rel, size_t len)
{
	char dir[600];

	snprintf(rel, len, "%s/%s", cg->rel, name);
	snprintf(dir, sizeof(dir), "%s/%s", cg->dir, name);
	KUNIT_ASSERT_EQ(test, mkdir(dir, 0755), 0);
}

static void bs_rmcg(struct tcg *cg, const char *name)
{
	char dir[600];

	snprintf(dir, sizeof(dir), "%s/%s", cg->dir, name);
	rmdir(dir);
}

/* Move @pid into the case's cgroup's subdirectory @name. */
static int bs_move(struct tcg *cg, const char *name, pid_t pid)
{
	char f[700], s[32];

	snprintf(f, sizeof(f), "%s/%s/cgroup.procs", cg->dir, name);
	snprintf(s, sizeof(s), "%d", (int)pid);
	return write_str(f, s);
}

/*
 * A child that sleeps in @name (NULL: the case's cgroup); if @charge, it
 * first registers a holder on the daemon and charges @charge bytes (it is
 * ready when this returns).
 */
static pid_t bs_child(struct kunit *test, struct tcg *cg, const char *name,
		      struct daemon *d, u64 bytes)
{
	int p[2], fd;
	pid_t pid;
	char ok = 0;
	u64 id;

	KUNIT_ASSERT_EQ(test, pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	KUNIT_ASSERT_GE(test, pid, 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (name && bs_move(cg, name, getpid()))
			_exit(1);
		if (bytes) {
			/* with an eventfd: it may hold beyond a min (none) */
			fd = dial(d->sock, SOCK_SEQPACKET);
			if (fd < 0 || reg(fd, eventfd(0, EFD_CLOEXEC), &id) ||
			    charge(fd, id, bytes, 0, 0, NULL))
				_exit(2);
		}
		ok = 1;
		if (write(p[1], &ok, 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	close(p[1]);
	KUNIT_EXPECT_EQ(test, read(p[0], &ok, 1), 1);
	close(p[0]);
	KUNIT_ASSERT_EQ(test, ok, 1);
	return pid;
}

/* Wait up to @ms for @pid to die; its signal, 0 if it lives, -1 if other. */
static int bs_reaped(pid_t pid, int ms)
{
	int st, i;

	for (i = 0; i <= ms; i += 5) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFSIGNALED(st) ? WTERMSIG(st) : -1;
		if (r < 0)
			return -1;
		usleep(5000);
	}
	return 0;
}

static void bs_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The log names @pid as the backstop's ("pid N (" ... ": named|killed"). */
static bool bs_named(const struct daemon *d, pid_t pid, const char *how)
{
	char s[64];

	snprintf(s, sizeof(s), "pid %d (", (int)pid);
	return log_has(d, s) && (!how || log_has(d, how));
}

/* Polls the fake answered so far (lines of the log that fill a buffer). */
static int bs_polls(const struct daemon *d)
{
	char p[160], line[256];
	int n = 0;
	FILE *f;

	bs_path(d, "nvml.log", p, sizeof(p));
	f = fopen(p, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += !!strstr(line, "procs v3 host0 room 0");
	fclose(f);
	return n;
}

/* Wait until the daemon has polled @n more times (2 s each at most). */
static void bs_wait_polls(struct kunit *test, const struct daemon *d, int n)
{
	int want = bs_polls(d) + n, i;

	for (i = 0; i < 400 * n && bs_polls(d) < want; i++)
		usleep(5000);
	KUNIT_ASSERT_GE(test, bs_polls(d), want);
}

/* ---- the events, from the control socket ---- */

struct bs_ev {
	__u32 type, pid, reason;
	__u64 bytes, value, cgroup_id;
};

static int bs_subscribe(struct kunit *test, const struct daemon *d)
{
	int fd = dial(d->ctl, SOCK_SEQPACKET);

	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_ASSERT_EQ(test, nl_call(fd, NXQUOTA_CMD_EVENT, 0, NULL, 0, NULL,
				      NULL, NULL, 0), 0);
	return fd;
}

/* The next escaped event naming @pid within @ms; false if none came. */
static bool bs_event(int fd, pid_t pid, int ms, struct bs_ev *ev)
{
	unsigned char buf[8192] __attribute__((aligned(8)));
	u64 end = now_ms() + ms;

	while (now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct nlmsghdr *h = (void *)buf;
		struct nlattr *a;
		ssize_t n;
		int rem;

		if (poll(&p, 1, (int)(end - now_ms())) <= 0)
			break;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < (ssize_t)(NLMSG_HDRLEN + GENL_HDRLEN))
			return false;
		memset(ev, 0, sizeof(*ev));
		a = (void *)((char *)NLMSG_DATA(h) + GENL_HDRLEN);
		rem = (int)h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;
		for (; rem >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
		       a->nla_len <= rem;
		     rem -= NLA_ALIGN(a->nla_len),
		     a = (void *)((char *)a + NLA_ALIGN(a->nla_len))) {
			void *v = (char *)a + NLA_HDRLEN;

			switch (a->nla_type) {
			case NXQUOTA_A_EVENT_TYPE: ev->type = *(__u32 *)v; break;
			case NXQUOTA_A_EVENT_PID: ev->pid = *(__u32 *)v; break;
			case NXQUOTA_A_EVENT_REASON: ev->reason = *(__u32 *)v; break;
			case NXQUOTA_A_EVENT_BYTES: memcpy(&ev->bytes, v, 8); break;
			case NXQUOTA_A_EVENT_VALUE: memcpy(&ev->value, v, 8); break;
			case NXQUOTA_A_EVENT_CGROUP_ID:
				memcpy(&ev->cgroup_id, v, 8);
				break;
			}
		}
		if (ev->type == NXQUOTA_EVENT_TYPE_ESCAPED &&
		    ev->pid == (__u32)pid)
			return true;
	}
	return false;
}

/* A budget dump's measured and escaped for one cgroup id (~0: absent). */
struct bs_dump {
	__u64 id, measured, escaped;
};

static void bs_dump_each(void *ctx, struct nlattr *a, int rem)
{
	struct bs_dump *w = ctx;
	__u64 id = 0, me = ~0ULL, es = ~0ULL;

	for (; rem >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
	       a->nla_len <= rem;
	     rem -= NLA_ALIGN(a->nla_len),
	     a = (void *)((char *)a + NLA_ALIGN(a->nla_len))) {
		void *v = (char *)a + NLA_HDRLEN;

		if (a->nla_type == NXQUOTA_A_BUDGET_CGROUP_ID)
			memcpy(&id, v, 8);
		else if (a->nla_type == NXQUOTA_A_BUDGET_MEASURED)
			memcpy(&me, v, 8);
		else if (a->nla_type == NXQUOTA_A_BUDGET_ESCAPED)
			memcpy(&es, v, 8);
	}
	if (id == w->id) {
		w->measured = me;
		w->escaped = es;
	}
}

static void bs_budget(struct kunit *test, const struct daemon *d,
		      struct bs_dump *w)
{
	int fd = dial(d->ctl, SOCK_SEQPACKET);

	KUNIT_ASSERT_GE(test, fd, 0);
	w->measured = w->escaped = ~0ULL;
	KUNIT_EXPECT_EQ(test, nl_call(fd, NXQUOTA_CMD_BUDGET_GET, NLM_F_DUMP,
				      NULL, 0, bs_dump_each, w, NULL, 0), 0);
	close(fd);
}

/* The cgroup id (inode) of the case's cgroup subdirectory @rel. */
static u64 bs_cgid(const char *rel)
{
	char root[256], p[700];
	struct stat st;

	if (!cg_root(root, sizeof(root)))
		return 0;
	snprintf(p, sizeof(p), "%s%s", root, rel);
	return stat(p, &st) ? 0 : st.st_ino;
}

/*
 * A process that allocates on the (fake) driver without the shim is
 * named, in the log and in an escaped event with its cgroup, what it
 * uses beyond its charges and what the cgroup uses; without -k it lives.
 * A process in the same cgroup whose holder charged what NVML gives it
 * is not named, though the cgroup is over.
 */
static void bs_test_flagged(struct kunit *test)
{
	struct daemon d;
	struct tcg cg;
	struct bs_ev ev = { 0 };
	char t[160], text[256];
	struct bs_dump dump;
	pid_t esc, good;
	int fd;

	cg_enter(test, &cg);
	prepare(test, &d);
	bs_subcg(test, &cg, "t", t, sizeof(t));
	write_state(test, &d, 1ULL << 30, "-", t, 16 * MiB);
	bs_start(test, &d, "0", false, NULL);
	fd = bs_subscribe(test, &d);
	good = bs_child(test, &cg, "t", &d, 8 * MiB);
	esc = bs_child(test, &cg, "t", &d, 0);
	snprintf(text, sizeof(text), "host0\nhost0 %d %llu\nhost0 %d %llu\n",
		 (int)good, 8 * MiB, (int)esc, 64 * MiB);
	bs_nvml(test, &d, text);
	KUNIT_EXPECT_TRUE(test, bs_event(fd, esc, 3000, &ev));
	KUNIT_EXPECT_EQ(test, ev.reason, 0U);
	KUNIT_EXPECT_EQ(test, ev.bytes, 64 * MiB);
	KUNIT_EXPECT_EQ(test, ev.value, 72 * MiB);
	KUNIT_EXPECT_EQ(test, ev.cgroup_id, bs_cgid(t));
	/* said once, not at every poll; it lives; the charged one is not named */
	bs_wait_polls(test, &d, 3);
	KUNIT_EXPECT_FALSE(test, bs_event(fd, esc, 2 * POLL_MS, &ev));
	KUNIT_EXPECT_TRUE(test, bs_named(&d, esc, ": named"));
	KUNIT_EXPECT_FALSE(test, bs_named(&d, good, NULL));
	KUNIT_EXPECT_EQ(test, bs_reaped(esc, 0), 0);
	/* the budget dump (nxquotactl status, metrics) carries the measure */
	dump.id = bs_cgid(t);
	bs_budget(test, &d, &dump);
	KUNIT_EXPECT_EQ(test, dump.measured, 72 * MiB);
	KUNIT_EXPECT_EQ(test, dump.escaped, 1ULL);
	close(fd);
	bs_kill(esc);
	bs_kill(good);
	bs_stop(test, &d);
	bs_rmcg(&cg, "t");
	cg_leave(&cg);
}

/*
 * With -k the escaping process is killed (SIGKILL, reason 9 in the
 * event) within the bound daemon/README.md states: a poll period, the
 * NVML read and the kill -- here under 2 periods and 500 ms of slack for
 * a loaded machine.  A neighbour within its budget in another cgroup,
 * which NVML lists too, lives.
 */
static void bs_test_killed(struct kunit *test)
{
	struct daemon d;
	struct tcg cg;
	struct bs_ev ev = { 0 };
	char t[160], n[160], text[256];
	pid_t esc, nb;
	u64 t0, took;
	int fd;

	cg_enter(test, &cg);
	prepare(test, &d);
	bs_subcg(test, &cg, "t", t, sizeof(t));
	bs_subcg(test, &cg, "n", n, sizeof(n));
	write_state(test, &d, 1ULL << 30, "-", t, 16 * MiB);
	add_budget(test, &d, n, 16 * MiB);
	bs_start(test, &d, "1048576", true, NULL);
	fd = bs_subscribe(test, &d);
	nb = bs_child(test, &cg, "n", &d, 12 * MiB);
	esc = bs_child(test, &cg, "t", &d, 0);
	snprintf(text, sizeof(text), "host0\nhost0 %d %llu\nhost0 %d %llu\n",
		 (int)nb, 13 * MiB, (int)esc, 18 * MiB);
	t0 = now_ms();
	bs_nvml(test, &d, text);
	KUNIT_EXPECT_EQ(test, bs_reaped(esc, 2 * POLL_MS + 500), SIGKILL);
	took = now_ms() - t0;
	kunit_info(test, "escaped for %llu ms (poll period %d ms)",
		   (unsigned long long)took, POLL_MS);
	KUNIT_EXPECT_TRUE(test, bs_event(fd, esc, 1000, &ev));
	KUNIT_EXPECT_EQ(test, ev.reason, (__u32)SIGKILL);
	/* 18M less the 1M allowance */
	KUNIT_EXPECT_EQ(test, ev.bytes, 17 * MiB);
	KUNIT_EXPECT_TRUE(test, bs_named(&d, esc, ": killed"));
	bs_wait_polls(test, &d, 3);
	KUNIT_EXPECT_EQ(test, bs_reaped(nb, 0), 0);
	KUNIT_EXPECT_FALSE(test, bs_named(&d, nb, NULL));
	close(fd);
	bs_kill(nb);
	bs_stop(test, &d);
	bs_rmcg(&cg, "t");
	bs_rmcg(&cg, "n");
	cg_leave(&cg);
}

/*
 * Tenants within their budgets are never named, with -k: one charged for
 * what it uses plus less than the allowance, one uncharged whose use is
 * within its cgroup's max, and one whose max was lowered below what it
 * holds (being asked back is not escaping: max(max, charged) counts).
 */
static void bs_test_within(struct kunit *test)
{
	struct daemon d;
	struct tcg cg;
	char a[160], b[160], c[160], text[512], msg[256];
	unsigned char at[256];
	pid_t pa, pb, pc;
	size_t off;
	u64 max = 2 * MiB;
	int fd;

	cg_enter(test, &cg);
	prepare(test, &d);
	bs_subcg(test, &cg, "a", a, sizeof(a));
	bs_subcg(test, &cg, "b", b, sizeof(b));
	bs_subcg(test, &cg, "c", c, sizeof(c));
	write_state(test, &d, 1ULL << 30, "-", a, 8 * MiB);
	add_budget(test, &d, b, 8 * MiB);
	add_budget(test, &d, c, 8 * MiB);
	bs_start(test, &d, "1048576", true, NULL);
	pa = bs_child(test, &cg, "a", &d, 4 * MiB);
	pb = bs_child(test, &cg, "b", &d, 0);
	pc = bs_child(test, &cg, "c", &d, 6 * MiB);
	/* c's max down to 2M, under its 6M charge */
	fd = dial(d.ctl, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	off = nl_put(at, 0, NXQUOTA_A_BUDGET_DEVICE, "host0", 6);
	off = nl_put(at, off, NXQUOTA_A_BUDGET_CGROUP_PATH, c, strlen(c) + 1);
	off = nl_put(at, off, NXQUOTA_A_BUDGET_MAX, &max, 8);
	KUNIT_EXPECT_EQ(test, nl_call(fd, NXQUOTA_CMD_BUDGET_SET, 0, at, off,
				      NULL, NULL, msg, sizeof(msg)), 0);
	close(fd);
	snprintf(text, sizeof(text),
		 "host0\nhost0 %d %llu\nhost0 %d %llu\nhost0 %d %llu\n",
		 (int)pa, 4 * MiB + 1000000, (int)pb, 8 * MiB + 1000000,
		 (int)pc, 6 * MiB + 1000000);
	bs_nvml(test, &d, text);
	bs_wait_polls(test, &d, 6);
	KUNIT_EXPECT_EQ(test, bs_reaped(pa, 0), 0);
	KUNIT_EXPECT_EQ(test, bs_reaped(pb, 0), 0);
	KUNIT_EXPECT_EQ(test, bs_reaped(pc, 0), 0);
	KUNIT_EXPECT_FALSE(test, log_has(&d, "backstop: host0"));
	/* and the same measure 2 MiB higher is over (the test can fail) */
	snprintf(text, sizeof(text), "host0\nhost0 %d %llu\n", (int)pb,
		 10 * MiB);
	bs_nvml(test, &d, text);
	KUNIT_EXPECT_EQ(test, bs_reaped(pb, 2 * POLL_MS + 500), SIGKILL);
	bs_kill(pa);
	bs_kill(pc);
	bs_stop(test, &d);
	bs_rmcg(&cg, "a");
	bs_rmcg(&cg, "b");
	bs_rmcg(&cg, "c");
	cg_leave(&cg);
}

/* A child made by clone3() with the pid @pid, or -errno. */
static pid_t bs_clone_pid(pid_t pid, const char *cgdir)
{
	int cgfd = open(cgdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	/* clone3()'s struct clone_args (CLONE_ARGS_SIZE_VER2) */
	struct {
		__u64 flags, pidfd, child_tid, parent_tid, exit_signal;
		__u64 stack, stack_size, tls, set_tid, set_tid_size, cgroup;
	} ca = {
		.flags = 0x200000000ULL,	/* CLONE_INTO_CGROUP */
		.exit_signal = SIGCHLD,
		.set_tid = (__u64)(uintptr_t)&pid,
		.set_tid_size = 1,
		.cgroup = (__u64)cgfd,
	};
	long r;

	if (cgfd < 0)
		return -errno;
	r = syscall(SYS_clone3, &ca, sizeof(ca));
	if (r)
		close(cgfd);

	if (r < 0)
		return -errno;
	if (!r) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	return (pid_t)r;
}

/*
 * A pid reused after its process exited is not charged with what NVML
 * measured of the process before it: the fake lists A (by its start
 * time) and holds its answer 2 s (FAKE_NVML_DELAY_MS); meanwhile A
 * exits and B is made with A's pid (clone3 set_tid), in the same cgroup.
 * The daemon, with -k, must not kill B: B started after the query
 * began.  Then the later polls no longer list A (it is gone).
 */
static void bs_test_pid_reuse(struct kunit *test)
{
	struct daemon d;
	struct tcg cg;
	char t[160], text[256], p[160], line[256], tdir[600];
	pid_t a, b;
	bool filled = false;
	int i;
	FILE *f;

	cg_enter(test, &cg);
	prepare(test, &d);
	bs_subcg(test, &cg, "t", t, sizeof(t));
	write_state(test, &d, 1ULL << 30, "-", t, 1 * MiB);
	bs_start(test, &d, "0", true, "2000");
	a = bs_child(test, &cg, "t", &d, 0);
	snprintf(text, sizeof(text), "host0\nhost0 %d %llu %llu\n", (int)a,
		 64 * MiB, proc_start(a));
	bs_nvml(test, &d, text);
	/*
	 * the query that lists A is in its 2 s (room for a test thread
	 * descheduled under load): A goes, B takes its pid
	 */
	bs_path(&d, "nvml.log", p, sizeof(p));
	for (i = 0; i < 600 && !filled; i++) {
		f = fopen(p, "re");
		while (f && fgets(line, sizeof(line), f))
			filled |= !!strstr(line, "filled host0 count 1");
		if (f)
			fclose(f);
		if (!filled)
			usleep(5000);
	}
	KUNIT_ASSERT_TRUE(test, filled);
	bs_kill(a);
	snprintf(tdir, sizeof(tdir), "%s/t", cg.dir);
	b = bs_clone_pid(a, tdir);
	if (b == -EEXIST || b == -EBUSY)
		kunit_skip(test, "pid %d was taken again before the case", a);
	KUNIT_ASSERT_EQ(test, b, a);
	/* the answer that listed A comes, then two more polls */
	bs_wait_polls(test, &d, 2);
	KUNIT_EXPECT_EQ(test, bs_reaped(b, 0), 0);
	KUNIT_EXPECT_FALSE(test, bs_named(&d, b, NULL));
	bs_kill(b);
	bs_stop(test, &d);
	bs_rmcg(&cg, "t");
	cg_leave(&cg);
}

/*
 * A hostile tenant cannot make the backstop kill a neighbour: its
 * escaping process put into the neighbour's cgroup (as a tenant moving
 * processes between cgroups it may write could) makes that cgroup over,
 * and only the escaping process is killed: the neighbour, charged for
 * what it uses, lives and is never named.
 */
static void bs_test_neighbour(struct kunit *test)
{
	struct daemon d;
	struct tcg cg;
	char n[160], t[160], text[256];
	pid_t nb, esc;

	cg_enter(test, &cg);
	prepare(test, &d);
	bs_subcg(test, &cg, "n", n, sizeof(n));
	bs_subcg(test, &cg, "t", t, sizeof(t));
	write_state(test, &d, 1ULL << 30, "-", n, 16 * MiB);
	add_budget(test, &d, t, 16 * MiB);
	bs_start(test, &d, "0", true, NULL);
	nb = bs_child(test, &cg, "n", &d, 16 * MiB);
	esc = bs_child(test, &cg, "t", &d, 0);
	/* the tenant moves its process next to the neighbour */
	KUNIT_ASSERT_EQ(test, bs_move(&cg, "n", esc), 0);
	snprintf(text, sizeof(text), "host0\nhost0 %d %llu\nhost0 %d %llu\n",
		 (int)nb, 16 * MiB, (int)esc, 4 * MiB);
	bs_nvml(test, &d, text);
	KUNIT_EXPECT_EQ(test, bs_reaped(esc, 2 * POLL_MS + 500), SIGKILL);
	bs_wait_polls(test, &d, 3);
	KUNIT_EXPECT_EQ(test, bs_reaped(nb, 0), 0);
	KUNIT_EXPECT_FALSE(test, bs_named(&d, nb, NULL));
	bs_kill(nb);
	bs_stop(test, &d);
	bs_rmcg(&cg, "n");
	bs_rmcg(&cg, "t");
	cg_leave(&cg);
}

/*
 * A process with no budget on its path is held against the device's
 * default_max, in its top-level cgroup: over it, it is named (no cgroup
 * id: that cgroup has no budget node); under it, not.
 */
static void bs_test_default_max(struct kunit *test)
{
	struct daemon d;
	struct tcg cg;
	struct bs_ev ev = { 0 };
	char text[256], p[160];
	pid_t esc;
	FILE *f;
	int fd;

	cg_enter(test, &cg);
	prepare(test, &d);
	bs_path(&d, "state", p, sizeof(p));
	f = fopen(p, "we");
	KUNIT_ASSERT_NOT_NULL(test, f);
	fprintf(f, "nxquotad-state 1\n"
		"device " KEY " capacity=1073741824 devt=- default_max=4194304 ticket_timeout_ms=1000\n");
	KUNIT_ASSERT_EQ(test, fclose(f), 0);
	bs_start(test, &d, "0", false, NULL);
	fd = bs_subscribe(test, &d);
	esc = bs_child(test, &cg, NULL, &d, 0);
	snprintf(text, sizeof(text), "host0\nhost0 %d %llu\n", (int)esc,
		 4 * MiB);
	bs_nvml(test, &d, text);
	bs_wait_polls(test, &d, 3);
	KUNIT_EXPECT_FALSE(test, bs_named(&d, esc, NULL));
	snprintf(text, sizeof(text), "host0\nhost0 %d %llu\n", (int)esc,
		 5 * MiB);
	bs_nvml(test, &d, text);
	KUNIT_EXPECT_TRUE(test, bs_event(fd, esc, 3000, &ev));
	KUNIT_EXPECT_EQ(test, ev.cgroup_id, 0ULL);
	KUNIT_EXPECT_EQ(test, ev.value, 5 * MiB);
	KUNIT_EXPECT_TRUE(test, bs_named(&d, esc, cg.rel));
	close(fd);
	bs_kill(esc);
	bs_stop(test, &d);
	cg_leave(&cg);
}

static struct kunit_case nxqd_backstop_cases[] = {
	KUNIT_CASE(bs_test_flagged),
	KUNIT_CASE(bs_test_killed),
	KUNIT_CASE(bs_test_within),
	KUNIT_CASE(bs_test_pid_reuse),
	KUNIT_CASE(bs_test_neighbour),
	KUNIT_CASE(bs_test_default_max),
	{}
};

static struct kunit_suite nxqd_backstop_suite = {
	.name = "nxquotad-backstop",
	.test_cases = nxqd_backstop_cases,
};

kunit_test_suite(nxqd_backstop_suite);
