// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libnxquota end to end against the real nxquotad (daemon/build/nxquotad,
 * configured with tools/nxquotactl over its control socket): two tenant
 * processes in two cgroups, each with its own context and arena on
 * device host0 (16 MiB):
 *
 *   B, a borrower, max 12 MiB: takes 12 MiB, is refused the 13th, keeps
 *     4 MiB idle;
 *   G, guaranteed 8 MiB: grows to 8 MiB; the daemon asks B, B's library
 *     thread releases its idle memory and answers, G is granted;
 *   then G's next growth waits in the daemon, the daemon is SIGKILLed and
 *     started again on its state directory; both libraries reconnect,
 *     register again and restore their charges, G's growth is asked again
 *     and granted from what B frees: the daemon's "used" is what the two
 *     libraries hold, nothing lost, nothing granted twice.
 *
 * The tenants run as nobody:nogroup once in their cgroups (the daemon's
 * client socket is 0660 with -g 65534, its control socket root's).
 * Needs root (cgroups, the daemon's sockets), a cgroup2 mount, and the
 * two binaries; otherwise it says why and passes as skipped.
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

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "nxquota.h"

#ifndef NXQ_TOP
#define NXQ_TOP ".."
#endif
#define MiB (1ULL << 20)
#define TENANT_ID 65534		/* nobody / nogroup: the daemon's -g */

static char tmp[64], sock[128], ctl[128], stdir[128], cgroot[512], cgrel[128];
static char dbin[256], cbin[256];
static pid_t daemon_pid = -1;
static pid_t tenants[2];
static const char *skip_reason;

/* ---- the tenant: a command loop over a pipe ---- */

struct tenant {
	pid_t pid;
	FILE *to, *from;
};

static struct {
	struct nxq_arena *a;
	void *p[64];
	int n;
	void *wp;
	int wr;
	pthread_t wt;
} tn;

static void *tn_wait_alloc(void *arg)
{
	tn.wr = nxq_alloc(tn.a, (size_t)(uintptr_t)arg, 0, &tn.wp);
	return NULL;
}

static void tenant_main(int in, int out, const char *cg, uint64_t wait_ms)
{
	FILE *fi = fdopen(in, "r"), *fo = fdopen(out, "w");
	struct nxq_ctx_opts co = { .size = sizeof(co) };
	struct nxq_arena_opts o = {
		.size = sizeof(o), .backend = NXQ_BACKEND_HOST, .device_key = "host0",
		.granule = 2 * MiB, .grow_batch = 2 * MiB, .va_size = 1ULL << 30,
		.retain_idle = 64 * MiB, .handle_pool = NXQ_OPT_ZERO,
		.grow_timeout_ms = wait_ms ? wait_ms : NXQ_OPT_ZERO,
	};
	struct nxq_ctx *c = NULL;
	char line[128], path[1200];
	int fd, r;

	setvbuf(fo, NULL, _IOLBF, 0);
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	fd = open(path, O_WRONLY);
	r = fd >= 0 && dprintf(fd, "%d\n", getpid()) > 0 ? 0 : -errno;
	if (fd >= 0)
		close(fd);
	/* from here on an unprivileged tenant: only the socket's group lets it in */
	if (!r && (setgroups(0, NULL) || setgid(TENANT_ID) || setuid(TENANT_ID)))
		r = -errno;
	if (!r)
		r = nxq_ctx_open(&co, &c);
	if (!r)
		r = nxq_arena_create(c, &o, &tn.a);
	fprintf(fo, "%d %s\n", r, r ? nxq_errmsg() : "ready");
	if (r)
		_exit(1);
	while (fgets(line, sizeof(line), fi)) {
		unsigned long long v = 0;
		struct nxq_stats s = { .size = sizeof(s) };

		sscanf(line + 1, "%llu", &v);
		switch (line[0]) {
		case 'a':
			r = nxq_alloc(tn.a, v, 0, &tn.p[tn.n]);
			if (!r)
				tn.n++;
			fprintf(fo, "%d\n", r);
			break;
		case 'f':
			r = tn.n ? nxq_free(tn.a, tn.p[--tn.n]) : -ENOENT;
			fprintf(fo, "%d\n", r);
			break;
		case 'W':
			r = pthread_create(&tn.wt, NULL, tn_wait_alloc, (void *)(uintptr_t)v);
			fprintf(fo, "%d\n", -r);
			break;
		case 'J':
			pthread_join(tn.wt, NULL);
			if (!tn.wr)
				tn.p[tn.n++] = tn.wp;
			fprintf(fo, "%d\n", tn.wr);
			break;
		case 's':
			nxq_arena_stats(tn.a, &s);
			fprintf(fo, "%llu %llu %llu %llu\n", (unsigned long long)s.charged,
				(unsigned long long)s.answers,
				(unsigned long long)s.answered_bytes,
				(unsigned long long)s.tickets);
			break;
		case 'q':
			while (tn.n)
				nxq_free(tn.a, tn.p[--tn.n]);
			r = nxq_arena_destroy(tn.a);
			if (!r)
				r = nxq_ctx_close(c);
			fprintf(fo, "%d\n", r);
			_exit(0);
		}
	}
	_exit(0);
}

static struct tenant tenant_start(const char *name, uint64_t wait_ms)
{
	struct tenant t;
	int a[2], b[2];
	char cg[1100], line[256];

	snprintf(cg, sizeof(cg), "%s/%s/%s", cgroot, cgrel, name);
	assert_int_equal(pipe2(a, O_CLOEXEC), 0);
	assert_int_equal(pipe2(b, O_CLOEXEC), 0);
	t.pid = fork();
	assert_true(t.pid >= 0);
	if (!t.pid)
		tenant_main(a[0], b[1], cg, wait_ms);
	tenants[*name == 'g'] = t.pid;
	close(a[0]);
	close(b[1]);
	t.to = fdopen(a[1], "w");
	t.from = fdopen(b[0], "r");
	setvbuf(t.to, NULL, _IOLBF, 0);
	assert_non_null(fgets(line, sizeof(line), t.from));
	if (strncmp(line, "0 ready", 7))
		print_message("tenant %s: %s", name, line);
	assert_int_equal(strncmp(line, "0 ready", 7), 0);
	return t;
}

static long long cmd(struct tenant *t, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vfprintf(t->to, fmt, ap);
	va_end(ap);
	fputc('\n', t->to);
	fflush(t->to);
	assert_non_null(fgets(line, sizeof(line), t->from));
	return strtoll(line, NULL, 10);
}

struct tstats {
	unsigned long long charged, answers, answered, tickets;
};

static struct tstats stats(struct tenant *t)
{
	struct tstats s = { 0 };
	char line[256];

	fprintf(t->to, "s\n");
	fflush(t->to);
	assert_non_null(fgets(line, sizeof(line), t->from));
	assert_int_equal(sscanf(line, "%llu %llu %llu %llu", &s.charged, &s.answers,
				&s.answered, &s.tickets), 4);
	return s;
}

static void tenant_stop(struct tenant *t)
{
	int status;

	assert_int_equal(cmd(t, "q"), 0);
	assert_int_equal(waitpid(t->pid, &status, 0), t->pid);
	tenants[tenants[1] == t->pid] = 0;
	fclose(t->to);
	fclose(t->from);
}

/* ---- the daemon and its control tool ---- */

static int run(const char *fmt, ...)
{
	char c[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c, sizeof(c), fmt, ap);
	va_end(ap);
	return system(c);
}

static void daemon_start(void)
{
	struct stat st;

	daemon_pid = fork();
	assert_true(daemon_pid >= 0);
	if (!daemon_pid) {
		char log[160];
		int fd;

		snprintf(log, sizeof(log), "%s/nxquotad.log", tmp);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(dbin, dbin, "-s", sock, "-c", ctl, "-S", stdir, "-G", "3000", "-g",
		      "65534", "-v", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		if (!stat(sock, &st) && !stat(ctl, &st))
			return;
		usleep(10000);
	}
	print_message("nxquotad did not create %s (see %s/nxquotad.log)\n", sock, tmp);
	fail();
}

static void daemon_kill(void)
{
	int status;

	if (daemon_pid <= 0)
		return;
	kill(daemon_pid, SIGKILL);
	waitpid(daemon_pid, &status, 0);
	daemon_pid = -1;
}

/* The device's "used" and "holders" from `nxquotactl --json status`. */
static void dev_status(unsigned long long *used, unsigned long long *holders)
{
	char c[512], buf[8192], *p;
	FILE *f;
	size_t n;

	snprintf(c, sizeof(c), "%s --control %s --json status host0", cbin, ctl);
	f = popen(c, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	pclose(f);
	p = strstr(buf, "\"used\":");
	assert_non_null(p);
	*used = strtoull(p + 7, NULL, 10);
	p = strstr(buf, "\"holders\":");
	assert_non_null(p);
	*holders = strtoull(p + 10, NULL, 10);
}

static int find_cgroup2(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[1024];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - cgroup2 ");
		char mnt[512];

		if (sep && sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1) {
			snprintf(cgroot, sizeof(cgroot), "%s", mnt);
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return -1;
}

static int setup(void **state)
{
	char probe[700];

	(void)state;
	snprintf(dbin, sizeof(dbin), "%s", getenv("NXQD_BIN") ? getenv("NXQD_BIN") :
		 NXQ_TOP "/daemon/build/nxquotad");
	snprintf(cbin, sizeof(cbin), "%s", getenv("NXQCTL_BIN") ? getenv("NXQCTL_BIN") :
		 NXQ_TOP "/tools/nxquotactl");
	if (geteuid())
		skip_reason = "not root (cgroups and the daemon's sockets need it)";
	else if (access(dbin, X_OK))
		skip_reason = "no daemon/build/nxquotad (make -C daemon all)";
	else if (access(cbin, X_OK))
		skip_reason = "no tools/nxquotactl (make -C tools)";
	else if (find_cgroup2())
		skip_reason = "no cgroup2 mount";
	if (skip_reason)
		return 0;
	snprintf(cgrel, sizeof(cgrel), "nxq-libtest-%d", getpid());
	snprintf(probe, sizeof(probe), "%s/%s", cgroot, cgrel);
	if (mkdir(probe, 0755)) {
		skip_reason = "cannot create a cgroup";
		return 0;
	}
	for (const char *n = "b"; n; n = *n == 'b' ? "g" : NULL) {
		char cg[800];

		snprintf(cg, sizeof(cg), "%s/%s", probe, n);
		assert_int_equal(mkdir(cg, 0755), 0);
	}
	snprintf(tmp, sizeof(tmp), "/tmp/nxq-e2e-XXXXXX");
	assert_non_null(mkdtemp(tmp));
	assert_int_equal(chmod(tmp, 0755), 0);	/* the tenants reach the socket */
	snprintf(sock, sizeof(sock), "%s/nxquota.sock", tmp);
	snprintf(ctl, sizeof(ctl), "%s/control.sock", tmp);
	snprintf(stdir, sizeof(stdir), "%s/state", tmp);
	assert_int_equal(mkdir(stdir, 0700), 0);
	setenv("NXQUOTA_SOCKET", sock, 1);
	setenv("NXQ_DEV", "/nonexistent/nxquota", 1);
	setenv("NXQUOTA_RECONNECT_MS", "10000", 1);
	setenv("NXQ_REPORT_INTERVAL_MS", "50", 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (skip_reason)
		return 0;
	for (int i = 0; i < 2; i++)
		if (tenants[i] > 0) {
			kill(tenants[i], SIGKILL);	/* a failed test leaves them running */
			waitpid(tenants[i], NULL, 0);
		}
	daemon_kill();
	run("rmdir %s/%s/g %s/%s/b %s/%s 2>/dev/null", cgroot, cgrel, cgroot, cgrel,
	    cgroot, cgrel);
	if (getenv("NXQ_KEEP_TMP"))
		print_message("kept %s\n", tmp);
	else
		run("rm -rf %s", tmp);
	return 0;
}

static void test_two_tenants_restart(void **state)
{
	struct tenant b, g;
	struct tstats sb, sg;
	unsigned long long used, holders;

	(void)state;
	if (skip_reason) {
		print_message("skipped: %s\n", skip_reason);
		skip();
	}
	daemon_start();
	assert_int_equal(run("%s --control %s devices register host0 16M", cbin, ctl), 0);
	assert_int_equal(run("%s --control %s devices default-max host0 max", cbin, ctl), 0);
	assert_int_equal(run("%s --control %s set /%s/b host0 max=12M", cbin, ctl, cgrel), 0);
	assert_int_equal(run("%s --control %s set /%s/g host0 min=8M max=16M", cbin, ctl,
			     cgrel), 0);
	b = tenant_start("b", 0);
	g = tenant_start("g", 5000);

	/* B borrows up to its max and is refused beyond it */
	for (int i = 0; i < 6; i++)
		assert_int_equal(cmd(&b, "a %llu", 2 * MiB), 0);
	assert_int_equal(cmd(&b, "a %llu", 2 * MiB), -EDQUOT);
	assert_int_equal(cmd(&b, "f"), 0);
	assert_int_equal(cmd(&b, "f"), 0);		/* 4 MiB idle, still charged */
	dev_status(&used, &holders);
	assert_int_equal(used, 12 * MiB);
	assert_int_equal(holders, 2);

	/* G grows to its guarantee: the last 4 MiB come from B's answers */
	for (int i = 0; i < 4; i++)
		assert_int_equal(cmd(&g, "a %llu", 2 * MiB), 0);
	/* G is granted by the answer's uncharge; B's thread counts it just after */
	for (int i = 0; i < 500; i++) {
		sb = stats(&b);
		if (sb.answered >= 4 * MiB)
			break;
		usleep(10000);
	}
	sg = stats(&g);
	assert_true(sb.tickets >= 1);
	assert_int_equal(sb.answered, 4 * MiB);
	assert_int_equal(sb.charged, 8 * MiB);
	assert_int_equal(sg.charged, 8 * MiB);
	dev_status(&used, &holders);
	assert_int_equal(used, 16 * MiB);

	/* G's next growth waits (the device is full, B has nothing idle) ... */
	assert_int_equal(cmd(&g, "W %llu", 2 * MiB), 0);
	usleep(300000);
	/* ... when the daemon dies; B frees 2 MiB meanwhile (kept idle) */
	daemon_kill();
	assert_int_equal(cmd(&b, "f"), 0);
	usleep(200000);
	daemon_start();
	/*
	 * Both restore; G's growth is asked again and granted from B's idle
	 * memory -- through a ticket if B restored first, else B's restore is
	 * refused for those 2 MiB and B gives them back through its own
	 * pressure path (the daemon's grace holds back only processes that
	 * had no holders; G's retried growth may come before B's restore).
	 * Either way the end is the same, once B's thread has answered.
	 */
	assert_int_equal(cmd(&g, "J"), 0);
	for (int i = 0; i < 500; i++) {
		sb = stats(&b);
		sg = stats(&g);
		dev_status(&used, &holders);
		if (sb.charged == 6 * MiB && used == sb.charged + sg.charged)
			break;
		usleep(10000);
	}
	assert_int_equal(sg.charged, 10 * MiB);
	assert_int_equal(sb.charged, 6 * MiB);
	assert_int_equal(holders, 2);			/* each registered again, once */
	assert_int_equal(used, sb.charged + sg.charged);	/* nothing lost or doubled */

	tenant_stop(&b);
	tenant_stop(&g);
	dev_status(&used, &holders);
	assert_int_equal(used, 0);
	assert_int_equal(holders, 0);
	/* both restored with the version 1 protocol (NXQD_REQ_RESTORED) */
	assert_int_equal(run("test $(grep -c 'restored (version 1)' %s/nxquotad.log) = 2", tmp), 0);
	/* and the daemon (an ASan build in make check) saw nothing wrong */
	assert_int_equal(run("! grep -E 'AddressSanitizer|runtime error|WARNING|BUG' %s/nxquotad.log",
			     tmp), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_two_tenants_restart, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
