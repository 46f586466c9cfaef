// SPDX-License-Identifier: GPL-2.0
/*
 * press_lib_callback: memory comes back through the application's reclaim
 * callback, by way of libnxquota's pressure thread.
 *
 * Uses /tools/nxq-libholder (lib/tests-vm/nxq-libholder.c, built by
 * run.sh when lib/libnxquota.a exists; skipped otherwise): a static
 * libnxquota program, host backend, that allocates BYTES in 1 MiB chunks
 * and, with --cache, frees chunks only from its reclaim callback.
 *
 * Device of 100M; /nxq-plib-a has min = 60M; /nxq-plib-b borrows 96M
 * (three 32 MiB growth batches: nothing mapped is idle, nothing retained).
 * A charges half a second after B is done allocating (SETTLE_US).
 *  1. B0 without --cache: asked for the shortfall, the library has nothing
 *     to give (no idle memory, no callback), answers 0; A's wait for 40M
 *     times out.
 *  2. B with --cache: asked for the 36M missing; the callback frees chunks
 *     ("reclaim wanted=... freed=..."), the library unmaps them, answers
 *     the ticket with what it released, and A is granted well within its
 *     deadline.  B's node counts the ticket and the bytes released; the
 *     ledger adds up with what the library says it holds.
 */
#include "scen.h"

#define KEY	"t-plib"
#define A	"/nxq-plib-a"
#define B	"/nxq-plib-b"
#define M	SC_MIB
#define TOOL	"/tools/nxq-libholder"
/*
 * The library reports its reclaimable bytes every 100 ms (its default
 * report interval); after growing it may still report idle bytes of its
 * last growth batch for that long.  The module caps a holder's ask at its
 * reported reclaimable bytes (see press_recall_cover), so A charges only
 * once the report says "nothing idle": this scenario is about the
 * callback path.
 */
#define SETTLE_US 500000

static uint64_t a, b;

struct lh {
	pid_t pid;
	int out;		/* its stdout */
	char buf[8192];
	size_t len;
};

/* Start nxq-libholder in cgroup B with the given extra argument. */
static void lh_start(struct lh *l, const char *extra)
{
	int p[2];

	CHECK(pipe2(p, O_CLOEXEC) == 0);
	l->len = 0;
	l->pid = sc_fork();
	if (l->pid == 0) {
		CHECK_OK(sc_cg_enter(B));
		dup2(p[1], 1);
		dup2(p[1], 2);
		if (extra)
			execl(TOOL, TOOL, KEY, "96M", extra, (char *)NULL);
		else
			execl(TOOL, TOOL, KEY, "96M", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	l->out = p[0];
}

/*
 * The next line of its output, within timeout_ms, into line (logged), or
 * FAIL.
 */
static void lh_line(struct lh *l, char *line, size_t size, int timeout_ms)
{
	uint64_t end = sc_now_ms() + timeout_ms;
	struct pollfd pf = { .fd = l->out, .events = POLLIN };
	char *nl;
	ssize_t n;
	int left;

	for (;;) {
		nl = memchr(l->buf, '\n', l->len);
		if (nl) {
			*nl = 0;
			if ((size_t)(nl - l->buf) >= size)
				l->buf[size - 1] = 0;
			memcpy(line, l->buf, strlen(l->buf) + 1);
			l->len -= nl + 1 - l->buf;
			memmove(l->buf, nl + 1, l->len);
			sc_log("  libholder: %s", line);
			return;
		}
		left = (int)(end - sc_now_ms());
		if ((int64_t)(end - sc_now_ms()) <= 0 || poll(&pf, 1, left) == 0)
			FAIL("no line from nxq-libholder within %d ms (have "
			     "\"%.*s\")", timeout_ms, (int)l->len, l->buf);
		n = read(l->out, l->buf + l->len, sizeof(l->buf) - 1 - l->len);
		if (n <= 0)
			FAIL("nxq-libholder ended (status %d; have \"%.*s\")",
			     sc_wait(l->pid), (int)l->len, l->buf);
		l->len += n;
	}
}

/* The next line must start with prefix; returns the line. */
static const char *lh_expect(struct lh *l, const char *prefix, int ms)
{
	static char line[8192];

	lh_line(l, line, sizeof(line), ms);
	if (strncmp(line, prefix, strlen(prefix)))
		FAIL("nxq-libholder said \"%s\", expected \"%s...\"", line,
		     prefix);
	return line;
}

static uint64_t field(const char *line, const char *key)
{
	const char *p = strstr(line, key);

	if (!p)
		FAIL("no %s in \"%s\"", key, line);
	return strtoull(p + strlen(key), NULL, 10);
}

/* libnxquota answers tickets for either authority: the module and nxquotad alike. */
FIXTURE(lib_callback) {};

FIXTURE_VARIANT(lib_callback) {};

FIXTURE_VARIANT_ADD(lib_callback, module) {};

FIXTURE_VARIANT_ADD(lib_callback, daemon) {};

FIXTURE_SETUP(lib_callback)
{
	if (!sc_exists(TOOL))
		SKIP("%s not in the VM (lib/libnxquota.a or "
		     "lib/tests-vm/nxq-libholder.c missing, or it did not "
		     "build: see build/vm/bin/tools/nxq-libholder.log)", TOOL);
	CHECK_OK(sc_dev_register_open(KEY, "100M"));
	CHECK_OK(sc_cg_create(A));
	CHECK_OK(sc_cg_create(B));
	a = CG_ID(A);
	b = CG_ID(B);
	CHECK_OK(sc_set_budget(KEY, A " min=60M"));
	CHECK_OK(sc_set_budget(KEY, B " max=100M"));
}

FIXTURE_TEARDOWN(lib_callback)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(A));
	CHECK_OK(sc_cg_remove(B));
}

TEST_F(lib_callback, reclaim_through_the_callback)
{
	uint64_t gen, wanted, freed, released, charged, asked;
	struct sc_peer pa;
	struct sc_rep r;
	struct lh l;
	const char *s;
	int st;

	sc_peer_start(&pa, "A", A, KEY, 0, 1);

	/* 1. No callback, nothing idle: the library answers 0. */
	lh_start(&l, NULL);
	s = lh_expect(&l, "allocated ", 20000);
	CHECK_EQ(field(s, "allocated "), 96 * M);
	CHECK_EQ(field(s, "charged "), 96 * M);
	CHECK_EQ(NODE_U64(KEY, b, "current"), 96 * M);
	usleep(SETTLE_US);
	r = PEER_CALL(&pa, SC_PEER_CHARGE, 40 * M, 1000000000ULL);
	if (r.rc != -ETIMEDOUT)
		FAIL("A's wait with a libholder that has nothing to give: "
		     "expected ETIMEDOUT, got %s", sc_rcname(r.rc));
	s = lh_expect(&l, "ticket ", 5000);
	CHECK_EQ(field(s, "bytes="), 36 * M);
	CHECK_EQ(field(s, "reason="), NXQ_TICKET_REASON_DEVICE);
	CHECK_EQ(field(s, "level="), NXQ_TICKET_LEVEL_RECALL);
	s = lh_expect(&l, "released ", 5000);
	CHECK_EQ(field(s, "released "), 0);
	s = lh_expect(&l, "answered ", 5000);
	CHECK_EQ(field(s, "charged="), 96 * M);
	CHECK_EQ(NODE_U64(KEY, b, "current"), 96 * M);
	CHECK_EQ(NODE_U64(KEY, b, "bytes_released"), 0);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 0);
	kill(l.pid, SIGKILL);
	st = sc_wait(l.pid);
	CHECK_EQ(st, 128 + SIGKILL);
	close(l.out);
	WAIT_U64(sc_dev_path(KEY, "used"), 0);
	asked = NODE_U64(KEY, b, "bytes_asked");

	/* 2. With the callback: the "cache" goes, A is granted. */
	lh_start(&l, "--cache");
	s = lh_expect(&l, "allocated ", 20000);
	CHECK_EQ(field(s, "charged "), 96 * M);
	CHECK_EQ(NODE_U64(KEY, b, "current"), 96 * M);
	usleep(SETTLE_US);
	r = PEER_CALL(&pa, SC_PEER_CHARGE, 40 * M, 10000000000ULL);
	if (r.rc)
		FAIL("A's wait with a libholder freeing its cache from the "
		     "callback: expected a grant, got %s after %llu ms",
		     sc_rcname(r.rc), (unsigned long long)(r.v[1] / 1000000));
	CHECK_EQ(r.v[0], 40 * M);
	sc_log("A granted 40M after %llu us",
	       (unsigned long long)(r.v[1] / 1000));
	if (r.v[1] > 2000000000ULL)
		FAIL("A waited %llu ms (deadline 10 s)",
		     (unsigned long long)(r.v[1] / 1000000));
	s = lh_expect(&l, "ticket ", 5000);
	gen = field(s, "gen=");
	CHECK_EQ(field(s, "bytes="), 36 * M);
	s = lh_expect(&l, "reclaim ", 5000);
	wanted = field(s, "wanted=");
	freed = field(s, "freed=");
	CHECK(wanted > 0 && wanted <= 36 * M);
	CHECK(freed >= wanted);
	s = lh_expect(&l, "released ", 5000);
	released = field(s, "released ");
	s = lh_expect(&l, "answered ", 5000);
	CHECK_EQ(field(s, "gen="), gen);
	charged = field(s, "charged=");
	if (released < 36 * M)
		FAIL("the library released %llu bytes for a ticket of 36M",
		     (unsigned long long)released);
	CHECK_EQ(charged, 96 * M - released);
	/* Nothing was idle: every byte released came from the callback. */
	CHECK(released <= freed);
	CHECK_EQ(NODE_U64(KEY, b, "current"), charged);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 40 * M);
	CHECK_EQ(DEV_U64(KEY, "used"), charged + 40 * M);
	CHECK_EQ(NODE_U64(KEY, b, "bytes_released"), released);
	CHECK_EQ(DEV_U64(KEY, "bytes_released"), released);
	CHECK_EQ(NODE_U64(KEY, b, "bytes_asked"), asked + 36 * M);
	CHECK_EQ(NODE_U64(KEY, a, "tickets"), 0);
	CHECK_EQ(DEV_U64(KEY, "kills"), 0);

	kill(l.pid, SIGKILL);
	CHECK_EQ(sc_wait(l.pid), 128 + SIGKILL);
	close(l.out);
	PEER_STOP(&pa);
	WAIT_U64(sc_dev_path(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN
