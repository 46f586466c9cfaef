// SPDX-License-Identifier: GPL-2.0
/*
 * press_fair: the fair queue under a cgroup's max.
 *
 *   /nxq-pfair      max = 10M (the device, 100M, has room)
 *   /nxq-pfair/v    V holds the 10M, with an eventfd, answers by hand
 *   /nxq-pfair/w    L (priority 0) waits for 6M, queued first;
 *                   S (priority 1000) waits for 1M, queued second;
 *                   N (priority 0) charges 1M without waiting, later
 *
 *  - L's wait asks V for 6M (reason MAX, level ASK); S's wait raises V's
 *    ticket (new generation, 7M: S's 1M on top of L's 6M).
 *  - V releases 1M, enough for S only: S is granted, L keeps waiting.
 *  - V releases 2M more: 2M free under the max, L still needs 6M; N, a
 *    newcomer of priority 0, asks for 1M without waiting: EDQUOT, the
 *    room is L's.
 *  - V releases 4M more: L is granted.
 */
#include "scen.h"

#define KEY	"t-pfair"
#define P	"/nxq-pfair"
#define V	"/nxq-pfair/v"
#define W	"/nxq-pfair/w"
#define M	SC_MIB
#define TMO	(20ULL * 1000000000)

/* The ledger's rules: the module and nxquotad alike. */
FIXTURE(fair) {};

FIXTURE_VARIANT(fair) {};

FIXTURE_VARIANT_ADD(fair, module) {};

FIXTURE_VARIANT_ADD(fair, daemon) {};

FIXTURE_SETUP(fair)
{
	CHECK_OK(sc_dev_register_open(KEY, "100M"));
	CHECK_OK(sc_cg_create(P));
	CHECK_OK(sc_cg_create(V));
	CHECK_OK(sc_cg_create(W));
}

FIXTURE_TEARDOWN(fair)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(W));
	CHECK_OK(sc_cg_remove(V));
	CHECK_OK(sc_cg_remove(P));
}

TEST_F(fair, queue_by_priority)
{
	struct sc_peer pv, pl, ps, pn;
	struct sc_rep r, t;
	uint64_t p, gen;

	p = CG_ID(P);
	CHECK_OK(sc_set_budget(KEY, P " max=10M"));
	/* Root lets this subtree use priorities (0 unless raised). */
	CHECK_OK(sc_set_budget(KEY, W " priority_max=1000"));

	sc_peer_start(&pv, "V", V, KEY, 0, 1);
	sc_peer_start(&pl, "L", W, KEY, 0, 1);
	sc_peer_start(&ps, "S", W, KEY, NXQ_PRIORITY_MAX, 1);
	sc_peer_start(&pn, "N", W, KEY, 0, 1);
	PEER_OK(&pv, SC_PEER_CHARGE, 10 * M, 0);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 10 * M);

	/* L, large and of priority 0, queues first. */
	PEER_SEND(&pl, SC_PEER_CHARGE, 6 * M, TMO);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 1);
	CHECK_EQ(PEER_CALL(&pv, SC_PEER_EFD, 10000, 0).rc, 1);
	t = PEER_OK(&pv, SC_PEER_TICKET, 0, 0);
	CHECK_EQ(t.v[1], 6 * M);
	CHECK_EQ(t.v[3], NXQ_TICKET_REASON_MAX);
	CHECK_EQ(t.v[4], NXQ_TICKET_LEVEL_ASK);
	gen = t.v[0];

	/* S, small and urgent, queues behind it: V's ticket is raised. */
	PEER_SEND(&ps, SC_PEER_CHARGE, 1 * M, TMO);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 2);
	CHECK_EQ(PEER_CALL(&pv, SC_PEER_EFD, 10000, 0).rc, 1);
	t = PEER_OK(&pv, SC_PEER_TICKET, 0, 0);
	CHECK(t.v[0] != gen);
	CHECK_EQ(t.v[1], 7 * M);
	CHECK_EQ(t.v[3], NXQ_TICKET_REASON_MAX);
	CHECK_EQ(DEV_U64(KEY, "tickets"), 2);
	CHECK_EQ(DEV_U64(KEY, "bytes_asked"), 7 * M);
	CHECK_EQ(PEER_CALL(&pv, SC_PEER_ANSWER, gen, 1 * M).rc, -ESTALE);
	PEER_BLOCKED(&pl, 10);
	PEER_BLOCKED(&ps, 10);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 10 * M);

	/* V releases 1M: the small urgent one is granted, L waits on. */
	r = PEER_OK(&pv, SC_PEER_ANSWER, t.v[0], 1 * M);
	CHECK_EQ(r.v[0], 9 * M);
	r = PEER_REPLY(&ps);
	if (r.rc)
		FAIL("S (1M, priority 1000) behind L (6M, priority 0), 1M "
		     "released: expected a grant, got %s", sc_rcname(r.rc));
	CHECK_EQ(r.v[0], 1 * M);
	PEER_BLOCKED(&pl, 200);
	CHECK_EQ(DEV_U64(KEY, "waiters"), 1);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 10 * M);
	CHECK_EQ(PEER_CALL(&pv, SC_PEER_TICKET, 0, 0).rc, -EAGAIN);

	/* 2M free under the max, queued for L: no newcomer takes them. */
	PEER_OK(&pv, SC_PEER_UNCHARGE, 2 * M, 0);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 8 * M);
	PEER_BLOCKED(&pl, 100);
	r = PEER_CALL(&pn, SC_PEER_CHARGE, 1 * M, 0);
	if (r.rc != -EDQUOT)
		FAIL("N (1M, priority 0, no wait) with 2M free that L waits "
		     "for: expected EDQUOT, got %s", sc_rcname(r.rc));
	CHECK_EQ(r.v[0], 0);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 8 * M);
	CHECK_EQ(DEV_U64(KEY, "waiters"), 1);
	PEER_BLOCKED(&pl, 100);

	/* V releases 4M more: L's 6M are there. */
	PEER_OK(&pv, SC_PEER_UNCHARGE, 4 * M, 0);
	r = PEER_REPLY(&pl);
	if (r.rc)
		FAIL("L (6M) with 6M free: expected a grant, got %s",
		     sc_rcname(r.rc));
	CHECK_EQ(r.v[0], 6 * M);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 10 * M);
	CHECK_EQ(DEV_U64(KEY, "used"), 10 * M);
	CHECK_EQ(DEV_U64(KEY, "waiters"), 0);
	CHECK_EQ(DEV_U64(KEY, "waits"), 2);
	CHECK_EQ(DEV_U64(KEY, "timeouts"), 0);

	PEER_STOP(&pn);
	PEER_STOP(&ps);
	PEER_STOP(&pl);
	PEER_STOP(&pv);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN
