// SPDX-License-Identifier: GPL-2.0
/*
 * atk_move_wait: a charge that is waiting when its process moves to
 * another cgroup is decided against that cgroup (issue 30, item 6).
 *
 * F (root, never answering its tickets) fills /atk-mw-1 (max 10M).
 * Tenant T, in /atk-mw-1, waits for 4M with a 5 s timeout: still blocked
 * after 300 ms.  Root moves T to /atk-mw-2 (max 50M, empty).  T's charge
 * is granted within 2.5 s of its wait (a waiting charge looks for its
 * process's cgroup every 100 ms): /atk-mw-2 current 4M, /atk-mw-1 10M.
 *
 * Seen failing before the fix (the waiter kept its old cgroup's max):
 * ETIMEDOUT after 5,001 ms.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-amw"
#define C1	"/atk-mw-1"
#define C2	"/atk-mw-2"
#define M	SC_MIB
#define WAIT_NS	(5000ULL * 1000 * 1000)
#define WITHIN_NS (2500ULL * 1000 * 1000)

FIXTURE(move_wait) {
	uint64_t a, b;
	struct sc_peer f, t;
};

/* The ledger's rule: the module and nxquotad alike. */
FIXTURE_VARIANT(move_wait) {};

FIXTURE_VARIANT_ADD(move_wait, module) {};

FIXTURE_VARIANT_ADD(move_wait, daemon) {};

FIXTURE_SETUP(move_wait)
{
	tn_devnode_admin();
	ASSERT_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	ASSERT_OK(sc_cg_create(C1));
	ASSERT_OK(sc_cg_create(C2));
	ASSERT_OK(sc_set_budget(KEY, C1 " max=10M"));
	ASSERT_OK(sc_set_budget(KEY, C2 " max=50M"));
	self->a = CG_ID(C1);
	self->b = CG_ID(C2);
	sc_peer_start(&self->f, "F", C1, KEY, 0, 1);
	tn_peer_start(&self->t, "T", C1, KEY, 0, 1, 1);
}

FIXTURE_TEARDOWN(move_wait)
{
	PEER_STOP(&self->t);
	PEER_STOP(&self->f);
	ASSERT_EQ(DEV_U64(KEY, "used"), 0);
	ASSERT_EQ(DEV_U64(KEY, "holders"), 0);
	ASSERT_OK(sc_dev_unregister(KEY));
	ASSERT_OK(sc_cg_remove(C1));
	ASSERT_OK(sc_cg_remove(C2));
}

TEST_F(move_wait, decided_in_the_new_cgroup)
{
	struct sc_peer *t = &self->t;
	struct sc_rep r;

	PEER_OK(&self->f, SC_PEER_CHARGE, 10 * M, 0);
	PEER_SEND(t, SC_PEER_CHARGE, 4 * M, WAIT_NS);
	PEER_BLOCKED(t, 300);
	ASSERT_OK(sc_cg_move(C2, t->pid));
	r = PEER_REPLY(t);
	if (r.rc || r.v[1] > WITHIN_NS)
		FAIL("T waiting for 4M in %s (full) moved to %s (room): %s "
		     "after %llu ms (want granted within %llu ms); %s current "
		     "%llu", C1, C2, r.rc ? sc_rcname(r.rc) : "granted",
		     (unsigned long long)(r.v[1] / 1000000),
		     WITHIN_NS / 1000000, C2,
		     (unsigned long long)TN_NODE_U64(KEY, self->b, "current"));
	ASSERT_EQ(NODE_U64(KEY, self->b, "current"), 4 * M);
	ASSERT_EQ(NODE_U64(KEY, self->a, "current"), 10 * M);
	ASSERT_EQ(DEV_U64(KEY, "used"), 14 * M);
	sc_log("waiting in %s, moved to %s: granted there after %llu ms", C1,
	       C2, (unsigned long long)(r.v[1] / 1000000));
	PEER_OK(t, SC_PEER_UNCHARGE, 4 * M, 0);
	PEER_OK(&self->f, SC_PEER_UNCHARGE, 10 * M, 0);
}

TEST_HARNESS_MAIN
