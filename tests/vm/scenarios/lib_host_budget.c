// SPDX-License-Identifier: GPL-2.0
/*
 * lib_host_budget: libnxquota's host backend against the real module.
 *
 * Two processes in two cgroups with budgets on device "host0" allocate
 * through the library until the module refuses:
 *  - budgets hold: each cgroup's current stops at or below its max, and
 *    the growth batch falls back to single granules near the max (A's max
 *    is not a multiple of the batch);
 *  - a refused growth is an allocation error (-EDQUOT) that changes
 *    nothing: the library's stats and sysfs current agree before and after;
 *  - SIGKILL of a holder leaves nothing charged: its cgroup's current and
 *    the device's used drop by exactly its charge;
 *  - free + trim + destroy give everything back.
 *
 * (Written for tests/vm/scenarios/; links lib/libnxquota.a.)
 */
#include "scen.h"
#include <nxquota.h>

#define KEY	"host0"
#define CGA	"/nxq-lib-a"
#define CGB	"/nxq-lib-b"
#define MAXA	(63 * SC_MIB)	/* not a multiple of the 8 MiB batch */
#define MAXB	(32 * SC_MIB)
#define BATCH	(8 * SC_MIB)
#define PIECE	SC_MIB

struct job {
	const char *cg;
	uint64_t max, expect;
	int to_parent, from_parent;
};

static void stats(struct nxq_arena *a, struct nxq_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	if (nxq_arena_stats(a, s))
		FAIL("nxq_arena_stats: %s", nxq_errmsg());
}

static int worker(void *arg)
{
	struct job *j = arg;
	struct nxq_arena_opts o = { .size = sizeof(o), .backend = NXQ_BACKEND_HOST,
				    .device_key = KEY, .grow_batch = BATCH };
	struct nxq_ctx *ctx;
	struct nxq_arena *a;
	struct nxq_stats s, s2;
	uint64_t cgid = CG_ID(j->cg), n = 0;
	void *ptrs[256];
	int r;

	CHECK_OK(sc_cg_enter(j->cg));
	r = nxq_ctx_open(NULL, &ctx);
	if (r)
		FAIL("nxq_ctx_open: %s", nxq_errmsg());
	CHECK_EQ(nxq_ctx_is_managed(ctx), 1);
	r = nxq_arena_create(ctx, &o, &a);
	if (r)
		FAIL("nxq_arena_create: %s", nxq_errmsg());
	for (;;) {
		void *p;

		stats(a, &s);
		r = nxq_alloc(a, PIECE, 0, &p);
		if (r)
			break;
		memset(p, (int)n, PIECE);
		ptrs[n++] = p;
		stats(a, &s2);
		CHECK(s2.charged <= j->max);
		CHECK_EQ(NODE_U64(KEY, cgid, "current"), s2.charged);
		if (n == 256)
			FAIL("no refusal after 256 MiB");
	}
	/* The refusal: EDQUOT, nothing changed, nothing leaked. */
	if (r != -EDQUOT)
		FAIL("refused allocation returned %d (%s), want -EDQUOT", r, nxq_errmsg());
	stats(a, &s2);
	CHECK_EQ(s2.charged, s.charged);
	CHECK_EQ(s2.mapped, s.mapped);
	CHECK_EQ(s2.in_use, n * PIECE);
	CHECK_EQ(s2.charged, j->expect);
	CHECK_EQ(NODE_U64(KEY, cgid, "current"), s2.charged);
	CHECK(s2.charge_denied >= 1);
	CHECK(!(s2.flags & NXQ_STATS_UNMANAGED));
	for (uint64_t i = 0; i < n; i++)
		CHECK_EQ(((unsigned char *)ptrs[i])[PIECE - 1], (unsigned char)i);
	CHECK_OK(sc_send(j->to_parent, s2.charged));
	RECV(j->from_parent);		/* B is killed here; A goes on */

	for (uint64_t i = 0; i < n; i++)
		if (nxq_free(a, ptrs[i]))
			FAIL("nxq_free: %s", nxq_errmsg());
	stats(a, &s);
	CHECK_EQ(s.in_use, 0);
	CHECK_EQ(NODE_U64(KEY, cgid, "current"), s.charged);	/* idle retained */
	CHECK(nxq_arena_trim(a, 0, 0) >= 0);
	stats(a, &s);
	CHECK_EQ(s.charged, 0);
	CHECK_EQ(NODE_U64(KEY, cgid, "current"), 0);
	CHECK_EQ(nxq_arena_destroy(a), 0);
	CHECK_EQ(nxq_ctx_close(ctx), 0);
	CHECK_OK(sc_send(j->to_parent, 1));
	return 0;
}

static pid_t start(struct job *j, int pipes[2][2])
{
	CHECK_OK(pipe(pipes[0]));
	CHECK_OK(pipe(pipes[1]));
	j->to_parent = pipes[0][1];
	j->from_parent = pipes[1][0];
	return sc_spawn(worker, j);
}

/* libnxquota finds either authority by itself: the module and nxquotad alike. */
FIXTURE(host_budget) {
	uint64_t ida;
	uint64_t idb;
};

FIXTURE_VARIANT(host_budget) {};

FIXTURE_VARIANT_ADD(host_budget, module) {};

FIXTURE_VARIANT_ADD(host_budget, daemon) {};

FIXTURE_SETUP(host_budget)
{
	CHECK_OK(sc_dev_register_open(KEY, "256M"));
	CHECK_OK(sc_cg_create(CGA));
	CHECK_OK(sc_cg_create(CGB));
	self->ida = CG_ID(CGA);
	self->idb = CG_ID(CGB);
	CHECK_OK(sc_set_budget(KEY, CGA " max=%llu", (unsigned long long)MAXA));
	CHECK_OK(sc_set_budget(KEY, CGB " max=%llu", (unsigned long long)MAXB));
}

FIXTURE_TEARDOWN(host_budget)
{
	CHECK_OK(sc_clear_budget(KEY, CGA));
	CHECK_OK(sc_clear_budget(KEY, CGB));
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CGA));
	CHECK_OK(sc_cg_remove(CGB));
}

TEST_F(host_budget, library_charges_and_kill)
{
	uint64_t ida = self->ida, idb = self->idb;
	struct job ja = { .cg = CGA, .max = MAXA, .expect = 62 * SC_MIB };
	struct job jb = { .cg = CGB, .max = MAXB, .expect = MAXB };
	int pa[2][2], pb[2][2];
	uint64_t ca, cb;
	pid_t a, b;

	a = start(&ja, pa);
	b = start(&jb, pb);
	ca = RECV(pa[0][0]);
	cb = RECV(pb[0][0]);
	CHECK_EQ(ca, 62 * SC_MIB);
	CHECK_EQ(cb, MAXB);
	CHECK_EQ(NODE_U64(KEY, ida, "current"), ca);
	CHECK_EQ(NODE_U64(KEY, idb, "current"), cb);
	CHECK(NODE_U64(KEY, ida, "max_hits") >= 1);
	CHECK(NODE_U64(KEY, idb, "max_hits") >= 1);
	CHECK_EQ(DEV_U64(KEY, "used"), ca + cb);
	CHECK_EQ(DEV_U64(KEY, "holders"), 2);

	/* SIGKILL B while it holds its whole budget. */
	CHECK_OK(kill(b, SIGKILL));
	CHECK_EQ(sc_wait(b), 128 + SIGKILL);
	CHECK_EQ(NODE_U64(KEY, idb, "current"), 0);
	CHECK_EQ(NODE_U64(KEY, ida, "current"), ca);
	CHECK_EQ(DEV_U64(KEY, "used"), ca);
	CHECK_EQ(DEV_U64(KEY, "holders"), 1);

	/* A gives everything back through the library. */
	CHECK_OK(sc_send(pa[1][1], 1));
	CHECK_EQ(RECV(pa[0][0]), 1);
	CHECK_CHILD_OK(a);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN
