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
 * issue's attacks runs from another cgroup as uid 65534 -- four
 * register/unregister loops, 4200 connections, a tenant whose eventfd
 * writes would wait, 60 waiting charges, four loops of null requests --
 * each against the pair without it (target <= 2x).
 *
 * make -C daemon bench-client runs it against the static daemon.
 */
#include <linux/nxquota.h>
#include <linux/nxquotad.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
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

/* The median of @n charge+uncharge pairs (us). */
static double pairs_us(int conn, __u64 id, int n)
{
	double *v = calloc(n, sizeof(*v)), t0, m;
	int i;

	for (i = 0; i < n; i++) {
		t0 = now_ns();
		if (pair(conn, id))
			return -1;
		v[i] = now_ns() - t0;
	}
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
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
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

static const struct {
	const char *name;
	void (*fn)(void);
	int procs;
} attacks[] = {
	{ "4 register/unregister loops", atk_register, 4 },
	{ "4200 connections", atk_conns, 1 },
	{ "an eventfd that would block", atk_eventfd, 1 },
	{ "60 waiting charges", atk_waiters, 1 },
	{ "4 loops of null requests", atk_nulls, 4 },
};

static int run_attacks(int conn, __u64 id)
{
	int a, i, bad = 0;
	pid_t pids[8];
	double base, under;

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
	for (a = 0; a < (int)(sizeof(attacks) / sizeof(attacks[0])); a++) {
		base = pairs_us(conn, id, 2000);
		for (i = 0; i < attacks[a].procs; i++) {
			pids[i] = fork();
			if (!pids[i]) {
				attacker_become();
				attacks[a].fn();
				_exit(0);
			}
		}
		usleep(300000);
		under = pairs_us(conn, id, 2000);
		for (i = 0; i < attacks[a].procs; i++) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
		usleep(200000);
		printf("pair under %-30s %6.1f us, alone %6.1f us: %.2fx (target <= 2x: %s)\n",
		       attacks[a].name, under, base, under / base,
		       under <= 2 * base ? "PASS" : "MISSED");
		bad |= under > 2 * base || under < 0;
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
