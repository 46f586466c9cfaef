// SPDX-License-Identifier: GPL-2.0
/*
 * atk_kill_sibling: a tenant cannot have a sibling killed that uses less
 * than its guarantee.
 *
 * Under a shared parent max (/atk-ks-p max=100M on a 200M device, floor
 * 300 ms): S1 (root, min 50M, kill_on_ignore on, holds 30M, never answers
 * a ticket) and the tenant S2 (uid 65534) holding 70M.  S2 charges 10M
 * with timeout_ns = 1, then with a 1.5 s wait (past the floor): S2 fails
 * (ETIMEDOUT or EDQUOT), S1 is never killed and keeps its 30M; kills 0;
 * the parent's current stays 100M.
 */
#include "scen.h"
#include "tenant.h"

#define KEY2	"t-aks"
#define CP	"/atk-ks-p"
#define CS1	"/atk-ks-p/s1"
#define CS2	"/atk-ks-p/s2"
#define M	SC_MIB

static void check_used(const char *key, uint64_t want)
{
	uint64_t used = DEV_U64(key, "used");

	if (used != want)
		FAIL("%s used %llu, expected %llu", key,
		     (unsigned long long)used, (unsigned long long)want);
}

/* The ledger's rules: the module and nxquotad alike. */
FIXTURE(kill_sibling) {};

FIXTURE_VARIANT(kill_sibling) {};

FIXTURE_VARIANT_ADD(kill_sibling, module) {};

FIXTURE_VARIANT_ADD(kill_sibling, daemon) {};

FIXTURE_SETUP(kill_sibling)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY2, "200M"));
	TN_DEV_OPEN(KEY2);
	TN_FLOOR_MS(KEY2, 300);
	CHECK_OK(sc_cg_create(CP));
	CHECK_OK(sc_cg_create(CS1));
	CHECK_OK(sc_cg_create(CS2));
	CHECK_OK(sc_set_budget(KEY2, CP " max=100M"));
	CHECK_OK(sc_set_budget(KEY2, CS1 " max=100M min=50M"));
	CHECK_OK(sc_set_budget(KEY2, CS2 " max=100M"));
	CHECK_OK(sc_write(sc_node_path(KEY2, CG_ID(CS1), "kill_on_ignore"),
			  "1"));
}

FIXTURE_TEARDOWN(kill_sibling)
{
	CHECK_OK(sc_dev_unregister(KEY2));
	CHECK_OK(sc_cg_remove(CS1));
	CHECK_OK(sc_cg_remove(CS2));
	CHECK_OK(sc_cg_remove(CP));
}

TEST_F(kill_sibling, sibling_not_killed)
{
	struct sc_peer s1, s2;
	struct sc_rep x;

	tn_peer_start(&s1, "S1", CS1, KEY2, 0, 1, 0);
	PEER_OK(&s1, SC_PEER_CHARGE, 30 * M, 0);
	PEER_OK(&s1, TN_PEER_SERVE, TN_SERVE_IGNORE, 0);
	tn_peer_start(&s2, "S2", CS2, KEY2, 0, 1, 1);
	PEER_OK(&s2, SC_PEER_CHARGE, 70 * M, 0);
	x = PEER_CALL(&s2, SC_PEER_CHARGE, 10 * M, 1);
	usleep(100 * 1000);
	if (DEV_U64(KEY2, "kills"))
		FAIL("S2 (timeout_ns=1) had S1 killed, below its guarantee: "
		     "S2 got %s after %llu ms", sc_rcname(x.rc),
		     (unsigned long long)(x.v[1] / 1000000));
	sc_log("S2 10M timeout_ns=1 under the parent's max: %s",
	       sc_rcname(x.rc));
	if (x.rc != -ETIMEDOUT && x.rc != -EDQUOT)
		FAIL("S2's 10M under a full parent max (timeout 1 ns): "
		     "expected ETIMEDOUT or EDQUOT, got %s", sc_rcname(x.rc));
	x = PEER_CALL(&s2, SC_PEER_CHARGE, 10 * M, 1500ULL * 1000000);
	sc_log("S2 10M waiting 1.5 s: %s after %llu ms", sc_rcname(x.rc),
	       (unsigned long long)(x.v[1] / 1000000));
	if (x.rc != -ETIMEDOUT && x.rc != -EDQUOT)
		FAIL("S2's 10M under a full parent max (wait 1.5 s): "
		     "expected ETIMEDOUT or EDQUOT, got %s", sc_rcname(x.rc));
	usleep(500 * 1000);
	TN_ALIVE(&s1);
	CHECK_EQ(TN_PEER_CHARGE(&s1), 30 * M);
	CHECK_EQ(TN_PEER_CHARGE(&s2), 70 * M);
	CHECK_EQ(DEV_U64(KEY2, "kills"), 0);
	check_used(KEY2, 100 * M);
	CHECK_EQ(NODE_U64(KEY2, CG_ID(CP), "current"), 100 * M);
	PEER_STOP(&s2);
	PEER_STOP(&s1);
	check_used(KEY2, 0);
}

TEST_HARNESS_MAIN
