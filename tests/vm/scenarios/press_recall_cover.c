// SPDX-License-Identifier: GPL-2.0
/*
 * press_recall_cover: the asks cover the shortfall, whatever the victims
 * report as reclaimable.
 *
 * Documentation/userspace-api/nxquota.rst, "Pressure tickets": victims are
 * asked "reclaimable first (most first), then the others (largest charge
 * first), until the asks cover the shortfall"; BRIEF: "a group below its
 * guarantee can always get up to it, by calling back lent memory".
 *
 * Device of 100M; /nxq-prc-a has min = 60M; /nxq-prc-b borrows 90M.  B's
 * holders answer every ticket, releasing exactly what is asked.  A (below
 * its guarantee) waits 2 s for 40M: the shortfall is 30M.
 *  1. B has two holders: b1 holds 10M, all reclaimable; b2 holds 80M,
 *     none reported.  b1 is asked 10M, b2 20M; A is granted.
 *  2. B has one holder, b3: 90M, of which it reports 10M reclaimable (a
 *     library reports what is idle now, not all it could free).  It must
 *     be asked for the 30M; A must be granted.
 */
#include "scen.h"

#define KEY	"t-prc"
#define A	"/nxq-prc-a"
#define B	"/nxq-prc-b"
#define M	SC_MIB
#define TMO	(2000ULL * 1000000)

/* The ledger's rules: the module and nxquotad alike. */
FIXTURE(recall_cover) {};

FIXTURE_VARIANT(recall_cover) {};

FIXTURE_VARIANT_ADD(recall_cover, module) {};

FIXTURE_VARIANT_ADD(recall_cover, daemon) {};

FIXTURE_SETUP(recall_cover)
{
	CHECK_OK(sc_dev_register_open(KEY, "100M"));
	CHECK_OK(sc_cg_create(A));
	CHECK_OK(sc_cg_create(B));
	CHECK_OK(sc_set_budget(KEY, A " min=60M"));
	CHECK_OK(sc_set_budget(KEY, B " max=100M"));
}

FIXTURE_TEARDOWN(recall_cover)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(A));
	CHECK_OK(sc_cg_remove(B));
}

TEST_F(recall_cover, asks_cover_the_shortfall)
{
	struct sc_peer pa, b1, b2, b3;
	struct sc_rep r, s1, s2, s3;

	sc_peer_start(&pa, "A", A, KEY, 0, 1);

	/* 1. Two borrowing holders: reclaimable first, then the charge. */
	sc_peer_start(&b1, "b1", B, KEY, 0, 1);
	sc_peer_start(&b2, "b2", B, KEY, 0, 1);
	PEER_OK(&b1, SC_PEER_CHARGE, 10 * M, 0);
	PEER_OK(&b1, SC_PEER_RECLAIMABLE, 10 * M, 0);
	PEER_OK(&b2, SC_PEER_CHARGE, 80 * M, 0);
	PEER_OK(&b1, SC_PEER_SERVE, SC_SERVE_RELEASE, 0);
	PEER_OK(&b2, SC_PEER_SERVE, SC_SERVE_RELEASE, 0);
	r = PEER_CALL(&pa, SC_PEER_CHARGE, 40 * M, TMO);
	s1 = PEER_OK(&b1, SC_PEER_STATS, 0, 0);
	s2 = PEER_OK(&b2, SC_PEER_STATS, 0, 0);
	sc_log("two holders: b1 asked %llu M, b2 asked %llu M; A: %s",
	       (unsigned long long)(s1.v[3] / M),
	       (unsigned long long)(s2.v[3] / M), sc_rcname(r.rc));
	CHECK_EQ(s1.v[3], 10 * M);
	CHECK_EQ(s2.v[3], 20 * M);
	CHECK_EQ(r.rc, 0);
	CHECK_EQ(DEV_U64(KEY, "used"), 100 * M);
	PEER_STOP(&b1);
	PEER_STOP(&b2);
	PEER_OK(&pa, SC_PEER_UNCHARGE, 40 * M, 0);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);

	/* 2. One holder reporting less reclaimable than the shortfall. */
	sc_peer_start(&b3, "b3", B, KEY, 0, 1);
	PEER_OK(&b3, SC_PEER_CHARGE, 90 * M, 0);
	PEER_OK(&b3, SC_PEER_RECLAIMABLE, 10 * M, 0);
	PEER_OK(&b3, SC_PEER_SERVE, SC_SERVE_RELEASE, 0);
	r = PEER_CALL(&pa, SC_PEER_CHARGE, 40 * M, TMO);
	s3 = PEER_OK(&b3, SC_PEER_STATS, 0, 0);
	sc_log("one holder: b3 asked %llu M in %llu answer(s); A: %s",
	       (unsigned long long)(s3.v[1] / M),
	       (unsigned long long)s3.v[0], sc_rcname(r.rc));
	if (s3.v[1] < 30 * M)
		FAIL("A (below its 60M guarantee) is short of 30M; the only "
		     "borrower holds 90M, reports 10M reclaimable and was asked "
		     "for %llu M in all: the asks do not cover the shortfall "
		     "(A's wait: %s)", (unsigned long long)(s3.v[1] / M),
		     sc_rcname(r.rc));
	CHECK_EQ(r.rc, 0);
	PEER_STOP(&b3);
	PEER_STOP(&pa);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
}

TEST_HARNESS_MAIN
