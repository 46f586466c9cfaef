// SPDX-License-Identifier: GPL-2.0
/*
 * client-bench SOCKET [ROUNDS] [DEVICE] [--attacks]: the cost of nxquotad's
 * client socket, against a bare SOCK_SEQPACKET echo on the same machine,
 * in one run: round by round, an echo round trip (a server that does
 * nothing but recv() and send() on one connection, in a process of its
 * own), a null request (NXQ_IOC_VERSION) and a charge plus an uncharge of
 * 4 KiB on one holder (with an eventfd) on DEVICE (default "host0", which
 * must let this process charge).  Prints the medians and p99s and the
 * targets: a null request <= 1.5x the echo, a pair <= 2x the echo.
 *
 * --attacks (root, a writable cgroup2): the pair again while each of the
 * issues' attacks runs from another cgroup as uid 65534 -- four
 * register/unregister loops, 4200 connections, a tenant whose eventfd
 * writes would wait, 60 waiting charges, four loops of null requests,
 * four loops of requests passing 253 descriptors each, an eventfd race
 * (issue 32) -- each against the pair without it (target <= 2x), with
 * the daemon's resident set before and after and its CPU time per
 * attacker request; last a control, four processes that only spin (the
 * attackers' CPU, which no daemon can give back); $NXQD_BENCH_ONLY, if set,
 * runs only the attacks whose names contain it; $NXQD_BENCH_HOLD_MS (300)
 * is how long each attack runs before the pairs under it are timed.  An
 * attack that is work while it runs is timed in 10 blocks of 200 pairs
 * with it stopped (SIGSTOP) alternating with 10 under it, medians of
 * each: the machine's own load weighs on both alike.
 *
 * make -C daemon bench-client runs it against the static daemon.
 */
#include <linux/nxquota.h>
#include <linux/nxquotad.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *sock_path, *device = "host0";
/* In an attacker: requests it sent, shared with the bench (mmap). */
static unsigned long *atk_sent;
static bool atk_counting;

static int dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One request and its reply: the reply's err, or -EPROTO. */
static int call(int conn, __u32 cmd, void *arg, size_t len, int fd)
{
	unsigned char msg[sizeof(struct nxqd_req) + 256];
	unsigned char rep[sizeof(struct nxqd_rep) + 256];
	struct nxqd_req req = { .cmd = cmd };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(req) + len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct nxqd_rep r;
	ssize_t n;

	memcpy(msg, &req, sizeof(req));
	memcpy(msg + sizeof(req), arg, len);
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	if (sendmsg(conn, &mh, MSG_NOSIGNAL) < 0)
		return -errno;
	if (atk_counting)
		__atomic_add_fetch(atk_sent, 1, __ATOMIC_RELAXED);
	n = recv(conn, rep, sizeof(rep), 0);
	if (n < (ssize_t)sizeof(r) || (size_t)n > sizeof(r) + len)
		return -EPROTO;
	memcpy(&r, rep, sizeof(r));
	memcpy(arg, rep + sizeof(r), n - sizeof(r));
	return r.err;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, int p)
{
	qsort(v, n, sizeof(*v), cmp);
	return v[(long)n * p / 100 >= n ? n - 1 : (long)n * p / 100];
}

/* A holder on a new connection; its connection in *conn. */
static int holder(int *conn, __u64 *id)
{
	struct nxq_holder_reg reg = { .size = sizeof(reg) };
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), err;

	*conn = dial(sock_path);
	if (*conn < 0 || efd < 0)
		return -errno;
	snprintf(reg.device, sizeof(reg.device), "%s", device);
	reg.eventfd = efd;
	err = call(*conn, NXQ_IOC_HOLDER_REGISTER, &reg, sizeof(reg), efd);
	close(efd);
	*id = reg.holder_id;
	return err;
}

static int pair(int conn, __u64 id)
{
	struct nxq_charge c = { .size = sizeof(c), .holder_id = id,
				.bytes = 4096 };
	int err = call(conn, NXQ_IOC_CHARGE, &c, sizeof(c), -1);

	c.bytes = 4096;
	c.flags = 0;
	return err ? err : call(conn, NXQ_IOC_UNCHARGE, &c, sizeof(c), -1);
}

/* @n charge+uncharge pairs, each one's time (ns) in @v; 0 or -1. */
static int pairs_into(int conn, __u64 id, int n, double *v)
{
	double t0;
	int i;

	for (i = 0; i < n; i++) {
		t0 = now_ns();
		if (pair(conn, id))
			return -1;
		v[i] = now_ns() - t0;
	}
	return 0;
}

/* The median of @n charge+uncharge pairs (us). */
static double pairs_us(int conn, __u64 id, int n)
{
	double *v = calloc(n, sizeof(*v)), m = -1;

	if (v && !pairs_into(conn, id, n, v))
		m = pct(v, n, 50) / 1e3;
	free(v);
	return m;
}

/* ---- the echo ---- */

static pid_t echo_start(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	pid_t pid;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(l, 4))
		return -1;
	pid = fork();
	if (!pid) {
		char buf[4200];
		ssize_t n;
		int c;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		c = accept(l, NULL, NULL);
		while ((n = recv(c, buf, sizeof(buf), 0)) > 0)
			send(c, buf, n, MSG_NOSIGNAL);
		_exit(0);
	}
	close(l);
	return pid;
}

/* ---- attacks ---- */

static char cg_root[256], cg_atk[300];

static bool find_cgroup2(void)
{
	char line[4096], *f[10], *p;
	FILE *mi = fopen("/proc/self/mountinfo", "re");
	bool found = false;
	int n, i;

	while (mi && !found && fgets(line, sizeof(line), mi)) {
		n = 0;
		for (p = strtok(line, "\n "); p && n < 10;
		     p = strtok(NULL, "\n "))
			f[n++] = p;
		for (i = 6; i + 1 < n; i++)
			if (!strcmp(f[i], "-")) {
				if (!strcmp(f[i + 1], "cgroup2")) {
					snprintf(cg_root, sizeof(cg_root), "%s",
						 f[4]);
					found = true;
				}
				break;
			}
	}
	if (mi)
		fclose(mi);
	return found;
}

/* In an attacker: its cgroup, then uid/gid 65534. */
static void attacker_become(void)
{
	char procs[400], pid[32];
	cpu_set_t all;
	int fd, i;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	setpgid(0, 0);		/* stopped and killed as a group */
	atk_counting = true;
	/* the bench may be pinned (taskset): its attackers are not */
	CPU_ZERO(&all);
	for (i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &all);
	sched_setaffinity(0, sizeof(all), &all);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg_atk);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	fd = open(procs, O_WRONLY);
	if (fd < 0 || write(fd, pid, strlen(pid)) < 0)
		_exit(90);
	close(fd);
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		_exit(91);
}

static void atk_register(void)
{
	struct nxq_holder_reg reg = { .size = sizeof(reg), .eventfd = -1 };
	struct nxq_holder_id un = { .size = sizeof(un) };
	int c = dial(sock_path);

	snprintf(reg.device, sizeof(reg.device), "%s", device);
	for (;;) {
		reg.size = sizeof(reg);
		reg.eventfd = -1;
		if (call(c, NXQ_IOC_HOLDER_REGISTER, &reg, sizeof(reg), -1))
			continue;
		un.size = sizeof(un);
		un.holder_id = reg.holder_id;
		call(c, NXQ_IOC_HOLDER_UNREGISTER, &un, sizeof(un), -1);
	}
}

static void atk_conns(void)
{
	struct rlimit rl;
	int i;

	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	for (i = 0; i < 4200; i++)
		dial(sock_path);
	for (;;)
		pause();
}

static void atk_nulls(void)
{
	int c = dial(sock_path);

	for (;;) {
		struct nxq_version v = { .size = sizeof(v) };

		call(c, NXQ_IOC_VERSION, &v, sizeof(v), -1);
	}
}

/* A holder whose eventfd is full and blocking, asked again and again. */
static void atk_eventfd(void)
{
	struct nxq_holder_reg reg = { .size = sizeof(reg) };
	__u64 big = 0xfffffffffffffffeULL, a;
	int c = dial(sock_path), efd = eventfd(0, EFD_CLOEXEC);
	int c2;
	__u64 b;

	snprintf(reg.device, sizeof(reg.device), "%s", device);
	reg.eventfd = efd;
	if (call(c, NXQ_IOC_HOLDER_REGISTER, &reg, sizeof(reg), efd))
		_exit(92);
	a = reg.holder_id;
	if (holder(&c2, &b))
		_exit(93);
	{
		struct nxq_charge ch = { .size = sizeof(ch), .holder_id = a,
					 .bytes = 1 << 20 };

		call(c, NXQ_IOC_CHARGE, &ch, sizeof(ch), -1);
	}
	if (write(efd, &big, sizeof(big)) != sizeof(big))
		_exit(94);
	for (;;) {
		/* over the attacker's max (1M): asks A */
		struct nxq_charge ch = { .size = sizeof(ch), .holder_id = b,
					 .bytes = 1 << 20 };

		fcntl(efd, F_SETFL, 0);	/* blocking again, each time */
		call(c2, NXQ_IOC_CHARGE, &ch, sizeof(ch), -1);
	}
}

/*
 * Requests that each carry SCM_MAX_FD (253) descriptors -- eventfds the
 * attacker keeps open -- as fast as they are answered (issue 32: 2.39x).
 */
#define ATK_NFDS	253
static void atk_fds(void)
{
	struct nxq_version v = { .size = sizeof(v) };
	unsigned char msg[sizeof(struct nxqd_req) + sizeof(v)];
	struct nxqd_req req = { .cmd = NXQ_IOC_VERSION };
	static union {
		char buf[CMSG_SPACE(ATK_NFDS * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int c = dial(sock_path), fds[ATK_NFDS], i;
	char rep[256];

	for (i = 0; i < ATK_NFDS; i++) {
		fds[i] = eventfd(0, EFD_CLOEXEC);
		if (fds[i] < 0)
			_exit(96);
	}
	memcpy(msg, &req, sizeof(req));
	memcpy(msg + sizeof(req), &v, sizeof(v));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	for (;;) {
		if (atk_counting)
			__atomic_add_fetch(atk_sent, 1, __ATOMIC_RELAXED);
		if (sendmsg(c, &mh, MSG_NOSIGNAL) < 0 ||
		    recv(c, rep, sizeof(rep), 0) <= 0) {
			close(c);
			c = dial(sock_path);
		}
	}
}

/*
 * The eventfd race (issue 32: 2.31x, the daemon's RSS 29 -> 101 MB):
 * one eventfd is emptied and filled again, O_NONBLOCK set and cleared, by
 * a process of its own in a loop, so that the daemon's check (room in
 * the counter) and its write may straddle the fill and the write wait.
 * The attacker registers a holder A with that eventfd, charges its max
 * (1M) to A, charges more on holder B -- which asks A, and signals its
 * eventfd -- and unregisters A, over and over: the daemon stops writing
 * a file whose write it had to cut short, but each registration is a
 * new holder with a new chance, and a holder that declined is not asked
 * again soon.
 */
static void atk_efd_race(void)
{
	struct nxq_holder_reg reg = { .size = sizeof(reg) };
	struct nxq_holder_id un = { .size = sizeof(un) };
	__u64 big = 0xfffffffffffffffeULL, v, b;
	int c = dial(sock_path), c2, efd;
	pid_t racer;

	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0 || holder(&c2, &b))
		_exit(93);
	racer = fork();
	if (!racer) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(0);
		for (;;) {
			fcntl(efd, F_SETFL, O_NONBLOCK);
			if (read(efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				_exit(0);
			if (write(efd, &big, sizeof(big)) < 0 && errno != EAGAIN)
				_exit(0);
			fcntl(efd, F_SETFL, 0);
		}
	}
	for (;;) {
		struct nxq_charge ch = { .size = sizeof(ch), .bytes = 1 << 20 };

		reg.size = sizeof(reg);
		snprintf(reg.device, sizeof(reg.device), "%s", device);
		reg.eventfd = efd;
		if (call(c, NXQ_IOC_HOLDER_REGISTER, &reg, sizeof(reg), efd))
			continue;
		ch.holder_id = reg.holder_id;
		call(c, NXQ_IOC_CHARGE, &ch, sizeof(ch), -1);
		/* over the attacker's max (1M): asks A */
		ch.size = sizeof(ch);
		ch.holder_id = b;
		ch.bytes = 1 << 20;
		ch.flags = 0;
		call(c2, NXQ_IOC_CHARGE, &ch, sizeof(ch), -1);
		un.size = sizeof(un);
		un.holder_id = reg.holder_id;
		call(c, NXQ_IOC_HOLDER_UNREGISTER, &un, sizeof(un), -1);
	}
}

/*
 * No request at all: processes spinning, as many as the busiest attack
 * has -- what the pair pays for the attackers' CPU alone on the machine
 * it runs on (a control: no daemon can do better than it).
 */
static void atk_spin(void)
{
	volatile unsigned long n = 0;

	for (;;)
		n++;
}

/* 60 charges waiting at once (over the attacker's max), kept so. */
static void atk_waiters(void)
{
	struct nxq_charge ch = { .size = sizeof(ch), .flags = NXQ_CHARGE_WAIT,
				 .bytes = 2 << 20,
				 .timeout_ns = 3600ULL * 1000000000ULL };
	unsigned char msg[sizeof(struct nxqd_req) + sizeof(ch)];
	struct nxqd_req req = { .cmd = NXQ_IOC_CHARGE };
	int c, i;
	__u64 id;

	for (i = 0; i < 60; i++) {
		if (holder(&c, &id))
			_exit(95);
		ch.holder_id = id;
		memcpy(msg, &req, sizeof(req));
		memcpy(msg + sizeof(req), &ch, sizeof(ch));
		send(c, msg, sizeof(msg), MSG_NOSIGNAL);
	}
	for (;;)
		pause();
}

/*
 * @loop: the attack is work done while it runs (it can be paused): the
 * pairs without it are timed with its processes stopped (SIGSTOP), in
 * blocks alternating with blocks under it, so that the machine's load
 * weighs on both alike.  Otherwise (what it holds is the attack) the
 * pairs without it are timed before it starts.
 */
static const struct {
	const char *name;
	void (*fn)(void);
	int procs;
	bool loop;
} attacks[] = {
	{ "4 register/unregister loops", atk_register, 4, true },
	{ "4200 connections", atk_conns, 1, false },
	{ "an eventfd that would block", atk_eventfd, 1, true },
	{ "60 waiting charges", atk_waiters, 1, false },
	{ "4 loops of null requests", atk_nulls, 4, true },
	{ "4 loops passing 253 fds each", atk_fds, 4, true },
	{ "an eventfd race", atk_efd_race, 1, true },
	{ "4 busy loops, no request (control)", atk_spin, 4, true },
};

#define BLOCKS		10
#define BLOCK_PAIRS	200

static void signal_all(pid_t *pids, int n, int sig)
{
	int i;

	for (i = 0; i < n; i++)
		killpg(pids[i], sig);
}

/*
 * The medians of the pairs without and under a loop attack, in BLOCKS
 * alternating blocks; 0, or -1 if a pair failed.
 */
static int interleaved(int conn, __u64 id, pid_t *pids, int n,
		       double *alone, double *under)
{
	double *va = calloc(BLOCKS * BLOCK_PAIRS, sizeof(double));
	double *vu = calloc(BLOCKS * BLOCK_PAIRS, sizeof(double));
	int b, err = -1;

	if (!va || !vu)
		goto out;
	for (b = 0; b < BLOCKS; b++) {
		signal_all(pids, n, SIGSTOP);
		usleep(20000);	/* what they sent is answered */
		if (pairs_into(conn, id, BLOCK_PAIRS, va + b * BLOCK_PAIRS))
			goto out;
		signal_all(pids, n, SIGCONT);
		usleep(20000);
		if (pairs_into(conn, id, BLOCK_PAIRS, vu + b * BLOCK_PAIRS))
			goto out;
	}
	*alone = pct(va, BLOCKS * BLOCK_PAIRS, 50) / 1e3;
	*under = pct(vu, BLOCKS * BLOCK_PAIRS, 50) / 1e3;
	err = 0;
out:
	free(va);
	free(vu);
	return err;
}

/* CPU time of every thread of @pid so far (schedstat), in ns. */
static unsigned long long cpu_ns(pid_t pid)
{
	unsigned long long sum = 0, t;
	char p[300];
	struct dirent *e;
	DIR *d;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	d = opendir(p);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%s/schedstat", (int)pid,
			 e->d_name);
		f = fopen(p, "re");
		if (f && fscanf(f, "%llu", &t) == 1)
			sum += t;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return sum;
}

/* The resident set (VmRSS) and its peak (VmHWM) of @pid, in KiB. */
static void rss_kib(pid_t pid, long *rss, long *hwm)
{
	char p[64], line[256];
	FILE *f;

	*rss = *hwm = -1;
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	f = fopen(p, "re");
	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, "VmRSS: %ld", rss);
		sscanf(line, "VmHWM: %ld", hwm);
	}
	if (f)
		fclose(f);
}

static int run_attacks(int conn, __u64 id)
{
	const char *only = getenv("NXQD_BENCH_ONLY");
	const char *hold = getenv("NXQD_BENCH_HOLD_MS");
	long hold_ms = hold ? atol(hold) : 300;
	int a, i, bad = 0;
	pid_t pids[8];
	double base, under;
	struct ucred peer;
	socklen_t plen = sizeof(peer);
	long rss0, rss1, hwm;
	unsigned long long cpu0, cpu1;
	unsigned long sent0, sent1;

	if (geteuid() || !find_cgroup2()) {
		printf("attacks: skipped: needs root and a cgroup2 mount\n");
		return 0;
	}
	/* made, with a max of 1M, by the Makefile's bench-client */
	snprintf(cg_atk, sizeof(cg_atk), "%s/nxqd-bench-atk", cg_root);
	if (access(cg_atk, W_OK)) {
		printf("attacks: skipped: no %s\n", cg_atk);
		return 0;
	}
	/* the daemon, for its resident set and its CPU time */
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &plen))
		peer.pid = 0;
	atk_sent = mmap(NULL, sizeof(*atk_sent), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (atk_sent == MAP_FAILED)
		return 1;
	for (a = 0; a < (int)(sizeof(attacks) / sizeof(attacks[0])); a++) {
		if (only && !strstr(attacks[a].name, only))
			continue;
		base = attacks[a].loop ? 0 : pairs_us(conn, id, 2000);
		rss_kib(peer.pid, &rss0, &hwm);
		for (i = 0; i < attacks[a].procs; i++) {
			pids[i] = fork();
			if (!pids[i]) {
				attacker_become();
				attacks[a].fn();
				_exit(0);
			}
			setpgid(pids[i], pids[i]);
		}
		/* the daemon's CPU per attacker request, over the hold */
		usleep(100000);
		cpu0 = cpu_ns(peer.pid);
		sent0 = __atomic_load_n(atk_sent, __ATOMIC_RELAXED);
		usleep(hold_ms * 1000);
		cpu1 = cpu_ns(peer.pid);
		sent1 = __atomic_load_n(atk_sent, __ATOMIC_RELAXED);
		if (!attacks[a].loop)
			under = pairs_us(conn, id, 2000);
		else if (interleaved(conn, id, pids, attacks[a].procs, &base,
				     &under))
			base = under = -1;
		rss_kib(peer.pid, &rss1, &hwm);
		for (i = 0; i < attacks[a].procs; i++) {
			int st;

			/* an attacker that gave up measured nothing */
			killpg(pids[i], SIGCONT);
			if (waitpid(pids[i], &st, WNOHANG) == pids[i]) {
				printf("attack %s: an attacker exited (status 0x%x)\n",
				       attacks[a].name, st);
				bad = 1;
				killpg(pids[i], SIGKILL);
				continue;
			}
			killpg(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
		usleep(200000);
		printf("pair under %-30s %6.1f us, alone %6.1f us: %.2fx (target <= 2x: %s)\n",
		       attacks[a].name, under, base, under / base,
		       under <= 2 * base ? "PASS" : "MISSED");
		printf("  the daemon's RSS %.1f -> %.1f MiB (peak so far %.1f MiB); its CPU %.0f%% over %ld ms, %.1f us per attacker request (%lu)\n",
		       rss0 / 1024.0, rss1 / 1024.0, hwm / 1024.0,
		       (cpu1 - cpu0) / 1e4 / hold_ms, hold_ms,
		       sent1 > sent0 ? (cpu1 - cpu0) / 1e3 / (sent1 - sent0) : 0.0,
		       sent1 - sent0);
		if (attacks[a].fn != atk_spin)	/* the control: told, not judged */
			bad |= under > 2 * base || under < 0 || base < 0;
	}
	return bad;
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[2]) : 20000, i, err, conn, echo;
	bool do_attacks = argc > 1 && !strcmp(argv[argc - 1], "--attacks");
	double *e, *nul, *chg, t0, t1, t2, t3, me, mn, mp;
	char echo_path[128];
	pid_t echo_pid;
	__u64 id;

	if (do_attacks)
		argc--;
	if (argc < 2 || rounds < 100) {
		fprintf(stderr,
			"usage: client-bench SOCKET [ROUNDS>=100] [DEVICE] [--attacks]\n");
		return 2;
	}
	sock_path = argv[1];
	if (argc > 3)
		device = argv[3];
	e = calloc(rounds, sizeof(*e));
	nul = calloc(rounds, sizeof(*nul));
	chg = calloc(rounds, sizeof(*chg));
	snprintf(echo_path, sizeof(echo_path), "/tmp/nxqd-echo.%d",
		 (int)getpid());
	echo_pid = echo_start(echo_path);
	echo = echo_pid > 0 ? dial(echo_path) : -1;
	err = holder(&conn, &id);
	if (!e || !nul || !chg || echo < 0 || err) {
		fprintf(stderr, "client-bench: setup: %s\n",
			strerror(err ? -err : errno));
		return 1;
	}
	/* interleaved, so that the machine's state weighs on all three */
	for (i = 0; i < rounds; i++) {
		struct nxq_version v = { .size = sizeof(v) };
		unsigned char m[sizeof(struct nxqd_req) + sizeof(v)] = { 0 };

		t0 = now_ns();
		if (send(echo, m, sizeof(m), 0) < 0 ||
		    recv(echo, m, sizeof(m), 0) < 0)
			err = -errno;
		t1 = now_ns();
		if (!err)
			err = call(conn, NXQ_IOC_VERSION, &v, sizeof(v), -1);
		t2 = now_ns();
		if (!err)
			err = pair(conn, id);
		t3 = now_ns();
		if (err) {
			fprintf(stderr, "client-bench: round %d: %s\n", i,
				strerror(-err));
			return 1;
		}
		e[i] = t1 - t0;
		nul[i] = t2 - t1;
		chg[i] = t3 - t2;
	}
	me = pct(e, rounds, 50);
	mn = pct(nul, rounds, 50);
	mp = pct(chg, rounds, 50);
	printf("echo (bare SOCK_SEQPACKET): median %.1f us, p99 %.1f us (%d rounds)\n",
	       me / 1e3, pct(e, rounds, 99) / 1e3, rounds);
	printf("null request:               median %.1f us, p99 %.1f us: %.2fx the echo (target <= 1.5x: %s)\n",
	       mn / 1e3, pct(nul, rounds, 99) / 1e3, mn / me,
	       mn <= 1.5 * me ? "PASS" : "MISSED");
	printf("charge+uncharge:            median %.1f us, p99 %.1f us: %.2fx the echo (target <= 2x: %s)\n",
	       mp / 1e3, pct(chg, rounds, 99) / 1e3, mp / me,
	       mp <= 2 * me ? "PASS" : "MISSED");
	err = mn > 1.5 * me || mp > 2 * me;
	close(echo);
	kill(echo_pid, SIGKILL);
	waitpid(echo_pid, NULL, 0);
	unlink(echo_path);
	if (do_attacks)
		err |= run_attacks(conn, id);
	close(conn);
	free(e);
	free(nul);
	free(chg);
	return err;
}
