// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * cmocka tests of the library's socket client (lib/sock*.c) against the
 * real nxquotad (daemon/build/nxquotad), a fresh one per case: its own
 * directory (client socket, control socket, state, record, log), a state
 * file naming device host0 (no node, default max "max") of the case's
 * capacity, read back through tools/nxquotactl on the control socket.
 * The daemon dying is SIGKILL; a reply lost in flight is the daemon
 * stopped (SIGSTOP) with the request in its socket, then killed; started
 * again on the same directory, it finds this process in its record and
 * opens its grace window for the restore.
 *
 * The cases: the framing (a charge, a refusal, unregister), the pool
 * under a waiting charge, a ticket notice met by a waiting request and
 * one on an idle pooled connection (the watcher's), a connection the
 * daemon refuses, eight waiting
 * charges, STATUS, reconnect and restore (at a call, with a charge
 * waiting, with none at all), an uncharge and a ticket answer lost in
 * flight, a restore refused, a holder re-adopted, the choice of
 * authority, and fork.  What needs a daemon that misbehaves on purpose
 * (no tickets, version 0's STATUS, a holder forgotten alone, -EAGAIN in
 * grace, hostile replies) stays in test_sock.c against fake_srv.h.
 *
 * Needs root (the daemon's sockets, its view of our cgroup) and the two
 * binaries (make -C lib check builds them): otherwise it says "skipped"
 * and why.  NXQ_TEST_FILTER=test_x runs one case (sock-mutants.sh).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "internal.h"
#include "arena.h"
#include "sock.h"
#include "sock_util.h"

#ifndef NXQ_TOP
#define NXQ_TOP ".."
#endif

/* ---- the daemon ---- */

static struct {
	char dir[64], sock[100], ctl[100], log[100];
	const char *extra[4];		/* more arguments (NULL-terminated) */
	pid_t pid;
} d;
static char dbin[256], cbin[256];

/*
 * The cgroup this process runs in for the cases: the daemon keys holders
 * by the connecting process's cgroup, and the root's node is no borrower
 * (its effective min is the device), so nobody there is ever asked.
 */
static char cgdir[600], cgorig[1100];

static int write_pid(const char *procs)
{
	FILE *f = fopen(procs, "we");
	int r;

	if (!f)
		return -1;
	r = fprintf(f, "%d\n", (int)getpid()) < 0;
	return fclose(f) || r ? -1 : 0;
}

/* 0 in a cgroup of our own, or why not. */
static const char *cg_enter(void)
{
	char line[1024], root[512] = "", mnt[512];
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return "no /proc/self/mountinfo";
	while (!*root && fgets(line, sizeof(line), f))
		if (strstr(line, " - cgroup2 ") &&
		    sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1)
			snprintf(root, sizeof(root), "%s", mnt);
	fclose(f);
	if (!*root)
		return "no cgroup2 mount";
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return "no /proc/self/cgroup";
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(cgorig, sizeof(cgorig), "%s%s/cgroup.procs", root,
				 strcmp(line + 3, "/") ? line + 3 : "");
		}
	fclose(f);
	snprintf(cgdir, sizeof(cgdir), "%s/nxq-sockr-%d", root, (int)getpid());
	snprintf(line, sizeof(line), "%s/cgroup.procs", cgdir);
	if (mkdir(cgdir, 0755))
		return "cannot make a cgroup";
	if (write_pid(line)) {
		rmdir(cgdir);
		return "cannot enter a cgroup of our own";
	}
	return NULL;
}

static void cg_leave(void)
{
	write_pid(cgorig);
	rmdir(cgdir);
}

static int dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * The state file: host0 of cap bytes (0: no device at all).  Tickets
 * are due 4 s after they open: longer than a case takes to answer one
 * under load, and no longer than the growths' waits (5 s, 8 s), since a
 * waiter that will not wait that long asks again only once per period
 * (kmod/pressure.c, nxq_ask_for()).
 */
static void write_state(uint64_t cap)
{
	char p[160];
	FILE *f;

	snprintf(p, sizeof(p), "%s/state", d.dir);
	f = fopen(p, "we");
	assert_non_null(f);
	fprintf(f, "nxquotad-state 1\n");
	if (cap)
		fprintf(f, "device host0 capacity=%llu devt=- default_max=max "
			"ticket_timeout_ms=4000\n", (unsigned long long)cap);
	assert_int_equal(fclose(f), 0);
}

/*
 * Start the daemon on d.dir and wait until its control socket answers:
 * it binds the client socket first (a killed daemon's socket files stay,
 * refusing, until the new one binds them).  Nothing of ours connects to
 * the client socket here: a case may bound our connections (-P).
 * pdeath: the daemon dies with the calling thread (not from a thread
 * that ends before the case does).  0, or -1 (callable from a thread: no
 * assertion here).
 */
static int dmn_start_pd(int pdeath)
{
	const char *argv[24] = { dbin, "-v", "-s", d.sock, "-c", d.ctl, "-S", d.dir,
				 "-G", "3000", "-b", "0" };
	int n = 12, fd = -1;

	for (int i = 0; d.extra[i]; i++)
		argv[n++] = d.extra[i];
	d.pid = fork();
	if (d.pid < 0)
		return -1;
	if (!d.pid) {
		int log = open(d.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

		if (pdeath)
			prctl(PR_SET_PDEATHSIG, SIGKILL);	/* a failed case leaves none */
		if (log >= 0)
			dup2(log, 2);
		execv(dbin, (char *const *)argv);
		_exit(127);
	}
	for (int i = 0; i < 2000 && fd < 0; i++) {
		fd = dial(d.ctl);
		if (fd < 0)
			usleep(10000);
	}
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int dmn_start(void)
{
	return dmn_start_pd(1);
}

static void dmn_kill(void)
{
	if (d.pid <= 0)
		return;
	kill(d.pid, SIGKILL);
	waitpid(d.pid, NULL, 0);
	d.pid = -1;
}

/*
 * SIGSTOP, and wait until the daemon is stopped: what is sent from now on
 * stays in its sockets, unread.  0 or -1 (no assertion: a callback's).
 */
static int dmn_stop(void)
{
	char p[64], buf[512], *c;
	int fd, i;
	ssize_t n;

	if (kill(d.pid, SIGSTOP))
		return -1;
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)d.pid);
	for (i = 0; i < 10000; i++) {
		fd = open(p, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = 0;
		c = strrchr(buf, ')');
		if (c && c[1] == ' ' && c[2] == 'T')
			return 0;
		usleep(1000);
	}
	return -1;
}

/* Killed, and started again on the same directory with host0 of cap bytes. */
static void dmn_restart(uint64_t cap)
{
	dmn_kill();
	write_state(cap);
	assert_int_equal(dmn_start(), 0);
}

/* Started again after ms from another thread (the library retries meanwhile). */
static struct {
	unsigned int ms;
	int kill;		/* kill first (the daemon was stopped) */
	int r;
	pthread_t th;
} later;

static void *later_fn(void *arg)
{
	(void)arg;
	usleep(later.ms * 1000);
	if (later.kill) {
		kill(d.pid, SIGKILL);
		waitpid(d.pid, NULL, 0);
	}
	later.r = dmn_start_pd(0);
	return NULL;
}

static void dmn_start_later(unsigned int ms, int kill_first)
{
	later.ms = ms;
	later.kill = kill_first;
	later.r = -1;
	assert_int_equal(pthread_create(&later.th, NULL, later_fn, NULL), 0);
}

static void dmn_join_later(void)
{
	pthread_join(later.th, NULL);
	assert_int_equal(later.r, 0);
}

static int log_count(const char *what)
{
	char c[512];
	FILE *f;
	int n = -1;

	snprintf(c, sizeof(c), "grep -c '%s' %s", what, d.log);
	f = popen(c, "r");
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		pclose(f);
	}
	return n;
}

/* host0 as `nxquotactl --json status` has it. */
struct dev {
	unsigned long long used, holders, waits, tickets;
};

static unsigned long long json_u(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);

	assert_non_null(p);
	return strtoull(p + strlen(key), NULL, 10);
}

static struct dev dev(void)
{
	static char buf[16384];
	struct dev v;
	char c[512];
	FILE *f;
	size_t n;

	snprintf(c, sizeof(c), "%s --control %s --json status host0", cbin, d.ctl);
	f = popen(c, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	assert_int_equal(pclose(f), 0);
	v.used = json_u(buf, "\"used\":");
	v.holders = json_u(buf, "\"holders\":");
	v.waits = json_u(buf, "\"waits\":");
	v.tickets = json_u(buf, "\"tickets\":");
	return v;
}

static unsigned long long used(void)
{
	return dev().used;
}

/* Wait up to 10 s for host0's used to be v (the daemon settles after the reply). */
static void wait_used(unsigned long long v)
{
	unsigned long long u = 0;

	for (int i = 0; i < 1000; i++) {
		u = used();
		if (u == v)
			return;
		usleep(10000);
	}
	print_message("host0 used %llu, expected %llu\n", u, v);
	fail();
}

/* ---- the library ---- */

/* What the daemon has charged to the arena's holder (STATUS, through the library). */
static uint64_t dmn_charged(struct nxq_ctx *c, struct nxq_arena *a)
{
	struct nxq_status s;

	assert_int_equal(nxq__status(c, a->holder, &s), 0);
	return s.holder_charge;
}

/* Wait up to 10 s for the arena's answers to reach n. */
static void wait_answers(struct nxq_arena *a, uint64_t n)
{
	struct nxq_stats s;

	for (int i = 0; i < 10000; i++) {
		st(a, &s);
		if (s.answers >= n)
			return;
		usleep(1000);
	}
	print_message("no answer after 10 s (%llu of %llu)\n", (unsigned long long)s.answers,
		      (unsigned long long)n);
	fail();
}

static void idle_granules(struct nxq_arena *a, int n)
{
	void *p[64];

	for (int i = 0; i < n; i++)
		assert_int_equal(nxq_alloc(a, G, 0, &p[i]), 0);
	while (n)
		assert_int_equal(nxq_free(a, p[--n]), 0);
}

/* A field of the context's struct sk, read under its lock. */
static int sk_get(struct nxq_ctx *c, const int *field)
{
	struct sk *s = c->kpriv;
	int v;

	pthread_mutex_lock(&s->mu);
	v = *field;
	pthread_mutex_unlock(&s->mu);
	return v;
}

/* An allocation in a thread of its own (it waits in the daemon). */
struct bg {
	struct nxq_arena *a;
	size_t bytes;
	void *p;
	int r;
	pthread_t th;
};

static void *bg_fn(void *arg)
{
	struct bg *b = arg;

	b->r = nxq_alloc(b->a, b->bytes, 0, &b->p);
	return NULL;
}

static void bg_start(struct bg *b, struct nxq_arena *a, size_t bytes)
{
	b->a = a;
	b->bytes = bytes;
	b->r = 1;
	assert_int_equal(pthread_create(&b->th, NULL, bg_fn, b), 0);
}

/* Wait up to 10 s until host0 has counted n waits in all. */
static void wait_waits(unsigned long long n)
{
	int i;

	for (i = 0; i < 1000 && dev().waits < n; i++)
		usleep(10000);
	assert_true(i < 1000);
}

static int setup(void **state)
{
	(void)state;
	memset(d.extra, 0, sizeof(d.extra));
	snprintf(d.dir, sizeof(d.dir), "/tmp/nxq-sockr-XXXXXX");
	assert_non_null(mkdtemp(d.dir));
	snprintf(d.sock, sizeof(d.sock), "%s/nxquota.sock", d.dir);
	snprintf(d.ctl, sizeof(d.ctl), "%s/control.sock", d.dir);
	snprintf(d.log, sizeof(d.log), "%s/log", d.dir);
	write_state(64 * MiB);
	assert_int_equal(dmn_start(), 0);
	setenv("NXQ_DEV", "/nonexistent/nxquota", 1);
	setenv("NXQUOTA_SOCKET", d.sock, 1);
	setenv("NXQUOTA_RECONNECT_MS", "10000", 1);
	return 0;
}

/* The daemon (an ASan build) saw nothing wrong; its directory goes. */
static int teardown(void **state)
{
	char c[256];
	int bad;

	(void)state;
	dmn_kill();
	bad = log_count("AddressSanitizer\\|runtime error\\|WARNING\\|BUG");
	if (bad)
		print_message("the daemon's log (%s) has %d report(s)\n", d.log, bad);
	if (getenv("NXQ_KEEP_TMP") || bad)
		print_message("kept %s\n", d.dir);
	else {
		snprintf(c, sizeof(c), "rm -rf %s", d.dir);
		if (system(c))
			return -1;
	}
	return bad ? -1 : 0;
}

/* ---- framing ---- */

/*
 * A charge (rounded to granules), a refusal (nothing charged anywhere),
 * a trim, unregister: the daemon's count is the library's throughout.
 */
static void test_framing(void **state)
{
	struct nxq_ctx *c = open_ctx(0, NULL);
	struct nxq_arena *a = mk(c, 0, 0);
	struct nxq_stats s;
	struct dev v;
	void *p, *q;

	assert_int_equal(dev().holders, 1);
	assert_int_equal(nxq_alloc(a, 3 * MiB, 0, &p), 0);
	assert_int_equal(charged(a), 4 * MiB);
	assert_int_equal(used(), 4 * MiB);
	assert_int_equal(dmn_charged(c, a), 4 * MiB);
	/* refused by the daemon: nothing charged anywhere */
	assert_int_equal(nxq_alloc(a, 62 * MiB, 0, &q), -ENOSPC);
	st(a, &s);
	assert_int_equal(s.charged, 4 * MiB);
	assert_true(s.charge_denied >= 1);
	v = dev();
	assert_int_equal(v.used, 4 * MiB);
	assert_int_equal(nxq_free(a, p), 0);
	assert_true(nxq_arena_trim(a, 0, 0) >= 0);
	assert_int_equal(used(), charged(a));
	assert_int_equal(nxq_arena_destroy(a), 0);
	v = dev();
	assert_int_equal(v.holders, 0);
	assert_int_equal(v.used, 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

/* ---- the pool ---- */

/*
 * A waiting charge does not hold up the ticket's answer: A's growth
 * waits in the daemon on one connection; the library's thread reads and
 * answers B's ticket (told by a notice on the connection B was
 * registered on) on another.
 */
static void test_pool_under_waiting_charge(void **state)
{
	struct nxq_ctx *c;
	struct nxq_arena *a, *b;
	struct nxq_stats sa, sb;
	unsigned long k[6];
	void *q;

	dmn_restart(16 * MiB);
	c = open_ctx(0, NULL);
	a = mk(c, 0, 5000);
	b = mk(c, 64 * MiB, 0);
	idle_granules(b, 8);			/* the device is full of B's idle memory */
	assert_int_equal(used(), 16 * MiB);
	assert_int_equal(nxq_alloc(a, 6 * MiB, 0, &q), 0);
	wait_answers(b, 1);
	st(a, &sa);
	st(b, &sb);
	assert_int_equal(sa.grow_waits, 1);
	assert_int_equal(sa.charged, 6 * MiB);
	assert_true(sb.tickets >= 1);
	assert_int_equal(sb.answered_bytes, 6 * MiB);
	assert_true(sk_get(c, &((struct sk *)c->kpriv)->nconns) >= 2);
	assert_int_equal(used(), sa.charged + sb.charged);
	nxq__sock_counters(c, k);
	assert_true(k[4] + k[5] >= 1);		/* told on a connection */
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(used(), 0);
}

/*
 * A ticket notice comes on the connection where a charge waits for its
 * reply: the waiting request tells it (B's eventfd) and goes on waiting.
 * A's charge is made below the arena (the kernel ops), so that the only
 * ask is the waiting charge's own: B is asked while A's request holds the
 * only connection, the one B was registered on.  Were the notice taken
 * for the reply, the charge would return before B gave anything back.
 */
static void test_notice_in_request(void **state)
{
	struct nxq_ctx *c;
	struct nxq_arena *a, *b;
	struct nxq_stats sb;
	unsigned long k[6];

	dmn_restart(16 * MiB);
	c = open_ctx(0, NULL);
	a = mk(c, 0, 0);
	b = mk(c, 64 * MiB, 0);
	idle_granules(b, 8);			/* the device is full of B's idle memory */
	assert_int_equal(sk_get(c, &((struct sk *)c->kpriv)->nconns), 1);
	assert_int_equal(c->kops->charge(c, a->holder, 6 * MiB, 5000000000ULL, NULL), 0);
	nxq__sock_counters(c, k);
	assert_true(k[4] >= 1);			/* told in A's request */
	wait_answers(b, 1);			/* (counted once the answer returns) */
	st(b, &sb);
	assert_true(sb.tickets >= 1);
	assert_int_equal(sb.answered_bytes, 6 * MiB);
	assert_int_equal(dmn_charged(c, a), 6 * MiB);
	assert_int_equal(used(), 6 * MiB + charged(b));
	assert_int_equal(c->kops->uncharge(c, a->holder, 6 * MiB), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(used(), 0);
}

/* Threads of the daemon now. */
static int dmn_threads(void)
{
	char p[64];
	struct dirent *e;
	int n = 0;
	DIR *dir;

	snprintf(p, sizeof(p), "/proc/%d/task", (int)d.pid);
	dir = opendir(p);
	assert_non_null(dir);
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

/*
 * A holder idle in the pool is told all the same: context C1's arena B
 * holds idle memory and makes no call; context C2's growth needs it.  The
 * daemon tells B on C1's pooled connection, which no request reads: C1's
 * watcher reads it and writes B's eventfd, and C1's thread answers.  The
 * daemon was given no eventfd, and runs no thread for the tickets.
 */
static void test_notice_idle_pool(void **state)
{
	struct nxq_ctx *c1, *c2;
	struct nxq_arena *a, *b;
	unsigned long k[6];
	int threads;
	void *q;

	dmn_restart(16 * MiB);
	usleep(100000);
	threads = dmn_threads();
	c1 = open_ctx(0, NULL);
	c2 = open_ctx(0, NULL);
	assert_int_equal(((struct sk *)c1->kpriv)->proto, NXQD_PROTO_VERSION);
	b = mk(c1, 64 * MiB, 0);
	a = mk(c2, 0, 5000);
	idle_granules(b, 8);			/* the device is full of B's idle memory */
	assert_int_equal(nxq_alloc(a, 6 * MiB, 0, &q), 0);
	wait_answers(b, 1);
	nxq__sock_counters(c1, k);
	assert_true(k[5] >= 1);			/* told by C1's watcher */
	assert_int_equal(charged(b), 10 * MiB);
	assert_int_equal(used(), 16 * MiB);
	assert_int_equal(dmn_threads(), threads);
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c2), 0);
	assert_int_equal(nxq_ctx_close(c1), 0);
	assert_int_equal(used(), 0);
}

/*
 * The daemon refuses a new connection (its bound per process, -P 1):
 * that is not the daemon going away -- no reconnect, no registration
 * again; the request waits for the connection the process has.  (A
 * growth waits in the daemon only while someone can be asked: B holds
 * half the device, in use.)
 */
static void test_conn_refused_is_not_gone(void **state)
{
	struct nxq_ctx *c;
	struct nxq_arena *a, *b;
	unsigned long k[6];
	struct bg slow;
	struct dev v;
	void *p, *q, *x;

	d.extra[0] = "-P";
	d.extra[1] = "1";
	dmn_restart(4 * MiB);
	c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	a = mk(c, 0, 3000);
	b = mk(c, 0, 0);
	assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &p), 0);
	assert_int_equal(nxq_alloc(b, 2 * MiB, 0, &x), 0);
	/* A's growth waits on the only connection ... */
	bg_start(&slow, a, 2 * MiB);
	wait_waits(1);
	/* ... B's request needs another, which the daemon refuses */
	assert_int_equal(nxq_alloc(b, G, 0, &q), -ENOSPC);
	pthread_join(slow.th, NULL);
	assert_int_equal(slow.r, -ETIMEDOUT);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 0);		/* no reconnect */
	assert_true(k[3] >= 1);			/* it met the refusal */
	v = dev();
	assert_int_equal(v.holders, 2);		/* nothing registered again */
	assert_int_equal(v.used, 4 * MiB);
	assert_int_equal(dmn_charged(c, a), 2 * MiB);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_free(b, x), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

/*
 * Eight growths wait at once (as many as the pool's connections): at
 * most seven wait in the daemon, so the pressure handler still has a
 * connection for the ticket whose answer grants them.  The context has
 * no thread: the handler runs here once seven wait and the eighth has
 * got as far as it can.
 */
#define NW 8

static struct {
	pthread_mutex_t mu;
	int done;
} many = { PTHREAD_MUTEX_INITIALIZER, 0 };

static void *many_fn(void *arg)
{
	struct bg *b = arg;

	b->r = nxq_alloc(b->a, b->bytes, 0, &b->p);
	pthread_mutex_lock(&many.mu);
	many.done++;
	pthread_mutex_unlock(&many.mu);
	return NULL;
}

static void test_waiting_charges_leave_a_connection(void **state)
{
	struct nxq_ctx *c;
	struct nxq_arena *a[NW], *b;
	struct sk *s;
	struct bg w[NW];
	int i, done;

	dmn_restart(16 * MiB);
	c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	s = c->kpriv;
	for (i = 0; i < NW; i++)
		a[i] = mk(c, 0, 8000);
	b = mk(c, 64 * MiB, 0);
	idle_granules(b, 8);			/* full of B's idle memory */
	many.done = 0;
	for (i = 0; i < NW; i++) {
		w[i].a = a[i];
		w[i].bytes = 2 * MiB;
		w[i].r = 1;
		assert_int_equal(pthread_create(&w[i].th, NULL, many_fn, &w[i]), 0);
	}
	for (i = 0; i < 5000 && sk_get(c, &s->nwait) < NW - 1; i++)
		usleep(1000);
	assert_true(i < 5000);
	usleep(300000);				/* the eighth gets as far as it can */
	assert_int_equal(sk_get(c, &s->nwait), NW - 1);
	do {
		assert_true(nxq_ctx_handle_pressure(c) >= 0);
		usleep(1000);
		pthread_mutex_lock(&many.mu);
		done = many.done;
		pthread_mutex_unlock(&many.mu);
	} while (done < NW);
	for (i = 0; i < NW; i++) {
		pthread_join(w[i].th, NULL);
		assert_int_equal(w[i].r, 0);
	}
	assert_true(sk_get(c, &s->nconns) <= SK_CONNS_MAX);
	assert_int_equal(charged(b), 0);
	assert_int_equal(used(), 16 * MiB);
	for (i = 0; i < NW; i++) {
		assert_int_equal(nxq_free(a[i], w[i].p), 0);
		assert_int_equal(nxq_arena_destroy(a[i]), 0);
	}
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

/* ---- a refusal names its node ---- */

/*
 * A refused charge says what refused it in the same reply (struct
 * nxq_charge version 1, the path after the struct): the device, with no
 * path; our cgroup's max, with its path as our cgroup namespace shows it
 * (this test's cgroup, relative to the mount: we share the daemon's
 * namespace).  No STATUS is asked for it.
 */
static void test_refusal_named(void **state)
{
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct nxq_holder_reg reg = { .size = sizeof(reg), .device = "host0", .eventfd = efd };
	const char *rel = strstr(cgdir, "/nxq-sockr-");
	struct nxq_refusal why;
	struct nxq_ctx *c;
	char cmd[1400];

	assert_true(efd >= 0 && rel);
	c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	assert_true(c->features & NXQ_FEAT_CHARGE_V1);
	assert_int_equal(c->kops->holder_register(c, &reg), 0);
	assert_int_equal(c->kops->charge(c, reg.holder_id, 8 * MiB, 0, &why), 0);
	assert_int_equal(why.reason, 0);
	assert_int_equal(c->kops->charge(c, reg.holder_id, 60 * MiB, 0, &why), -ENOSPC);
	assert_int_equal(why.reason, NXQ_REFUSED_CAPACITY);
	assert_int_equal(why.level, NXQ_LEVEL_DEVICE);
	assert_int_equal(why.limit, 64 * MiB);
	assert_int_equal(why.usage, 8 * MiB);
	assert_string_equal(why.path, "");

	snprintf(cmd, sizeof(cmd), "%s --control %s set %s host0 max=16M", cbin, d.ctl, rel);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(c->kops->charge(c, reg.holder_id, 9 * MiB, 0, &why), -EDQUOT);
	assert_int_equal(why.reason, NXQ_REFUSED_MAX);
	assert_int_equal(why.level, 0);
	assert_int_equal(why.limit, 16 * MiB);
	assert_int_equal(why.usage, 8 * MiB);
	assert_true(why.id != 0);
	assert_string_equal(why.path, rel);
	/* without room asked for, nothing named (the caller passed none) */
	assert_int_equal(c->kops->charge(c, reg.holder_id, 9 * MiB, 0, NULL), -EDQUOT);
	assert_int_equal(nxq_ctx_close(c), 0);
	close(efd);
	(void)state;
}

/* ---- STATUS ---- */

/*
 * nxq__status() over the socket: the holder's id translated both ways
 * (the daemon's ids are not the library's), version 1's fields as the
 * daemon sent them, the last refused charge, and sent again after the
 * daemon came back (the holder restored, its charge with it).
 */
static void test_status(void **state)
{
	/* with an eventfd: a holder without one may not pass its min (0) */
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct nxq_holder_reg reg = { .size = sizeof(reg), .device = "host0", .eventfd = efd };
	struct nxq_holder_reg r2 = reg;
	struct nxq_status s;
	struct nxq_ctx *c, *c2;
	unsigned long k[6];

	assert_true(efd >= 0);
	/* another context's holder first: the daemon's ids and ours part */
	c2 = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	assert_int_equal(c2->kops->holder_register(c2, &r2), 0);
	assert_int_equal(r2.holder_id, 1);
	c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	assert_true(c->features & NXQ_FEAT_STATUS_V1);
	assert_int_equal(c->kops->holder_register(c, &reg), 0);
	assert_int_equal(reg.holder_id, 1);
	assert_int_equal(dev().holders, 2);
	assert_int_equal(c->kops->charge(c, reg.holder_id, 8 * MiB, 0, NULL), 0);
	memset(&s, 0xff, sizeof(s));
	assert_int_equal(nxq__status(c, reg.holder_id, &s), 0);
	assert_int_equal(s.size, sizeof(s));
	assert_int_equal(s.holder_id, 1);
	assert_int_equal(s.holder_charge, 8 * MiB);
	assert_int_equal(s.device_capacity, 64 * MiB);
	assert_int_equal(s.device_used, 8 * MiB);
	assert_int_equal(s.room, 56 * MiB);
	assert_int_equal(s.last_error, 0);
	assert_int_equal(c->kops->charge(c, reg.holder_id, 60 * MiB, 0, NULL), -ENOSPC);
	assert_int_equal(nxq__status(c, reg.holder_id, &s), 0);
	assert_int_equal(s.last_error, ENOSPC);
	assert_int_equal(s.last_bytes, 60 * MiB);
	assert_int_equal(s.holder_charge, 8 * MiB);
	assert_int_equal(nxq__status(c, 2, &s), -ENOENT);	/* no such holder here */
	assert_int_equal(nxq_ctx_close(c2), 0);			/* its holder ends */

	/* the daemon restarts: restored, then asked again */
	dmn_restart(64 * MiB);
	memset(&s, 0xff, sizeof(s));
	assert_int_equal(nxq__status(c, reg.holder_id, &s), 0);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);
	assert_int_equal(k[1], 0);
	assert_int_equal(s.holder_id, 1);
	assert_int_equal(s.holder_charge, 8 * MiB);
	assert_int_equal(s.room, 56 * MiB);
	assert_int_equal(s.last_error, 0);	/* a new daemon */
	assert_int_equal(log_count("restored (version 1)"), 1);
	assert_int_equal(c->kops->uncharge(c, reg.holder_id, 8 * MiB), 0);
	assert_int_equal(used(), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	close(efd);
}

/* ---- reconnect ---- */

/*
 * The daemon dies; A grows: its charge meets the dead socket, the
 * library waits for the daemon, registers both holders again (version
 * 1's restore, with version 2's NXQD_REQ_NOTIFY), restores their charges,
 * then charges A's growth as new.  The new daemon's tickets reach B as
 * notices on the new connection.
 */
static void test_reconnect_restores(void **state)
{
	struct nxq_ctx *c = open_ctx(0, NULL);
	struct nxq_arena *a = mk(c, 0, 0), *b = mk(c, 64 * MiB, 0), *w = mk(c, 0, 5000);
	unsigned long k[6], told;
	uint64_t ca, cb;
	struct dev v;
	void *p, *q, *x;

	assert_int_equal(nxq_alloc(a, 6 * MiB, 0, &p), 0);
	idle_granules(b, 2);			/* 4 MiB idle in B, kept */
	assert_int_equal(used(), 10 * MiB);

	dmn_kill();				/* the daemon dies: state gone */
	dmn_start_later(300, 0);
	assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &q), 0);
	dmn_join_later();
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);		/* one reconnect */
	assert_int_equal(k[1], 0);		/* nothing refused */
	ca = charged(a);
	cb = charged(b);
	assert_int_equal(ca, 8 * MiB);
	assert_int_equal(cb, 4 * MiB);
	assert_int_equal(dmn_charged(c, a), ca);
	assert_int_equal(dmn_charged(c, b), cb);
	v = dev();
	assert_int_equal(v.holders, 3);		/* each registered again, once */
	assert_int_equal(v.used, ca + cb);	/* nothing granted twice */
	assert_int_equal(log_count("restored (version 1)"), 1);

	/* W's growth needs 2 MiB of B's: the ticket reaches B */
	nxq__sock_counters(c, k);
	told = k[4] + k[5];
	assert_int_equal(nxq_alloc(w, 54 * MiB, 0, &x), 0);
	wait_answers(b, 1);
	nxq__sock_counters(c, k);
	assert_true(k[4] + k[5] > told);
	assert_int_equal(charged(b), 2 * MiB);
	assert_int_equal(dmn_charged(c, b), 2 * MiB);
	wait_used(charged(a) + charged(b) + charged(w));

	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_free(w, x), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_arena_destroy(w), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(used(), 0);
}

/*
 * A charge waiting in the daemon when it dies was never granted: asked
 * again, once, of the new daemon (which has room for it).  B holds a
 * quarter of the device in use: someone to ask, who gives nothing.
 */
static void test_reconnect_waiting_charge(void **state)
{
	struct nxq_ctx *c;
	struct nxq_arena *a, *b;
	struct bg w;
	void *p, *x;

	dmn_restart(8 * MiB);
	c = open_ctx(0, NULL);
	a = mk(c, 0, 5000);
	b = mk(c, 0, 0);
	assert_int_equal(nxq_alloc(a, 6 * MiB, 0, &p), 0);
	assert_int_equal(nxq_alloc(b, 2 * MiB, 0, &x), 0);
	bg_start(&w, a, 2 * MiB);
	wait_waits(1);
	dmn_kill();
	write_state(16 * MiB);
	dmn_start_later(200, 0);
	pthread_join(w.th, NULL);
	dmn_join_later();
	assert_int_equal(w.r, 0);
	assert_int_equal(charged(a), 8 * MiB);
	assert_int_equal(dmn_charged(c, a), 8 * MiB);
	assert_int_equal(dmn_charged(c, b), 2 * MiB);
	assert_int_equal(used(), 10 * MiB);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_free(a, w.p), 0);
	assert_int_equal(nxq_free(b, x), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

/*
 * An idle process: the daemon restarts while it makes no call at all.
 * The library's watcher sees the connection end and restores at once --
 * its holders and their charges are back in the new daemon before the
 * process calls again.  Without the watcher nothing reaches the new
 * daemon here.
 */
static void test_idle_restores(void **state)
{
	struct nxq_ctx *c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	struct nxq_arena *a = mk(c, 0, 0);
	unsigned long k[6];
	void *p;

	assert_int_equal(nxq_alloc(a, 6 * MiB, 0, &p), 0);
	assert_int_equal(used(), 6 * MiB);
	dmn_restart(64 * MiB);
	/* no call from here on: only the watcher can restore */
	wait_used(6 * MiB);
	assert_int_equal(dev().holders, 1);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);		/* one reconnect, by the watcher */
	assert_int_equal(k[1], 0);		/* nothing refused */

	/* the next call finds it done: nothing registered or charged again */
	assert_int_equal(dmn_charged(c, a), 6 * MiB);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(used(), 0);
}

/*
 * The daemon stops with an uncharge in its socket and dies without
 * reading it: it is not sent again (the restore already charged without
 * it), nor is a ticket answer lost the same way (the daemon stopped from
 * the ticket's event, between the library's read and its answer).
 */
static struct nxq_arena *stop_arena;

static void stop_on_ticket(const struct nxq_event *ev, void *user)
{
	(void)user;
	if (ev->type == NXQ_EVENT_TICKET && ev->arena == stop_arena) {
		stop_arena = NULL;
		if (dmn_stop())
			abort();
		dmn_start_later(200, 1);
	}
}

static void test_uncharge_and_answer_in_flight(void **state)
{
	struct nxq_ctx *c = open_ctx(NXQ_CTX_NO_THREAD, stop_on_ticket);
	struct nxq_arena *a = mk(c, 0, 0), *b = mk(c, 64 * MiB, 0), *w;
	unsigned long k[6];
	struct nxq_stats s;
	struct bg g;
	void *p[3];

	for (int i = 0; i < 3; i++)
		assert_int_equal(nxq_alloc(a, G, 0, &p[i]), 0);
	idle_granules(b, 3);
	assert_int_equal(used(), 12 * MiB);

	assert_int_equal(dmn_stop(), 0);
	dmn_start_later(200, 1);
	assert_int_equal(nxq_free(a, p[2]), 0);
	assert_true(nxq_arena_trim(a, 0, 0) >= 0);	/* the uncharge lost */
	dmn_join_later();
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);
	assert_int_equal(charged(a), 4 * MiB);
	assert_int_equal(dmn_charged(c, a), 4 * MiB);	/* not sent again */
	assert_int_equal(dmn_charged(c, b), 6 * MiB);
	assert_int_equal(used(), 10 * MiB);

	/* W waits for 56 MiB: 2 MiB short, the daemon asks B */
	w = mk(c, 0, 5000);
	stop_arena = b;
	bg_start(&g, w, 56 * MiB);
	for (int i = 0; i < 10000 && stop_arena; i++) {
		assert_true(nxq_ctx_handle_pressure(c) >= 0);	/* the answer it dies on */
		usleep(1000);
	}
	assert_null(stop_arena);
	dmn_join_later();
	st(b, &s);
	assert_int_equal(s.answers, 1);
	assert_int_equal(s.charged, 4 * MiB);
	pthread_join(g.th, NULL);
	assert_int_equal(g.r, 0);			/* granted by the new daemon */
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 2);
	assert_int_equal(dmn_charged(c, b), 4 * MiB);	/* restored without it */
	assert_int_equal(dmn_charged(c, a), 4 * MiB);
	assert_int_equal(used(), 64 * MiB);

	assert_int_equal(nxq_free(w, g.p), 0);
	assert_int_equal(nxq_free(a, p[0]), 0);
	assert_int_equal(nxq_free(a, p[1]), 0);
	assert_int_equal(nxq_arena_destroy(w), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(used(), 0);
}

/*
 * The restarted daemon has no device host0 yet: the restore's
 * registration is refused; once the device is registered again the
 * holder's next charge registers it again and restores what it holds,
 * then is charged.
 */
static void test_readopt(void **state)
{
	struct nxq_ctx *c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	struct nxq_arena *a = mk(c, 0, 0);
	unsigned long k[6];
	char cmd[1200];
	void *p, *q;
	int i;

	assert_int_equal(nxq_alloc(a, 2 * G, 0, &p), 0);
	dmn_restart(0);				/* no device */
	for (i = 0; i < 1000; i++) {		/* the watcher's restore */
		nxq__sock_counters(c, k);
		if (k[0] == 1)
			break;
		usleep(10000);
	}
	assert_int_equal(k[0], 1);
	assert_int_equal(k[1], 1);		/* the refusal was seen */
	snprintf(cmd, sizeof(cmd), "%s --control %s devices register host0 64M && "
		 "%s --control %s devices default-max host0 max", cbin, d.ctl, cbin, d.ctl);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(dev().holders, 0);
	assert_int_equal(nxq_alloc(a, G, 0, &q), 0);
	assert_int_equal(charged(a), 6 * MiB);
	assert_int_equal(dmn_charged(c, a), 6 * MiB);
	assert_int_equal(dev().holders, 1);
	assert_int_equal(used(), 6 * MiB);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);		/* taken back without a reconnect */
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(used(), 0);
}

static struct {
	int tickets;
	uint32_t reason;
	uint64_t wanted;
} evs;

static void on_event(const struct nxq_event *ev, void *user)
{
	(void)user;
	if (ev->type == NXQ_EVENT_TICKET) {
		evs.tickets++;
		evs.reason = ev->reason;
		evs.wanted = ev->bytes_wanted;
	}
}

/*
 * The restarted daemon has less room than A held: the restore is refused,
 * A is asked (through its own pressure path) for what the daemon did not
 * take, releases its idle memory, and the rest is restored.
 */
static void test_restore_refused(void **state)
{
	struct nxq_ctx *c = open_ctx(0, on_event);
	struct nxq_arena *a = mk(c, 64 * MiB, 0), *b = mk(c, 0, 0);
	unsigned long k[6];
	struct nxq_stats s;
	void *p[4], *q;

	memset(&evs, 0, sizeof(evs));
	for (int i = 0; i < 4; i++)
		assert_int_equal(nxq_alloc(a, G, 0, &p[i]), 0);
	assert_int_equal(nxq_free(a, p[3]), 0);
	assert_int_equal(nxq_free(a, p[2]), 0);	/* 4 MiB in use, 4 MiB idle */
	assert_int_equal(charged(a), 8 * MiB);

	dmn_kill();
	write_state(6 * MiB);
	dmn_start_later(100, 0);
	assert_int_equal(nxq_alloc(b, G, 0, &q), 0);	/* meets the restart */
	dmn_join_later();
	wait_answers(a, 1);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);
	assert_int_equal(k[1], 1);		/* A's restore was refused */
	st(a, &s);
	assert_int_equal(s.tickets, 1);
	assert_int_equal(evs.tickets, 1);
	assert_int_equal(evs.reason, NXQ_TICKET_REASON_BUDGET);
	assert_int_equal(evs.wanted, 8 * MiB);
	assert_int_equal(s.answered_bytes, 4 * MiB);	/* the idle half */
	assert_int_equal(s.in_use, 4 * MiB);		/* in use: never touched */
	assert_int_equal(s.charged, 4 * MiB);
	/* what A still holds is charged again, B's growth too: 6 MiB, the capacity */
	assert_int_equal(dmn_charged(c, a), 4 * MiB);
	assert_int_equal(dmn_charged(c, b), 2 * MiB);
	assert_int_equal(used(), 6 * MiB);

	assert_int_equal(nxq_free(a, p[0]), 0);
	assert_int_equal(nxq_free(a, p[1]), 0);
	assert_int_equal(nxq_free(b, q), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(used(), 0);
}

/* ---- choosing the authority ---- */

static void test_selection(void **state)
{
	struct nxq_ctx_opts co = { .size = sizeof(co) };
	const char *saved = nxq__sock_default, *saved_v0 = nxq__sock_v0;
	struct nxq_ctx *c = NULL;

	nxq__sock_default = d.sock;		/* the default socket is the daemon's */

	/* "" means no daemon: the device's error, no connection */
	setenv("NXQUOTA_SOCKET", "", 1);
	assert_int_equal(nxq_ctx_open(&co, &c), -ENOENT);
	assert_null(c);

	/* unset: the default socket */
	unsetenv("NXQUOTA_SOCKET");
	c = open_ctx(0, NULL);
	assert_int_equal(nxq_ctx_close(c), 0);

	/*
	 * NXQD_SOCKET_PATH_V0, where a daemon from before issue 29 listens,
	 * only where the default socket does not exist; both gone: the
	 * error names the default
	 */
	nxq__sock_default = "/nonexistent/client/nxquota.sock";
	nxq__sock_v0 = d.sock;
	c = open_ctx(0, NULL);
	assert_int_equal(nxq_ctx_close(c), 0);
	nxq__sock_default = d.sock;
	nxq__sock_v0 = "/dev/null";		/* exists, and is no socket */
	c = open_ctx(0, NULL);
	assert_int_equal(nxq_ctx_close(c), 0);
	nxq__sock_default = "/nonexistent/client/nxquota.sock";
	nxq__sock_v0 = "/nonexistent/nxquota.sock";
	assert_int_equal(nxq_ctx_open(&co, &c), -ENOENT);
	assert_non_null(strstr(nxq_errmsg(), "/nonexistent/client/nxquota.sock"));
	nxq__sock_default = d.sock;
	nxq__sock_v0 = saved_v0;

	/* a device that opens wins over the socket (here one that is not
	 * nxquota's: its NXQ_IOC_VERSION fails) */
	setenv("NXQ_DEV", "/dev/null", 1);
	assert_int_equal(nxq_ctx_open(&co, &c), -ENOTTY);
	setenv("NXQ_DEV", "/nonexistent/nxquota", 1);

	/* a socket that does not connect: the device's error, both named */
	setenv("NXQUOTA_SOCKET", "/nonexistent/nxquota.sock", 1);
	assert_int_equal(nxq_ctx_open(&co, &c), -ENOENT);
	assert_non_null(strstr(nxq_errmsg(), "nxquotad"));

	setenv("NXQUOTA_SOCKET", d.sock, 1);
	setenv("NXQUOTA_RECONNECT_MS", "soon", 1);
	assert_int_equal(nxq_ctx_open(&co, &c), -EINVAL);
	setenv("NXQUOTA_RECONNECT_MS", "10000", 1);

	/* NXQ_CTX_UNMANAGED asks for nothing */
	co.flags = NXQ_CTX_UNMANAGED;
	assert_int_equal(nxq_ctx_open(&co, &c), 0);
	assert_string_equal(c->kops->name, "unmanaged");
	assert_int_equal(nxq_ctx_is_managed(c), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	nxq__sock_default = saved;
}

/* ---- fork ---- */

/*
 * The child's copy of the context answers -ECHILD and its close sends
 * nothing and ends none of the parent's connections: the parent's holder
 * and its charge are as they were, and it charges on.
 */
static void test_fork(void **state)
{
	struct nxq_ctx *c = open_ctx(0, NULL);
	struct nxq_arena *a = mk(c, 0, 0);
	struct dev v;
	int status;
	void *p, *q;
	pid_t pid;

	assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &p), 0);
	pid = fork();
	if (pid == 0) {
		void *x;
		int ok = nxq_alloc(a, 2 * MiB, 0, &x) == -ECHILD &&
			 nxq_ctx_pressure_fd(c) == -ECHILD &&
			 nxq_arena_destroy(a) == 0 && nxq_ctx_close(c) == 0;

		_exit(ok ? 0 : 1);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	usleep(50000);
	v = dev();
	assert_int_equal(v.holders, 1);
	assert_int_equal(v.used, 4 * MiB);
	assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &q), 0);
	assert_int_equal(dmn_charged(c, a), 6 * MiB);
	{
		unsigned long k[6];

		nxq__sock_counters(c, k);
		assert_int_equal(k[0], 0);	/* no connection of ours ended */
	}
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(used(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_framing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_under_waiting_charge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_notice_in_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_notice_idle_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conn_refused_is_not_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_waiting_charges_leave_a_connection, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_refusal_named, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_restores, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_waiting_charge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_restores, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uncharge_and_answer_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readopt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_selection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork, setup, teardown),
	};
	const char *skip = NULL;
	int r;

	snprintf(dbin, sizeof(dbin), "%s", getenv("NXQD_BIN") ? getenv("NXQD_BIN") :
		 NXQ_TOP "/daemon/build/nxquotad");
	snprintf(cbin, sizeof(cbin), "%s", getenv("NXQCTL_BIN") ? getenv("NXQCTL_BIN") :
		 NXQ_TOP "/tools/nxquotactl");
	if (geteuid())
		skip = "not root (the daemon's sockets and our cgroup need it)";
	else if (access(dbin, X_OK))
		skip = "no daemon/build/nxquotad (make -C daemon build/nxquotad)";
	else if (access(cbin, X_OK))
		skip = "no tools/nxquotactl (make -C tools nxquotactl)";
	else
		skip = cg_enter();
	if (skip) {
		printf("test_sock_real: skipped: %s\n", skip);
		return 0;
	}
	if (getenv("NXQ_TEST_FILTER"))
		cmocka_set_test_filter(getenv("NXQ_TEST_FILTER"));
	r = cmocka_run_group_tests(tests, NULL, NULL);
	cg_leave();
	return r;
}
