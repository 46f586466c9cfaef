// SPDX-License-Identifier: GPL-2.0
/*
 * atk_storm: refused charges in a loop do not become a ticket storm.
 *
 * B (tenant, no min) borrows 90M of a 100M device (floor 500 ms) and
 * answers every ticket releasing nothing; the attacker C (tenant, no min)
 * charges 20M in a loop for 2 s (no wait, and wait 1 ns, alternately):
 * every charge is refused, B is asked at most 20 times (asks for the same
 * shortfall are coalesced) and the device's ticket counter moves at most
 * 20; B keeps its 90M.
 */
#include "scen.h"
#include "tenant.h"

#define KEY2	"t-ast2"
#define CB	"/atk-st-b"
#define CC	"/atk-st-c"
#define M	SC_MIB

/* ---- the ticket storm ------------------------------------------------ */

static uint64_t *storm_tries, *storm_ok;

static int storm(void *arg)
{
	uint64_t id, end = sc_now_ms() + 2000;
	int fd, efd;
	long rc;

	(void)arg;
	tn_tenant(CC);
	fd = sc_open();
	if (fd < 0)
		FAIL("attacker C: open: %s", sc_errname(-fd));
	efd = sc_eventfd();
	CHECK_OK(sc_register(fd, KEY2, efd, 0, &id));
	while (sc_now_ms() < end) {
		rc = (*storm_tries & 1) ?
			sc_charge_wait(fd, id, 20 * M, 1, NULL) :
			sc_charge(fd, id, 20 * M, NULL);
		(*storm_tries)++;
		if (!rc)
			(*storm_ok)++;
	}
	return 0;
}

/* Tickets from refused charges: the module and nxquotad alike. */
FIXTURE(storm) {};

FIXTURE_VARIANT(storm) {};

FIXTURE_VARIANT_ADD(storm, module) {};

FIXTURE_VARIANT_ADD(storm, daemon) {};

FIXTURE_SETUP(storm)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY2, "100M"));
	TN_DEV_OPEN(KEY2);
	TN_FLOOR_MS(KEY2, 500);
	CHECK_OK(sc_cg_create(CB));
	CHECK_OK(sc_cg_create(CC));
}

FIXTURE_TEARDOWN(storm)
{
	CHECK_OK(sc_dev_unregister(KEY2));
	CHECK_OK(sc_cg_remove(CB));
	CHECK_OK(sc_cg_remove(CC));
}

TEST_F(storm, refused_charges_few_tickets)
{
	uint64_t tk0, tk1, *shm;
	struct sc_peer b;
	struct sc_rep s;
	pid_t pa;

	shm = sc_shared(4096);
	storm_tries = shm + 4;
	storm_ok = shm + 5;
	/* 3. the refused-charge loop */
	tn_peer_start(&b, "B", CB, KEY2, 0, 1, 1);
	PEER_OK(&b, SC_PEER_CHARGE, 90 * M, 0);
	PEER_OK(&b, SC_PEER_SERVE, SC_SERVE_ZERO, 0);
	tk0 = DEV_U64(KEY2, "tickets");
	pa = sc_spawn(storm, NULL);
	CHECK_CHILD_OK(pa);
	usleep(200 * 1000);	/* B answers what it got */
	s = PEER_OK(&b, SC_PEER_STATS, 0, 0);
	tk1 = DEV_U64(KEY2, "tickets");
	sc_log("%llu refused charges in 2 s (%llu granted): B answered "
	       "%llu tickets, eventfd counted %llu; device tickets +%llu",
	       (unsigned long long)*storm_tries,
	       (unsigned long long)*storm_ok, (unsigned long long)s.v[0],
	       (unsigned long long)s.v[5], (unsigned long long)(tk1 - tk0));
	CHECK_EQ(*storm_ok, 0);
	CHECK(*storm_tries > 100);
	if (s.v[0] > 20 || tk1 - tk0 > 20)
		FAIL("ticket storm: %llu refused charges in 2 s made B answer "
		     "%llu tickets (device tickets +%llu); at most 20 expected",
		     (unsigned long long)*storm_tries,
		     (unsigned long long)s.v[0],
		     (unsigned long long)(tk1 - tk0));
	CHECK_EQ(TN_PEER_CHARGE(&b), 90 * M);
	CHECK_EQ(DEV_U64(KEY2, "used"), 90 * M);
	PEER_STOP(&b);
	CHECK_EQ(DEV_U64(KEY2, "used"), 0);
}

TEST_HARNESS_MAIN
