// SPDX-License-Identifier: GPL-2.0
/*
 * atk_waiters: a tenant's waiting charges are bounded by its cgroup's
 * waiters_max.  The attacker (uid 65534, /atk-st-a, max 10M, already at its
 * max) starts 100 waiting charges of 1M, one thread and one holder each:
 * with the default waiters_max (64), 64 wait and 36 fail with EAGAIN at
 * once; killing the attacker leaves no waiter and nothing charged.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-awa"
#define CA	"/atk-wa-a"
#define M	SC_MIB

/* waiters_max is the ledger's rule: the module and nxquotad alike. */
FIXTURE(waiters) {};

FIXTURE_VARIANT(waiters) {};

FIXTURE_VARIANT_ADD(waiters, module) {};

FIXTURE_VARIANT_ADD(waiters, daemon) {};

FIXTURE_SETUP(waiters)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "1G"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(CA));
	CHECK_OK(sc_set_budget(KEY, CA " max=10M"));
}

FIXTURE_TEARDOWN(waiters)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CA));
}

TEST_F(waiters, default_waiters_max)
{
	struct tn_waiters *ws;
	pid_t pa;

	ws = sc_shared(sizeof(*ws));
	ws->key = KEY;
	ws->cg = CA;
	ws->n = 100;

	/* 1. default waiters_max */
	pa = sc_spawn(tn_waiters_attacker, ws);
	WAIT_U64(sc_dev_path(KEY, "used"), 10 * M);
	{
		uint64_t end = sc_now_ms() + 20000;

		/* until every charge waits or has returned */
		while (sc_now_ms() < end &&
		       (ws->started < 100 || DEV_U64(KEY, "waiters") +
			ws->eagain + ws->other < 100))
			usleep(10000);
		usleep(100 * 1000);
	}
	sc_log("100 waiting charges, default limits: %d EAGAIN, %d "
	       "other returns, waiters %llu", ws->eagain, ws->other,
	       (unsigned long long)DEV_U64(KEY, "waiters"));
	if (ws->eagain != 36 || DEV_U64(KEY, "waiters") != 64)
		FAIL("100 waiting charges with the default waiters_max (64): "
		     "%d EAGAIN (expected 36), %llu waiting (expected 64)",
		     ws->eagain, (unsigned long long)DEV_U64(KEY, "waiters"));
	CHECK_EQ(ws->other, 0);
	tn_kill(pa);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 0);
	WAIT_U64(sc_dev_path(KEY, "used"), 0);
	/* nxquotad ends a killed process's holders when it sees the exit */
	WAIT_U64(sc_dev_path(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN
