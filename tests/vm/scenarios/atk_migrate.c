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

int main(int argc, char **argv)
{
	struct sc_peer t;
	struct sc_rep r;
	uint64_t a, b;

	sc_init(argc, argv);
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(C1));
	CHECK_OK(sc_cg_create(C2));
	CHECK_OK(sc_set_budget(KEY, C1 " max=100M"));
	CHECK_OK(sc_set_budget(KEY, C2 " max=8M"));
	a = CG_ID(C1);
	b = CG_ID(C2);

	tn_peer_start(&t, "T", C1, KEY, 0, 1, 1);
	PEER_OK(&t, SC_PEER_CHARGE, 10 * M, 0);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 10 * M);
	CHECK_OK(sc_cg_move(C2, t.pid));

	r = PEER_CALL(&t, SC_PEER_CHARGE, 10 * M, 0);
	if (r.rc != -EDQUOT)
		FAIL("T moved to %s (max 8M) charging 10M more: expected "
		     "EDQUOT, got %s (%s current %llu, %s current %llu)", C2,
		     sc_rcname(r.rc), C1,
		     (unsigned long long)NODE_U64(KEY, a, "current"), C2,
		     (unsigned long long)TN_NODE_U64(KEY, b, "current"));
	PEER_OK(&t, SC_PEER_CHARGE, 5 * M, 0);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 10 * M);
	CHECK_EQ(NODE_U64(KEY, b, "current"), 5 * M);
	CHECK_EQ(DEV_U64(KEY, "used"), 15 * M);
	CHECK_EQ(NODE_U64(KEY, 1, "current"), 15 * M);
	CHECK_EQ(TN_PEER_CHARGE(&t), 15 * M);
	sc_log("moved: 10M stays on %s, 5M on %s; 10M more refused by %s's max",
	       C1, C2, C2);

	PEER_OK(&t, SC_PEER_UNCHARGE, 15 * M, 0);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 0);
	CHECK_EQ(NODE_U64(KEY, b, "current"), 0);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	PEER_OK(&t, SC_PEER_CHARGE, 3 * M, 0);
	CHECK_EQ(NODE_U64(KEY, b, "current"), 3 * M);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 0);
	PEER_STOP(&t);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 0);
	CHECK_EQ(NODE_U64(KEY, b, "current"), 0);
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(C1));
	CHECK_OK(sc_cg_remove(C2));
	PASS();
}
