// SPDX-License-Identifier: GPL-2.0
/*
 * atk_kill_aim: a tenant cannot aim the kill policy at a neighbour.
 *
 * Device of 100M, ticket_timeout_ms (the floor of every ticket deadline)
 * 1000 ms.  R, a root process in /atk-ka-r whose node has kill_on_ignore
 * on, holds 90M and answers every ticket after 50 ms, releasing what is
 * asked.  T is uid 65534 in /atk-ka-t.
 *  1. T has no guarantee and charges 40M with NXQ_CHARGE_WAIT and
 *     timeout_ns = 1: it fails (ETIMEDOUT or ENOSPC); R's ticket, if any,
 *     is due no sooner than the floor and is an ASK; R answers, is not
 *     killed; kills stay 0.
 *  2. T gets min = 60M (its guarantee is called back from R) and asks
 *     again with timeout_ns = 1: still nobody killed, since R answers
 *     within the floor (50 ms < 1000 ms).
 * Afterwards every counter equals what the holders hold.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-aka"
#define CR	"/atk-ka-r"
#define CT	"/atk-ka-t"
#define M	SC_MIB
#define FLOOR_MS 1000

static void check_used(const char *key, uint64_t want)
{
	uint64_t used = DEV_U64(key, "used");

	if (used != want)
		FAIL("%s used %llu, expected %llu", key,
		     (unsigned long long)used, (unsigned long long)want);
}

/* The kill policy's floor: the module and nxquotad alike. */
FIXTURE(kill_aim) {
	uint64_t rid;
};

FIXTURE_VARIANT(kill_aim) {};

FIXTURE_VARIANT_ADD(kill_aim, module) {};

FIXTURE_VARIANT_ADD(kill_aim, daemon) {};

FIXTURE_SETUP(kill_aim)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	TN_FLOOR_MS(KEY, FLOOR_MS);
	CHECK_OK(sc_cg_create(CR));
	CHECK_OK(sc_cg_create(CT));
	self->rid = CG_ID(CR);
	CHECK_OK(sc_set_budget(KEY, CR " max=100M"));
	CHECK_OK(sc_set_budget(KEY, CT " max=100M"));
	CHECK_OK(sc_write(sc_node_path(KEY, self->rid, "kill_on_ignore"), "1"));
}

FIXTURE_TEARDOWN(kill_aim)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CR));
	CHECK_OK(sc_cg_remove(CT));
}

TEST_F(kill_aim, no_kill_by_a_short_wait)
{
	struct sc_peer r, t;
	struct sc_rep x, st;
	uint64_t t0, rc_charge, tc, released1;

	tn_peer_start(&r, "R", CR, KEY, 0, 1, 0);
	PEER_OK(&r, SC_PEER_CHARGE, 90 * M, 0);
	PEER_OK(&r, TN_PEER_SERVE, TN_SERVE_DELAY, 50);
	tn_peer_start(&t, "T", CT, KEY, 0, 1, 1);

	/* 1. No guarantee, timeout_ns = 1. */
	t0 = sc_now_ns();
	x = PEER_CALL(&t, SC_PEER_CHARGE, 40 * M, 1);
	usleep(100 * 1000);
	if (DEV_U64(KEY, "kills"))
		FAIL("T (no guarantee, timeout_ns=1) had R killed: T got %s "
		     "after %llu ms, kills %llu", sc_rcname(x.rc),
		     (unsigned long long)(x.v[1] / 1000000),
		     (unsigned long long)DEV_U64(KEY, "kills"));
	TN_ALIVE(&r);
	if (x.rc != -ETIMEDOUT && x.rc != -ENOSPC)
		FAIL("T (no guarantee) waiting 1 ns for 40M: expected "
		     "ETIMEDOUT or ENOSPC, got %s after %llu ms",
		     sc_rcname(x.rc), (unsigned long long)(x.v[1] / 1000000));
	sc_log("1. T, no guarantee, timeout_ns=1: %s after %llu us",
	       sc_rcname(x.rc), (unsigned long long)(x.v[1] / 1000));
	CHECK_EQ(x.v[0], 0);
	/* Past the floor and then some: R answered, nobody killed. */
	usleep((FLOOR_MS + 500) * 1000);
	TN_ALIVE(&r);
	CHECK_EQ(DEV_U64(KEY, "kills"), 0);
	st = PEER_OK(&r, SC_PEER_STATS, 0, 0);
	sc_log("1. R answered %llu tickets, released %llu bytes, last level %llu",
	       (unsigned long long)st.v[0], (unsigned long long)st.v[1],
	       (unsigned long long)(st.v[4] & 0xff));
	if (st.v[0] && (st.v[4] & 0xff) != NXQ_TICKET_LEVEL_ASK)
		FAIL("R's ticket for a tenant without a guarantee has level "
		     "%llu, expected ASK", (unsigned long long)(st.v[4] & 0xff));
	rc_charge = TN_PEER_CHARGE(&r);
	CHECK_EQ(rc_charge, 90 * M - st.v[1]);
	tc = PEER_OK(&t, SC_PEER_STATUS, 0, 0).v[0];
	CHECK_EQ(tc, 0);
	check_used(KEY, rc_charge);
	(void)t0;

	/* R takes back what it gave. */
	if (rc_charge < 90 * M)
		PEER_OK(&r, SC_PEER_CHARGE, 90 * M - rc_charge, 0);
	check_used(KEY, 90 * M);

	/* 2. T with a guarantee: the call-back is RECALL, still timeout 1 ns. */
	st = PEER_OK(&r, SC_PEER_STATS, 0, 0);
	released1 = st.v[1];
	CHECK_OK(sc_set_budget(KEY, CT " max=100M min=60M"));
	x = PEER_CALL(&t, SC_PEER_CHARGE, 40 * M, 1);
	usleep(100 * 1000);
	if (DEV_U64(KEY, "kills"))
		FAIL("T (min 60M, timeout_ns=1) had R killed though R answers "
		     "in 50 ms: T got %s after %llu ms", sc_rcname(x.rc),
		     (unsigned long long)(x.v[1] / 1000000));
	sc_log("2. T, min 60M, timeout_ns=1: %s after %llu us",
	       sc_rcname(x.rc), (unsigned long long)(x.v[1] / 1000));
	if (x.rc != -ETIMEDOUT && x.rc != -ENOSPC && x.rc != 0)
		FAIL("T (min 60M) waiting 1 ns for 40M: got %s",
		     sc_rcname(x.rc));
	usleep((FLOOR_MS + 500) * 1000);
	TN_ALIVE(&r);
	CHECK_EQ(DEV_U64(KEY, "kills"), 0);
	CHECK_EQ(NODE_U64(KEY, self->rid, "kills"), 0);
	st = PEER_OK(&r, SC_PEER_STATS, 0, 0);
	rc_charge = TN_PEER_CHARGE(&r);
	CHECK_EQ(rc_charge, 90 * M - (st.v[1] - released1));
	tc = PEER_OK(&t, SC_PEER_STATUS, 0, 0).v[0];
	check_used(KEY, rc_charge + tc);
	sc_log("2. R alive with %llu M, T holds %llu M, kills 0",
	       (unsigned long long)(rc_charge / M),
	       (unsigned long long)(tc / M));
	PEER_STOP(&t);
	PEER_STOP(&r);
	check_used(KEY, 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN
