/* SPDX-License-Identifier: GPL-2.0 */
/*
 * harness.h - the test harness of the scenario programs (tests/vm/), in
 * the shape of the kernel's tools/testing/selftests/kselftest_harness.h:
 * TEST(), FIXTURE() / FIXTURE_SETUP() / FIXTURE_TEARDOWN() / TEST_F(),
 * ASSERT_*() (the test stops) and EXPECT_*() (the test is failed and goes
 * on), TEST_HARNESS_MAIN.  It knows nothing of nxquota: scen.h adds the
 * module's helpers and plugs its setup and cleanup in through th_hooks.
 *
 * One program is one verdict, which tests/vm/init.sh and
 * tests/daemon-scen.sh read: exit status 0 (pass), 1 (fail) or 77 (skip),
 * and the first line that starts "FAIL: " or "SKIP: " is the reason:
 *
 *	FAIL: file.c:42: used == 10 * M: 5242880 != 10485760
 *	SKIP: needs root (runs inside the test VM)
 *	PASS: name
 *
 * TEST_HARNESS_MAIN runs the tests of a program one after another, each
 * in a process of its own (forked, as kselftest_harness.h does) and in a
 * process group of its own, between "#  RUN  name" and "ok N name" or
 * "not ok N name" lines (which the runners do not read).  That process is
 * the test's main process (th_main_pid): a failed ASSERT, FAIL() or
 * SKIP() ends the test there: the state is shown (th_hooks.show_state, on
 * a failure), the tracked children are killed, the running test's
 * fixture teardown runs (if its setup had finished), then
 * th_hooks.cleanup.  Its exit status is that of the first ending; a
 * failure inside that teardown is a "NOTE:" line and ends it.  A failed
 * EXPECT prints its FAIL line and the test goes on, failed.  Nothing a
 * test changes in its memory reaches the next one.
 *
 * Each test has a time limit: TH_TIMEOUT_DEFAULT (30 s), or
 * NXQ_TEST_TIMEOUT seconds, or its own (TEST_TIMEOUT(name, secs),
 * TEST_F_TIMEOUT(fixture, name, secs)).  Past it, the program's main
 * process prints "FAIL: name: timed out after N s", shows the state,
 * kills the test's whole process group and runs th_hooks.cleanup itself
 * (scen.h keeps the devices and cgroups it must undo in shared memory).
 * A test that dies of a signal fails ("FAIL: name: killed by signal N"),
 * and so does one that passed but left a process in its process group
 * (killed: the runners' "left behind" check, per test).  The program is
 * the tests' subreaper, so what they leave comes back to it.
 *
 * FIXTURE_VARIANT(f) / FIXTURE_VARIANT_ADD(f, name): each TEST_F of f
 * runs once per variant ("f.name.test", `variant` its fields).
 * th_hooks.variant_skip may rule a variant out for this run (scen.h: the
 * one named for the other authority): "ok N f.name.test # SKIP why", not
 * run, and counted neither as a pass nor as a skip -- but a program none
 * of whose tests was for this run skips, with the first such reason.
 *
 * The verdict: the program fails if a test failed (the other tests still
 * run); it skips if a test skipped (the program cannot run here: the
 * tests after it are listed, not run); else it passes.  Unlike the
 * kernel's harness, ASSERT and EXPECT work anywhere (helpers, forked
 * children: a child's failure is its exit status, which CHECK_CHILD_OK()
 * reads).
 *
 * Programs written before the fixtures call th_start() (scen.h: sc_init())
 * in main() and end with PASS(); they run in one process, without a time
 * limit of their own (the runner's), and SKIP(), FAIL() or a failed
 * ASSERT end the whole program.  The CHECK*() names are ASSERT's.
 *
 * Children forked with th_fork() are tracked: killed when the program
 * (or the test) ends early, and a child that exited 77 turns the
 * failure into a skip (the failure follows from whatever the child
 * skipped on).
 *
 * Output is one write(2) per line, so that the lines of concurrent
 * processes never mix.  Header only, libc only; include it first (it
 * defines _GNU_SOURCE), or through scen.h.
 */
#ifndef NXQ_TESTS_VM_HARNESS_H
#define NXQ_TESTS_VM_HARNESS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#define TH_PASS		0
#define TH_FAIL		1
#define TH_SKIP		77

#define TH_UNUSED	__attribute__((unused))
#define TH_PRINTF(a, b)	__attribute__((format(printf, a, b)))
#define TH_NORETURN	__attribute__((noreturn))

/*
 * What the includer adds (scen.h: the module's checks, its state dump,
 * its objects' cleanup); each may be NULL.
 *	start		TEST_HARNESS_MAIN's setup; it must call th_start()
 *	show_state	main process, on a failure: print what explains it
 *	cleanup		main process, when the program ends early
 *	forked		in a child of th_fork(), before it returns there
 *	reaped		after th_wait() reaped a child (and after a
 *			test's process ended)
 *	variant_skip	TEST_HARNESS_MAIN, before a TEST_F's variant: NULL
 *			to run it, or why this run is not for it
 */
struct th_hooks {
	void (*start)(int argc, char **argv);
	void (*show_state)(void);
	void (*cleanup)(void);
	void (*forked)(void);
	void (*reaped)(pid_t pid);
	const char *(*variant_skip)(const char *variant);
};

static struct th_hooks th_hooks;
static pid_t th_main_pid;
static const char *th_name = "scenario";
static int th_failed;		/* an EXPECT failed in this process */

/* ---- output ------------------------------------------------------------ */

static TH_PRINTF(1, 2) TH_UNUSED void th_log(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	if (n == 0 || buf[n - 1] != '\n')
		buf[n++] = '\n';
	if (write(STDOUT_FILENO, buf, n) < 0)
		return;
}

/* A note with its place: "# file.c:42: what". */
#define TH_LOG(fmt, ...) \
	th_log("# %s:%d: " fmt, __FILE__, __LINE__, ##__VA_ARGS__)

/* "EDQUOT", "ENOSPC", ... for messages. */
static TH_UNUSED const char *th_errname(int err)
{
	static __thread char other[32];
	const char *s = err > 0 ? strerrorname_np(err) : NULL;

	if (s)
		return s;
	snprintf(other, sizeof(other), "errno %d", err);
	return other;
}

/* A helper's return value (>= 0 or -errno): "success (3)" or "EDQUOT". */
static TH_UNUSED const char *th_rcname(long rc)
{
	static __thread char buf[48];

	if (rc < 0)
		return th_errname((int)-rc);
	snprintf(buf, sizeof(buf), "success (%ld)", rc);
	return buf;
}

/* ---- children ------------------------------------------------------------ */

#define TH_TRACK_MAX 256

static pid_t th_pids[TH_TRACK_MAX];
static int th_npids;

/* Did a tracked child exit with TH_SKIP (reaped here if so)? */
static int th_child_skipped(void)
{
	int i, st, round;

	/* A child that just exited may not be reapable yet: 100 ms. */
	for (round = 0; round < 10; round++) {
		for (i = 0; i < th_npids; i++)
			if (th_pids[i] > 0 &&
			    waitpid(th_pids[i], &st, WNOHANG) == th_pids[i]) {
				th_pids[i] = 0;
				if (WIFEXITED(st) && WEXITSTATUS(st) == TH_SKIP)
					return 1;
			}
		usleep(10000);
	}
	return 0;
}

static void th_kill_children(void)
{
	int i;

	for (i = 0; i < th_npids; i++)
		if (th_pids[i] > 0) {
			kill(th_pids[i], SIGKILL);
			waitpid(th_pids[i], NULL, 0);
			th_pids[i] = 0;
		}
}

/* ---- the end of a program ------------------------------------------------ */

/* The fixture whose teardown is due if the test ends early. */
static void (*th_teardown_fn)(void *self, const void *variant);
static void *th_teardown_self;
static const void *th_teardown_variant;
/* The main process is ending early: later failures are only noted. */
static int th_ending;

/*
 * End the program, or (in a test's process, whose th_main_pid it is) the
 * test: 0 pass, 1 fail, 77 skip.  An early end shows the state, kills the
 * tracked children, runs the fixture's teardown and th_hooks.cleanup.
 */
static TH_NORETURN void th_exit(int code)
{
	static int first;
	void (*td)(void *, const void *) = th_teardown_fn;

	if (getpid() != th_main_pid)
		_exit(code == TH_PASS && th_failed ? TH_FAIL : code);
	if (th_ending) {
		/* failed again in the teardown or cleanup of an early end */
		code = first;
		goto out;
	}
	th_ending = 1;
	if (code == TH_PASS && th_failed)
		code = TH_FAIL;
	if (code == TH_FAIL && th_child_skipped()) {
		th_log("SKIP: a child process skipped (its SKIP line says "
		       "why); the failure above follows from it");
		code = TH_SKIP;
	}
	first = code;
	if (code == TH_PASS)
		exit(code);
	if (code == TH_FAIL && th_hooks.show_state)
		th_hooks.show_state();
	th_kill_children();
	th_teardown_fn = NULL;
	if (td)
		td(th_teardown_self, th_teardown_variant);
out:
	if (th_hooks.cleanup)
		th_hooks.cleanup();
	exit(code);
}

/*
 * "FAIL: file:line: what" (and where, if not in the main process); a
 * "NOTE:" in the teardown of a program already ending, whose reason is
 * the first line.
 */
static void th_report(const char *file, int line, const char *fmt,
		      va_list ap)
{
	char msg[768];
	int main_pid = getpid() == th_main_pid;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	th_log("%s: %s:%d: %s%s", main_pid && th_ending ? "NOTE" : "FAIL",
	       file, line, msg, main_pid ? "" : " (in a child process)");
}

/* Report a failure and end the program (ASSERT_*, FAIL()). */
static TH_PRINTF(3, 4) TH_NORETURN TH_UNUSED void
th_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	th_report(file, line, fmt, ap);
	va_end(ap);
	th_exit(TH_FAIL);
}

/* Report a failure; the test goes on, failed (EXPECT_*). */
static TH_PRINTF(3, 4) TH_UNUSED void
th_expect_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	th_report(file, line, fmt, ap);
	va_end(ap);
	th_failed = 1;
}

#define FAIL(...)	th_fail_at(__FILE__, __LINE__, __VA_ARGS__)

#define SKIP(...) do {							\
	char _m[512];							\
	snprintf(_m, sizeof(_m), __VA_ARGS__);				\
	th_log("SKIP: %s", _m);						\
	th_exit(TH_SKIP);						\
} while (0)

/* The end of a program that did not fail (else it fails here). */
#define PASS() do {							\
	if (!th_failed)							\
		th_log("PASS: %s", th_name);				\
	th_exit(TH_PASS);						\
} while (0)

/* ---- assertions -------------------------------------------------------- */

enum { TH_EQ, TH_NE, TH_LT, TH_LE, TH_GT, TH_GE };

/*
 * a OP b, both widened to 64 bits: as signed numbers when both are
 * signed, else as unsigned ones (as C compares a u64 with an int).
 */
static TH_UNUSED int th_cmp(int op, int sa, unsigned long long a, int sb,
			    unsigned long long b)
{
	int c;

	if (sa && sb)
		c = (long long)a < (long long)b ? -1 : (long long)a > (long long)b;
	else
		c = a < b ? -1 : a > b;
	switch (op) {
	case TH_EQ: return c == 0;
	case TH_NE: return c != 0;
	case TH_LT: return c < 0;
	case TH_LE: return c <= 0;
	case TH_GT: return c > 0;
	default:    return c >= 0;
	}
}

static TH_UNUSED const char *th_num(char *buf, size_t size, int s,
				    unsigned long long v)
{
	if (s)
		snprintf(buf, size, "%lld", (long long)v);
	else
		snprintf(buf, size, "%llu", v);
	return buf;
}

/* "a == b: 5 != 6": the expression, then what was seen. */
static TH_UNUSED void th_cmp_fail(const char *file, int line, int stop,
				  const char *ea, const char *op,
				  const char *eb, const char *nop, int sa,
				  unsigned long long a, int sb,
				  unsigned long long b)
{
	char x[32], y[32];

	if (stop)
		th_fail_at(file, line, "%s %s %s: %s %s %s", ea, op, eb,
			   th_num(x, sizeof(x), sa, a), nop,
			   th_num(y, sizeof(y), sb, b));
	th_expect_at(file, line, "%s %s %s: %s %s %s", ea, op, eb,
		     th_num(x, sizeof(x), sa, a), nop,
		     th_num(y, sizeof(y), sb, b));
}

#define TH_SIGNED(x)	((__typeof__(x))-1 < (__typeof__(x))1)

#define __TH_CMP(a, b, sa, sb, op, code, nop, stop) do {		\
	__typeof__(a) _th_a = (a);					\
	__typeof__(b) _th_b = (b);					\
	int _th_sa = TH_SIGNED(_th_a), _th_sb = TH_SIGNED(_th_b);	\
	if (!th_cmp(code, _th_sa, (unsigned long long)_th_a, _th_sb,	\
		    (unsigned long long)_th_b))				\
		th_cmp_fail(__FILE__, __LINE__, stop, sa, #op, sb, nop,	\
			    _th_sa, (unsigned long long)_th_a, _th_sb,	\
			    (unsigned long long)_th_b);			\
} while (0)

#define __TH_BOOL(e, se, want, stop) do {				\
	if (!(e) != !(want)) {						\
		if (stop)						\
			th_fail_at(__FILE__, __LINE__, "%s is %s", se,	\
				   (want) ? "false" : "true");		\
		th_expect_at(__FILE__, __LINE__, "%s is %s", se,	\
			     (want) ? "false" : "true");		\
	}								\
} while (0)

#define __TH_STR(a, b, sa, sb, eq, stop) do {				\
	const char *_th_a = (a), *_th_b = (b);				\
	if (!strcmp(_th_a, _th_b) != !!(eq)) {				\
		if (stop)						\
			th_fail_at(__FILE__, __LINE__,			\
				   "%s %s %s: \"%s\" %s \"%s\"", sa,	\
				   (eq) ? "==" : "!=", sb, _th_a,	\
				   (eq) ? "!=" : "==", _th_b);		\
		th_expect_at(__FILE__, __LINE__,			\
			     "%s %s %s: \"%s\" %s \"%s\"", sa,		\
			     (eq) ? "==" : "!=", sb, _th_a,		\
			     (eq) ? "!=" : "==", _th_b);		\
	}								\
} while (0)

/* e is a helper returning >= 0 or -errno: it must succeed. */
#define __TH_OK(e, se, stop) do {					\
	long _th_r = (e);						\
	if (_th_r < 0) {						\
		if (stop)						\
			th_fail_at(__FILE__, __LINE__, "%s: %s", se,	\
				   th_errname((int)-_th_r));		\
		th_expect_at(__FILE__, __LINE__, "%s: %s", se,		\
			     th_errname((int)-_th_r));			\
	}								\
} while (0)

/* e must fail with err1 or err2 (where the docs allow either). */
#define __TH_ERR(e, se, err1, err2, stop) do {				\
	long _th_r = (e);						\
	int _th_1 = (err1), _th_2 = (err2);				\
	if (_th_r != -(long)_th_1 && _th_r != -(long)_th_2) {		\
		char _th_w[80];						\
		snprintf(_th_w, sizeof(_th_w), _th_1 == _th_2 ? "%s" :	\
			 "%s or %s", th_errname(_th_1),			\
			 th_errname(_th_2));				\
		if (stop)						\
			th_fail_at(__FILE__, __LINE__,			\
				   "%s: expected %s, got %s", se, _th_w,\
				   th_rcname(_th_r));			\
		th_expect_at(__FILE__, __LINE__,			\
			     "%s: expected %s, got %s", se, _th_w,	\
			     th_rcname(_th_r));				\
	}								\
} while (0)

/*
 * The expressions are named as written (#a here, before any macro in
 * them is expanded): "NODE_U64(KEY, b, \"current\") == 5 * M".
 */
#define ASSERT_EQ(a, b)		__TH_CMP(a, b, #a, #b, ==, TH_EQ, "!=", 1)
#define ASSERT_NE(a, b)		__TH_CMP(a, b, #a, #b, !=, TH_NE, "==", 1)
#define ASSERT_LT(a, b)		__TH_CMP(a, b, #a, #b, <, TH_LT, ">=", 1)
#define ASSERT_LE(a, b)		__TH_CMP(a, b, #a, #b, <=, TH_LE, ">", 1)
#define ASSERT_GT(a, b)		__TH_CMP(a, b, #a, #b, >, TH_GT, "<=", 1)
#define ASSERT_GE(a, b)		__TH_CMP(a, b, #a, #b, >=, TH_GE, "<", 1)
#define ASSERT_TRUE(e)		__TH_BOOL(e, #e, 1, 1)
#define ASSERT_FALSE(e)		__TH_BOOL(e, #e, 0, 1)
#define ASSERT_STREQ(a, b)	__TH_STR(a, b, #a, #b, 1, 1)
#define ASSERT_STRNE(a, b)	__TH_STR(a, b, #a, #b, 0, 1)
#define ASSERT_OK(e)		__TH_OK(e, #e, 1)
#define ASSERT_ERR(e, err)	__TH_ERR(e, #e, err, err, 1)
#define ASSERT_ERR2(e, e1, e2)	__TH_ERR(e, #e, e1, e2, 1)

#define EXPECT_EQ(a, b)		__TH_CMP(a, b, #a, #b, ==, TH_EQ, "!=", 0)
#define EXPECT_NE(a, b)		__TH_CMP(a, b, #a, #b, !=, TH_NE, "==", 0)
#define EXPECT_LT(a, b)		__TH_CMP(a, b, #a, #b, <, TH_LT, ">=", 0)
#define EXPECT_LE(a, b)		__TH_CMP(a, b, #a, #b, <=, TH_LE, ">", 0)
#define EXPECT_GT(a, b)		__TH_CMP(a, b, #a, #b, >, TH_GT, "<=", 0)
#define EXPECT_GE(a, b)		__TH_CMP(a, b, #a, #b, >=, TH_GE, "<", 0)
#define EXPECT_TRUE(e)		__TH_BOOL(e, #e, 1, 0)
#define EXPECT_FALSE(e)		__TH_BOOL(e, #e, 0, 0)
#define EXPECT_STREQ(a, b)	__TH_STR(a, b, #a, #b, 1, 0)
#define EXPECT_STRNE(a, b)	__TH_STR(a, b, #a, #b, 0, 0)
#define EXPECT_OK(e)		__TH_OK(e, #e, 0)
#define EXPECT_ERR(e, err)	__TH_ERR(e, #e, err, err, 0)
#define EXPECT_ERR2(e, e1, e2)	__TH_ERR(e, #e, e1, e2, 0)

/* The names the scenarios were written with: ASSERT_TRUE, _EQ, ... */
#define CHECK(e)		__TH_BOOL(e, #e, 1, 1)
#define CHECK_EQ(a, b)		__TH_CMP(a, b, #a, #b, ==, TH_EQ, "!=", 1)
#define CHECK_STREQ(a, b)	__TH_STR(a, b, #a, #b, 1, 1)
#define CHECK_OK(e)		__TH_OK(e, #e, 1)
#define CHECK_ERR(e, err)	__TH_ERR(e, #e, err, err, 1)
#define CHECK_ERR2(e, e1, e2)	__TH_ERR(e, #e, e1, e2, 1)

/* ---- processes ------------------------------------------------------------ */

/*
 * fork() with stdio flushed; the child dies with SIGKILL if the program's
 * main process dies (so a timed-out program leaves nothing behind).
 */
static TH_UNUSED pid_t th_fork(void)
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		FAIL("fork: %s", th_errname(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(TH_FAIL);
		th_npids = 0;
		th_teardown_fn = NULL;
		if (th_hooks.forked)
			th_hooks.forked();
		return 0;
	}
	if (parent == th_main_pid && th_npids < TH_TRACK_MAX)
		th_pids[th_npids++] = pid;
	return pid;
}

/* Run fn(arg) in a child; the child exits with its return value. */
static TH_UNUSED pid_t th_spawn(int (*fn)(void *), void *arg)
{
	pid_t pid = th_fork();
	int rc;

	if (pid == 0) {
		rc = fn(arg);
		_exit(rc == TH_PASS && th_failed ? TH_FAIL : rc);
	}
	return pid;
}

/* A child reaped (by the caller's own waitpid()): no longer tracked. */
static TH_UNUSED void th_untrack(pid_t pid)
{
	int i;

	for (i = 0; i < th_npids; i++)
		if (th_pids[i] == pid)
			th_pids[i] = 0;
}

/*
 * Wait for a child: its exit status, 128 + the signal that killed it, or
 * -errno.
 */
static TH_UNUSED int th_wait(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	th_untrack(pid);
	if (th_hooks.reaped)
		th_hooks.reaped(pid);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

/* A child must exit with status 0 (77: it skipped; so does the program). */
#define CHECK_CHILD_OK(pid) do {					\
	int _s = th_wait(pid);						\
	if (_s == TH_SKIP)						\
		SKIP("child %d (%s) skipped (its SKIP line says why)",	\
		     (int)(pid), #pid);					\
	if (_s != 0)							\
		FAIL("child %d (%s) exited with status %d", (int)(pid),	\
		     #pid, _s);						\
} while (0)

/* Anonymous memory shared with the children forked after this call. */
static TH_UNUSED void *th_shared(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		FAIL("mmap shared %zu: %s", size, th_errname(errno));
	return p;
}

/* ---- tests, fixtures and variants ------------------------------------- */

/* A test's time limit when it names none (TEST_TIMEOUT, TEST_F_TIMEOUT). */
#define TH_TIMEOUT_DEFAULT	30

struct th_variant {
	const char *name;
	const void *data;		/* the FIXTURE_VARIANT_ADD's struct */
	struct th_variant *next;
};

struct th_fixture {
	const char *name;
	struct th_variant *variants, **tail;
};

struct th_meta {
	const char *name;		/* "test" or "fixture.test" */
	const char *test;		/* "test" */
	struct th_fixture *fixture;	/* NULL for TEST() */
	void (*fn)(struct th_meta *_metadata, const void *variant);
	unsigned int timeout;		/* seconds; 0: the default */
	struct th_meta *next;
};

static struct th_meta *th_tests, **th_tests_tail = &th_tests;

static TH_UNUSED void th_register(struct th_meta *t)
{
	*th_tests_tail = t;
	th_tests_tail = &t->next;
}

static TH_UNUSED void th_register_variant(struct th_fixture *f,
					  struct th_variant *v)
{
	if (!f->tail)
		f->tail = &f->variants;
	*f->tail = v;
	f->tail = &v->next;
}

/*
 * TEST(name) { ... }: a test without a fixture (TEST_TIMEOUT: with a
 * time limit of its own, in seconds).
 */
#define TEST(test_name) TEST_TIMEOUT(test_name, 0)

#define TEST_TIMEOUT(test_name, secs)					\
	static void test_name(struct th_meta *_metadata);		\
	static void _th_run_##test_name(struct th_meta *m,		\
					const void *variant)		\
	{								\
		(void)variant;						\
		test_name(m);						\
	}								\
	static struct th_meta _th_meta_##test_name = {			\
		.name = #test_name, .test = #test_name,			\
		.fn = _th_run_##test_name, .timeout = (secs) };		\
	static void __attribute__((constructor))			\
	_th_register_##test_name(void)					\
	{								\
		th_register(&_th_meta_##test_name);			\
	}								\
	static void test_name(TH_UNUSED struct th_meta *_metadata)

/*
 * FIXTURE(name) { fields };  FIXTURE_SETUP(name) { ... self ... }
 * FIXTURE_TEARDOWN(name) { ... }  TEST_F(name, test) { ... self ... }
 * Each TEST_F gets a zeroed fixture, set up before and torn down after
 * it; the teardown also runs when the test ends early (see the top), but
 * not when the setup does (as in kselftest_harness.h): what the setup
 * made is then th_hooks.cleanup's.
 *
 * FIXTURE_VARIANT(name) { fields };  FIXTURE_VARIANT_ADD(name, v) {
 * .field = ... };  each TEST_F of the fixture runs once per variant, as
 * "name.v.test", with `variant` pointing at that variant's fields (in the
 * setup, the teardown and the test; NULL for a fixture without
 * variants).  th_hooks.variant_skip may rule a variant out for this run
 * (scen.h: a variant named for the other authority).
 */
#define FIXTURE_DATA(fixture_name) struct _th_fixture_##fixture_name
#define FIXTURE_VARIANT(fixture_name) struct _th_variant_##fixture_name

#define FIXTURE(fixture_name)						\
	FIXTURE_VARIANT(fixture_name);					\
	static struct th_fixture _th_fixture_##fixture_name = {		\
		.name = #fixture_name };				\
	FIXTURE_DATA(fixture_name)

#define FIXTURE_VARIANT_ADD(fixture_name, variant_name)			\
	static const FIXTURE_VARIANT(fixture_name)			\
		_th_v_##fixture_name##_##variant_name;			\
	static struct th_variant _th_vm_##fixture_name##_##variant_name = { \
		.name = #variant_name,					\
		.data = &_th_v_##fixture_name##_##variant_name };	\
	static void __attribute__((constructor))			\
	_th_register_v_##fixture_name##_##variant_name(void)		\
	{								\
		th_register_variant(&_th_fixture_##fixture_name,	\
			&_th_vm_##fixture_name##_##variant_name);	\
	}								\
	static const FIXTURE_VARIANT(fixture_name)			\
		_th_v_##fixture_name##_##variant_name =

#define FIXTURE_SETUP(fixture_name)					\
	static void _th_##fixture_name##_setup(				\
		TH_UNUSED struct th_meta *_metadata,			\
		TH_UNUSED FIXTURE_DATA(fixture_name) *self,		\
		TH_UNUSED const FIXTURE_VARIANT(fixture_name) *variant)

#define FIXTURE_TEARDOWN(fixture_name)					\
	static void _th_##fixture_name##_teardown_body(			\
		FIXTURE_DATA(fixture_name) *self,			\
		const FIXTURE_VARIANT(fixture_name) *variant);		\
	static void _th_##fixture_name##_teardown(void *self,		\
						  const void *variant)	\
	{								\
		_th_##fixture_name##_teardown_body(self, variant);	\
	}								\
	static void _th_##fixture_name##_teardown_body(			\
		TH_UNUSED FIXTURE_DATA(fixture_name) *self,		\
		TH_UNUSED const FIXTURE_VARIANT(fixture_name) *variant)

#define TEST_F(fixture_name, test_name)					\
	TEST_F_TIMEOUT(fixture_name, test_name, 0)

#define TEST_F_TIMEOUT(fixture_name, test_name, secs)			\
	static void _th_##fixture_name##_##test_name##_body(		\
		struct th_meta *_metadata,				\
		FIXTURE_DATA(fixture_name) *self,			\
		const FIXTURE_VARIANT(fixture_name) *variant);		\
	static void _th_##fixture_name##_##test_name(struct th_meta *m,	\
						     const void *v)	\
	{								\
		FIXTURE_DATA(fixture_name) self;			\
		const FIXTURE_VARIANT(fixture_name) *variant = v;	\
									\
		memset(&self, 0, sizeof(self));				\
		_th_##fixture_name##_setup(m, &self, variant);		\
		th_teardown_self = &self;				\
		th_teardown_variant = variant;				\
		th_teardown_fn = _th_##fixture_name##_teardown;		\
		_th_##fixture_name##_##test_name##_body(m, &self,	\
							 variant);	\
		th_teardown_fn = NULL;					\
		_th_##fixture_name##_teardown(&self, variant);		\
	}								\
	static struct th_meta _th_meta_##fixture_name##_##test_name = {	\
		.name = #fixture_name "." #test_name,			\
		.test = #test_name,					\
		.fixture = &_th_fixture_##fixture_name,			\
		.fn = _th_##fixture_name##_##test_name,			\
		.timeout = (secs) };					\
	static void __attribute__((constructor))			\
	_th_register_##fixture_name##_##test_name(void)			\
	{								\
		th_register(&_th_meta_##fixture_name##_##test_name);	\
	}								\
	static void _th_##fixture_name##_##test_name##_body(		\
		TH_UNUSED struct th_meta *_metadata,			\
		TH_UNUSED FIXTURE_DATA(fixture_name) *self,		\
		TH_UNUSED const FIXTURE_VARIANT(fixture_name) *variant)

/* Does any fixture of this program have variants? */
static TH_UNUSED int th_has_variants(void)
{
	struct th_meta *t;

	for (t = th_tests; t; t = t->next)
		if (t->fixture && t->fixture->variants)
			return 1;
	return 0;
}

/*
 * Name the program after argv[0], set up its output; called first by
 * every program (scen.h's sc_init() does).
 */
static TH_UNUSED void th_start(int argc, char **argv)
{
	const char *slash;

	(void)argc;
	th_main_pid = getpid();
	slash = strrchr(argv[0], '/');
	th_name = slash ? slash + 1 : argv[0];
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);	/* a dead peer is EPIPE, reported */
}

/* ---- running the tests (TEST_HARNESS_MAIN) ------------------------------- */

static TH_UNUSED long long th_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Reap whatever of ours has ended (orphans come to us: subreaper). */
static void th_reap_orphans(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/*
 * Wait for the test's process until `deadline` (ms): 0 with its status,
 * or -ETIMEDOUT.
 */
static int th_wait_test(pid_t pid, long long deadline, int *status)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), rc;
	long long left;

	for (;;) {
		rc = waitpid(pid, status, WNOHANG);
		if (rc == pid)
			break;
		if (rc < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
		left = deadline - th_now_ms();
		if (left <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		if (pfd >= 0) {
			struct pollfd p = { .fd = pfd, .events = POLLIN };

			poll(&p, 1, left > 1000 ? 1000 : (int)left);
		} else {
			usleep(10000);	/* no pidfd_open (before Linux 5.3) */
		}
	}
	if (pfd >= 0)
		close(pfd);
	return rc == pid ? 0 : rc;
}

/* The processes of group pgid, "PID(comm) ..." into buf; how many. */
static int th_group_list(pid_t pgid, char *buf, size_t size)
{
	char path[64], stat[512], *p;
	struct dirent *e;
	int n = 0, fd;
	size_t len = 0;
	ssize_t r;
	DIR *d = opendir("/proc");

	buf[0] = 0;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		long pid = strtol(e->d_name, &p, 10), pgrp;
		char state;

		if (*p || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		r = read(fd, stat, sizeof(stat) - 1);
		close(fd);
		if (r <= 0)
			continue;
		stat[r] = 0;
		/* PID (COMM) STATE PPID PGRP ... */
		p = strrchr(stat, ')');
		if (!p || sscanf(p + 1, " %c %*d %ld", &state, &pgrp) != 2 ||
		    pgrp != pgid || state == 'Z')
			continue;
		*p = 0;
		n++;
		if (len < size)
			len += snprintf(buf + len, size - len, "%s%ld(%s)",
					len ? " " : "", pid,
					strchr(stat, '(') ? strchr(stat, '(') + 1 : "?");
	}
	closedir(d);
	return n;
}

/*
 * Processes the test left in its process group, once its own children
 * (killed with it: PR_SET_PDEATHSIG) had 1 s to go: killed, and listed in
 * buf.  0 if none.
 */
static int th_group_leftovers(pid_t pgid, char *buf, size_t size)
{
	long long end = th_now_ms() + 1000;
	int n;

	for (;;) {
		th_reap_orphans();
		n = th_group_list(pgid, buf, size);
		if (!n || th_now_ms() >= end)
			break;
		usleep(10000);
	}
	if (n) {
		kill(-pgid, SIGKILL);
		usleep(100000);
		th_reap_orphans();
	}
	return n;
}

/*
 * Run one test in a process of its own, in a process group of its own,
 * within its time limit: TH_PASS, TH_FAIL or TH_SKIP.  The test's process
 * is the main process of its test (th_main_pid): its ASSERTs end it, its
 * children are its own, its fixture's teardown and th_hooks.cleanup run in
 * it.  It dies with the program (PR_SET_PDEATHSIG).  On the time limit
 * the state is shown, the whole process group is killed and
 * th_hooks.cleanup runs here.
 */
static int th_run_test(struct th_meta *t, const struct th_variant *v,
		       const char *name, unsigned int secs)
{
	pid_t main_pid = getpid(), pid;
	char left[512];
	int status, rc;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		FAIL("fork for %s: %s", name, th_errname(errno));
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != main_pid)
			_exit(TH_FAIL);
		th_main_pid = getpid();
		th_npids = 0;
		th_failed = 0;
		if (th_hooks.forked)
			th_hooks.forked();
		t->fn(t, v ? v->data : NULL);
		th_exit(TH_PASS);
	}
	setpgid(pid, pid);	/* also here: no window without its group */
	if (th_wait_test(pid, th_now_ms() + secs * 1000LL, &status) < 0) {
		th_log("FAIL: %s: timed out after %u s (its process group "
		       "killed)", name, secs);
		if (th_hooks.show_state)
			th_hooks.show_state();
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		th_group_leftovers(pid, left, sizeof(left));
		if (th_hooks.reaped)
			th_hooks.reaped(pid);
		if (th_hooks.cleanup)
			th_hooks.cleanup();
		return TH_FAIL;
	}
	if (th_hooks.reaped)
		th_hooks.reaped(pid);
	if (WIFSIGNALED(status)) {
		th_log("FAIL: %s: killed by signal %d (%s)", name,
		       WTERMSIG(status), strsignal(WTERMSIG(status)));
		rc = TH_FAIL;
	} else if (WEXITSTATUS(status) == TH_PASS ||
		   WEXITSTATUS(status) == TH_SKIP) {
		rc = WEXITSTATUS(status);
	} else {
		if (WEXITSTATUS(status) != TH_FAIL)
			th_log("FAIL: %s: exited with status %d", name,
			       WEXITSTATUS(status));
		rc = TH_FAIL;
	}
	if (th_group_leftovers(pid, left, sizeof(left))) {
		th_log("%s: %s: left processes behind (killed): %s",
		       rc == TH_PASS ? "FAIL" : "NOTE", name, left);
		if (rc == TH_PASS)
			rc = TH_FAIL;
	}
	return rc;
}

/* A test's time limit: its own, else NXQ_TEST_TIMEOUT, else the default. */
static unsigned int th_timeout(const struct th_meta *t)
{
	const char *s = getenv("NXQ_TEST_TIMEOUT");
	unsigned long v;
	char *end;

	if (t->timeout)
		return t->timeout;
	if (s && *s) {
		v = strtoul(s, &end, 10);
		if (!*end && v > 0 && v < 100000)
			return v;
	}
	return TH_TIMEOUT_DEFAULT;
}

/*
 * Set up (th_hooks.start), run every test in order (a TEST_F once per
 * variant of its fixture), each in a process of its own (th_run_test),
 * and end the program with one verdict:
 *	fail (1)	a test failed (the first "FAIL:" line says which);
 *			the other tests still run
 *	skip (77)	a test skipped: the program cannot run here, so the
 *			tests after it do not run (its "SKIP:" line says why);
 *			or no test was for this run (every variant ruled out:
 *			a "SKIP:" line with the first reason)
 *	pass (0)	else; "PASS: name"
 * A variant ruled out is "ok N name # SKIP reason", neither a pass nor a
 * skip of the program.
 */
static TH_UNUSED int th_main(int argc, char **argv)
{
	const struct th_variant *v, novariant = { NULL, NULL, NULL };
	struct th_meta *t;
	char name[256], other[384] = "";
	const char *why, *skipped = NULL;
	int n = 0, rc, pass = 0, fail = 0, skip = 0, ruled_out = 0;

	if (th_hooks.start)
		th_hooks.start(argc, argv);
	else
		th_start(argc, argv);
	/* what a test leaves comes to us, to be reaped and seen */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	for (t = th_tests; t; t = t->next) {
		v = t->fixture && t->fixture->variants ? t->fixture->variants
						       : &novariant;
		for (; v; v = v->next) {
			n++;
			if (v->name)
				snprintf(name, sizeof(name), "%s.%s.%s",
					 t->fixture->name, v->name, t->test);
			else
				snprintf(name, sizeof(name), "%s", t->name);
			if (skipped) {
				th_log("ok %d %s # SKIP not run: %s skipped",
				       n, name, skipped);
				continue;
			}
			why = v->name && th_hooks.variant_skip ?
				th_hooks.variant_skip(v->name) : NULL;
			if (why) {
				th_log("ok %d %s # SKIP %s", n, name, why);
				if (!ruled_out++)
					snprintf(other, sizeof(other), "%s", why);
				continue;
			}
			th_log("#  RUN  %s ...", name);
			rc = th_run_test(t, v->name ? v : NULL, name,
					 th_timeout(t));
			th_log("%s %d %s%s", rc == TH_FAIL ? "not ok" : "ok",
			       n, name, rc == TH_SKIP ? " # SKIP" : "");
			pass += rc == TH_PASS;
			fail += rc == TH_FAIL;
			if (rc == TH_SKIP) {
				skip++;
				skipped = t->name;
			}
		}
	}
	if (!n)
		FAIL("no TEST() or TEST_F() in this program");
	th_log("# Totals: pass:%d fail:%d skip:%d ruled out:%d", pass, fail,
	       skip, ruled_out);
	th_teardown_fn = NULL;
	if (fail) {
		th_failed = 1;
		th_ending = 1;	/* the tests' processes showed their state */
		if (th_hooks.cleanup)
			th_hooks.cleanup();
		exit(TH_FAIL);
	}
	if (!skip && !pass)
		SKIP("%s", other);
	if (skip)
		th_exit(TH_SKIP);
	PASS();
}

#define TEST_HARNESS_MAIN						\
	int main(int argc, char **argv)					\
	{								\
		return th_main(argc, argv);				\
	}

#endif /* NXQ_TESTS_VM_HARNESS_H */
