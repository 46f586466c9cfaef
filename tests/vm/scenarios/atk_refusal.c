// SPDX-License-Identifier: GPL-2.0
/*
 * atk_refusal: a charge that can never fit is refused at once with its own
 * errno, and turns into nobody else's ticket.
 *
 * Device of 100M, floor 5 s.  V (tenant, /atk-rf-v) borrows 95M.  G
 * (tenant, /atk-rf-g, min 50M) waits for 10M: V gets one ticket for the
 * 5M shortfall.  While G is queued:
 *  1. A (tenant, /atk-rf-a, max 20M) charges 1G without waiting and then
 *     with a 2 s wait: EDQUOT both times, at once (< 500 ms);
 *  2. A charges 2^64-1 and 2^64-4096 bytes (both overflow the device's
 *     used), without and with a wait: EOVERFLOW at once;
 *  3. A2 (tenant, /atk-rf-a2, no max) charges 200M (twice the capacity),
 *     without and with a wait: ENOSPC at once.
 * After each: V's ticket has the same generation, bytes and level, V's
 * eventfd was not signalled again, the device's tickets and bytes_asked
 * did not move, G is still the one waiter, nothing was charged to A or A2,
 * and only the attackers' nodes count denials.  Then V answers 5M and G
 * is granted: V 90M, G 10M, used 100M.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-arf"
#define CV	"/atk-rf-v"
#define CG	"/atk-rf-g"
#define CA	"/atk-rf-a"
#define CA2	"/atk-rf-a2"
#define M	SC_MIB
#define S_NS	1000000000ULL

static struct sc_peer v, g, a, a2;
static uint64_t gen0, bytes0, level0, tickets0, asked0, vden, gden;

static void unchanged(const char *what)
{
	struct sc_rep t = PEER_OK(&v, SC_PEER_TICKET, 0, 0);
	struct sc_rep e = PEER_CALL(&v, SC_PEER_EFD, 0, 0);

	if (t.v[0] != gen0 || t.v[1] != bytes0 || t.v[4] != level0)
		FAIL("after %s: V's ticket gen %llu bytes %llu level %llu, "
		     "was gen %llu bytes %llu level %llu", what,
		     (unsigned long long)t.v[0], (unsigned long long)t.v[1],
		     (unsigned long long)t.v[4], (unsigned long long)gen0,
		     (unsigned long long)bytes0, (unsigned long long)level0);
	if (e.rc != -ETIMEDOUT)
		FAIL("after %s: V's eventfd was signalled again (%s)", what,
		     sc_rcname(e.rc));
	if (DEV_U64(KEY, "tickets") != tickets0 ||
	    DEV_U64(KEY, "bytes_asked") != asked0)
		FAIL("after %s: tickets %llu bytes_asked %llu, were %llu %llu",
		     what, (unsigned long long)DEV_U64(KEY, "tickets"),
		     (unsigned long long)DEV_U64(KEY, "bytes_asked"),
		     (unsigned long long)tickets0, (unsigned long long)asked0);
	CHECK_EQ(DEV_U64(KEY, "waiters"), 1);
	CHECK_EQ(DEV_U64(KEY, "used"), 95 * M);
	CHECK_EQ(NODE_U64(KEY, CG_ID(CV), "denials"), vden);
	CHECK_EQ(NODE_U64(KEY, CG_ID(CG), "denials"), gden);
	CHECK_EQ(TN_PEER_CHARGE(&v), 95 * M);
	PEER_BLOCKED(&g, 0);
}

/* A charge by p: it must fail with err within 500 ms. */
static void refused(struct sc_peer *p, uint64_t bytes, uint64_t tmo,
		    int err, const char *what)
{
	struct sc_rep r = PEER_CALL(p, SC_PEER_CHARGE, bytes, tmo);

	if (r.rc != -err)
		FAIL("%s: expected %s, got %s after %llu ms", what,
		     sc_errname(err), sc_rcname(r.rc),
		     (unsigned long long)(r.v[1] / 1000000));
	if (r.v[1] > 500ULL * 1000000)
		FAIL("%s: %s only after %llu ms (not at once)", what,
		     sc_errname(err), (unsigned long long)(r.v[1] / 1000000));
	CHECK_EQ(r.v[0], 0);
	sc_log("%s: %s after %llu us", what, sc_errname(err),
	       (unsigned long long)(r.v[1] / 1000));
	unchanged(what);
}

/* The ledger's rules: the module and nxquotad alike. */
FIXTURE(refusal) {};

FIXTURE_VARIANT(refusal) {};

FIXTURE_VARIANT_ADD(refusal, module) {};

FIXTURE_VARIANT_ADD(refusal, daemon) {};

FIXTURE_SETUP(refusal)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	TN_FLOOR_MS(KEY, 5000);
	CHECK_OK(sc_cg_create(CV));
	CHECK_OK(sc_cg_create(CG));
	CHECK_OK(sc_cg_create(CA));
	CHECK_OK(sc_cg_create(CA2));
	CHECK_OK(sc_set_budget(KEY, CV " max=100M"));
	CHECK_OK(sc_set_budget(KEY, CG " max=100M min=50M"));
	CHECK_OK(sc_set_budget(KEY, CA " max=20M"));
	CHECK_OK(sc_set_budget(KEY, CA2 " max=max"));
}

FIXTURE_TEARDOWN(refusal)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CV));
	CHECK_OK(sc_cg_remove(CG));
	CHECK_OK(sc_cg_remove(CA));
	CHECK_OK(sc_cg_remove(CA2));
}

TEST_F(refusal, refusals_leave_the_queue)
{
	struct sc_rep t, r;

	tn_peer_start(&v, "V", CV, KEY, 0, 1, 1);
	tn_peer_start(&g, "G", CG, KEY, 0, 1, 1);
	tn_peer_start(&a, "A", CA, KEY, 0, 1, 1);
	tn_peer_start(&a2, "A2", CA2, KEY, 0, 1, 1);
	PEER_OK(&v, SC_PEER_CHARGE, 95 * M, 0);

	PEER_SEND(&g, SC_PEER_CHARGE, 10 * M, 20 * S_NS);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 1);
	r = PEER_CALL(&v, SC_PEER_EFD, 5000, 0);
	if (r.rc < 1)
		FAIL("V was not signalled for G's shortfall: %s",
		     sc_rcname(r.rc));
	t = PEER_OK(&v, SC_PEER_TICKET, 0, 0);
	gen0 = t.v[0];
	bytes0 = t.v[1];
	level0 = t.v[4];
	CHECK_EQ(bytes0, 5 * M);
	tickets0 = DEV_U64(KEY, "tickets");
	asked0 = DEV_U64(KEY, "bytes_asked");
	vden = NODE_U64(KEY, CG_ID(CV), "denials");
	gden = NODE_U64(KEY, CG_ID(CG), "denials");
	sc_log("G queued; V's ticket gen %llu 5M level %llu; tickets %llu",
	       (unsigned long long)gen0, (unsigned long long)level0,
	       (unsigned long long)tickets0);

	/* 1. Above the attacker's own max. */
	refused(&a, SC_GIB, 0, EDQUOT, "A (max 20M) charges 1G");
	refused(&a, SC_GIB, 2 * S_NS, EDQUOT,
		"A (max 20M) charges 1G waiting 2 s");
	refused(&a, 21 * M, 2 * S_NS, EDQUOT,
		"A (max 20M) charges 21M waiting 2 s");
	/* 2. Overflow. */
	refused(&a, UINT64_MAX, 0, EOVERFLOW, "A charges 2^64-1");
	refused(&a, UINT64_MAX - 4095, 2 * S_NS, EOVERFLOW,
		"A charges 2^64-4096 waiting 2 s");
	/* 3. Above the capacity. */
	refused(&a2, 200 * M, 0, ENOSPC, "A2 (no max) charges 200M");
	refused(&a2, 200 * M, 2 * S_NS, ENOSPC,
		"A2 (no max) charges 200M waiting 2 s");
	CHECK(NODE_U64(KEY, CG_ID(CA), "denials") >= 5);
	CHECK(NODE_U64(KEY, CG_ID(CA2), "denials") >= 2);

	/* V answers what it was asked: G is granted. */
	r = PEER_OK(&v, SC_PEER_ANSWER, gen0, 5 * M);
	CHECK_EQ(r.v[0], 90 * M);
	r = PEER_REPLY(&g);
	if (r.rc)
		FAIL("G's 10M after V released 5M: %s", sc_rcname(r.rc));
	CHECK_EQ(r.v[0], 10 * M);
	CHECK_EQ(DEV_U64(KEY, "used"), 100 * M);
	CHECK_EQ(DEV_U64(KEY, "waiters"), 0);
	CHECK_EQ(DEV_U64(KEY, "kills"), 0);
	CHECK_EQ(TN_PEER_CHARGE(&a), 0);
	CHECK_EQ(TN_PEER_CHARGE(&a2), 0);

	PEER_STOP(&a2);
	PEER_STOP(&a);
	PEER_STOP(&g);
	PEER_STOP(&v);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN
