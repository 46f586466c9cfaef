// SPDX-License-Identifier: GPL-2.0
/*
 * atk_migrate: a process moved to another cgroup charges the new cgroup
 * from its next charge on; what it charged before stays where it was.
 *
 * Tenant T (uid 65534) registers H in /atk-mg-1 (max 100M) and charges
 * 10M.  Root moves T to /atk-mg-2 (max 8M).  Then: 10M more -> EDQUOT
 * (the new cgroup's max, though the old one has room); 5M -> granted and
 * charged to /atk-mg-2: /atk-mg-1 10M, /atk-mg-2 5M, used 15M.  H's
 * whole 15M uncharged: both 0.  close(): nothing left.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-amg"
#define C1	"/atk-mg-1"
#define C2	"/atk-mg-2"
#define M	SC_MIB

/* Two budgeted cgroups on a device a tenant may open. */
FIXTURE(migrate) {
	uint64_t a, b;		/* C1's and C2's ids */
	struct sc_peer t;	/* the tenant */
};

/* The ledger's rule: the module and nxquotad alike. */
FIXTURE_VARIANT(migrate) {};

FIXTURE_VARIANT_ADD(migrate, module) {};

FIXTURE_VARIANT_ADD(migrate, daemon) {};

FIXTURE_SETUP(migrate)
{
	tn_devnode_admin();
	ASSERT_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	ASSERT_OK(sc_cg_create(C1));
	ASSERT_OK(sc_cg_create(C2));
	ASSERT_OK(sc_set_budget(KEY, C1 " max=100M"));
	ASSERT_OK(sc_set_budget(KEY, C2 " max=8M"));
	self->a = CG_ID(C1);
	self->b = CG_ID(C2);
	tn_peer_start(&self->t, "T", C1, KEY, 0, 1, 1);
}

/* The tenant gone, nothing is left on either cgroup. */
FIXTURE_TEARDOWN(migrate)
{
	PEER_STOP(&self->t);
	ASSERT_EQ(DEV_U64(KEY, "used"), 0);
	ASSERT_EQ(DEV_U64(KEY, "holders"), 0);
	ASSERT_EQ(NODE_U64(KEY, self->a, "current"), 0);
	ASSERT_EQ(NODE_U64(KEY, self->b, "current"), 0);
	ASSERT_OK(sc_dev_unregister(KEY));
	ASSERT_OK(sc_cg_remove(C1));
	ASSERT_OK(sc_cg_remove(C2));
}

TEST_F(migrate, next_charge_is_the_new_cgroups)
{
	struct sc_peer *t = &self->t;
	uint64_t a = self->a, b = self->b;
	struct sc_rep r;

	PEER_OK(t, SC_PEER_CHARGE, 10 * M, 0);
	ASSERT_EQ(NODE_U64(KEY, a, "current"), 10 * M);
	ASSERT_OK(sc_cg_move(C2, t->pid));

	r = PEER_CALL(t, SC_PEER_CHARGE, 10 * M, 0);
	if (r.rc != -EDQUOT)
		FAIL("T moved to %s (max 8M) charging 10M more: expected "
		     "EDQUOT, got %s (%s current %llu, %s current %llu)", C2,
		     sc_rcname(r.rc), C1,
		     (unsigned long long)NODE_U64(KEY, a, "current"), C2,
		     (unsigned long long)TN_NODE_U64(KEY, b, "current"));
	PEER_OK(t, SC_PEER_CHARGE, 5 * M, 0);
	ASSERT_EQ(NODE_U64(KEY, a, "current"), 10 * M);
	ASSERT_EQ(NODE_U64(KEY, b, "current"), 5 * M);
	ASSERT_EQ(DEV_U64(KEY, "used"), 15 * M);
	ASSERT_EQ(NODE_U64(KEY, CG_ROOT_ID, "current"), 15 * M);
	ASSERT_EQ(TN_PEER_CHARGE(t), 15 * M);
	sc_log("moved: 10M stays on %s, 5M on %s; 10M more refused by %s's max",
	       C1, C2, C2);

	PEER_OK(t, SC_PEER_UNCHARGE, 15 * M, 0);
	ASSERT_EQ(NODE_U64(KEY, a, "current"), 0);
	ASSERT_EQ(NODE_U64(KEY, b, "current"), 0);
	ASSERT_EQ(DEV_U64(KEY, "used"), 0);
	PEER_OK(t, SC_PEER_CHARGE, 3 * M, 0);
	ASSERT_EQ(NODE_U64(KEY, b, "current"), 3 * M);
	ASSERT_EQ(NODE_U64(KEY, a, "current"), 0);
}

TEST_HARNESS_MAIN
