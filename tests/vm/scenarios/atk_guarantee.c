// SPDX-License-Identifier: GPL-2.0
/*
 * atk_guarantee: a guarantee is met whenever the borrowers together hold
 * enough and one of them cooperates, whatever the others answer.
 *
 * Device of 100M, floor 5 s.  G (tenant, /atk-gu-g) has min = 60M.  Two
 * tenant borrowers: B1 (/atk-gu-b1) holds 50M -- the most excess, so it is
 * asked first -- and B2 (/atk-gu-b2) holds 40M and releases whatever it
 * is asked.  G waits (5 s) for 40M: a 30M shortfall.
 *  1. B1 answers 0 (three rounds): G is granted each time, well before
 *     its deadline, with B2 releasing the 30M; B1 keeps its 50M.
 *  2. B1 answers 10M of the 30M (a partial answer): G is granted, B1
 *     gives 10M, B2 the other 20M.
 * Nobody is killed, and the ledger equals what each holds at each step.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-agu"
#define CG	"/atk-gu-g"
#define CB1	"/atk-gu-b1"
#define CB2	"/atk-gu-b2"
#define M	SC_MIB
#define WAIT_NS	(5000ULL * 1000000)

static struct sc_peer g, b1, b2;

static void ledger(int line, uint64_t cg, uint64_t c1, uint64_t c2)
{
	uint64_t xg = TN_PEER_CHARGE(&g), x1 = TN_PEER_CHARGE(&b1),
		 x2 = TN_PEER_CHARGE(&b2), used = DEV_U64(KEY, "used");

	if (xg != cg || x1 != c1 || x2 != c2 || used != cg + c1 + c2)
		FAIL("(line %d) G %llu B1 %llu B2 %llu used %llu, expected "
		     "G %llu B1 %llu B2 %llu", line,
		     (unsigned long long)xg, (unsigned long long)x1,
		     (unsigned long long)x2, (unsigned long long)used,
		     (unsigned long long)cg, (unsigned long long)c1,
		     (unsigned long long)c2);
	CHECK_EQ(NODE_U64(KEY, CG_ID(CG), "current"), cg);
	CHECK_EQ(DEV_U64(KEY, "kills"), 0);
}
#define LEDGER(cg, c1, c2) ledger(__LINE__, cg, c1, c2)

/*
 * G waits for 40M: it must be granted within 3 s, before the floor (5 s)
 * could expire B1's ticket: the shortfall moved on at B1's answer.
 */
static void g_granted(const char *what)
{
	struct sc_rep r = PEER_CALL(&g, SC_PEER_CHARGE, 40 * M, WAIT_NS);

	if (r.rc)
		FAIL("%s: G's wait for 40M (min 60M, borrowers hold 90M, B2 "
		     "cooperates): %s after %llu ms", what, sc_rcname(r.rc),
		     (unsigned long long)(r.v[1] / 1000000));
	if (r.v[1] > 3000ULL * 1000000)
		FAIL("%s: G granted only after %llu ms", what,
		     (unsigned long long)(r.v[1] / 1000000));
	sc_log("%s: G granted 40M after %llu ms", what,
	       (unsigned long long)(r.v[1] / 1000000));
}

/* The ledger's rules: the module and nxquotad alike. */
FIXTURE(guarantee) {};

FIXTURE_VARIANT(guarantee) {};

FIXTURE_VARIANT_ADD(guarantee, module) {};

FIXTURE_VARIANT_ADD(guarantee, daemon) {};

FIXTURE_SETUP(guarantee)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	TN_FLOOR_MS(KEY, 5000);
	CHECK_OK(sc_cg_create(CG));
	CHECK_OK(sc_cg_create(CB1));
	CHECK_OK(sc_cg_create(CB2));
	CHECK_OK(sc_set_budget(KEY, CG " max=100M min=60M"));
	CHECK_OK(sc_set_budget(KEY, CB1 " max=100M"));
	CHECK_OK(sc_set_budget(KEY, CB2 " max=100M"));
}

FIXTURE_TEARDOWN(guarantee)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CG));
	CHECK_OK(sc_cg_remove(CB1));
	CHECK_OK(sc_cg_remove(CB2));
}

TEST_F(guarantee, met_despite_borrowers)
{
	struct sc_rep s1, s2;
	char what[64];
	int i;

	tn_peer_start(&g, "G", CG, KEY, 0, 1, 1);
	tn_peer_start(&b1, "B1", CB1, KEY, 0, 1, 1);
	tn_peer_start(&b2, "B2", CB2, KEY, 0, 1, 1);
	PEER_OK(&b1, SC_PEER_CHARGE, 50 * M, 0);
	PEER_OK(&b2, SC_PEER_CHARGE, 40 * M, 0);
	PEER_OK(&b1, SC_PEER_SERVE, SC_SERVE_ZERO, 0);
	PEER_OK(&b2, SC_PEER_SERVE, SC_SERVE_RELEASE, 0);
	LEDGER(0, 50 * M, 40 * M);

	/* 1. B1 answers 0, three times. */
	for (i = 1; i <= 3; i++) {
		snprintf(what, sizeof(what), "1.%d B1 answers 0", i);
		g_granted(what);
		LEDGER(40 * M, 50 * M, 10 * M);
		s1 = PEER_OK(&b1, SC_PEER_STATS, 0, 0);
		s2 = PEER_OK(&b2, SC_PEER_STATS, 0, 0);
		sc_log("   B1 answered %llu (released %llu), B2 answered "
		       "%llu (released %llu M)", (unsigned long long)s1.v[0],
		       (unsigned long long)s1.v[1],
		       (unsigned long long)s2.v[0],
		       (unsigned long long)(s2.v[1] / M));
		CHECK_EQ(s2.v[1], 30 * M * i);
		/* back to the start */
		PEER_OK(&g, SC_PEER_UNCHARGE, 40 * M, 0);
		PEER_OK(&b2, SC_PEER_CHARGE, 30 * M, 0);
		LEDGER(0, 50 * M, 40 * M);
	}

	/* 2. B1 answers 10M of 30M. */
	PEER_OK(&b1, TN_PEER_SERVE, TN_SERVE_PARTIAL, 10 * M);
	g_granted("2. B1 answers 10M of 30M");
	LEDGER(40 * M, 40 * M, 20 * M);
	s1 = PEER_OK(&b1, SC_PEER_STATS, 0, 0);
	CHECK_EQ(s1.v[1], 10 * M);
	TN_ALIVE(&b1);
	TN_ALIVE(&b2);

	PEER_STOP(&g);
	PEER_STOP(&b1);
	PEER_STOP(&b2);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN
