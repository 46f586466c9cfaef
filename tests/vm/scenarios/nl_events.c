// SPDX-License-Identifier: GPL-2.0
/*
 * nl_events: a listener on the "events" multicast group sees, in order,
 * the device being registered, a budget changed through netlink and one
 * changed through sysfs (each with the device, the cgroup id, max and
 * min), and a charge refused over its max (the charge, EDQUOT, the
 * cgroup and the holder's pid), each with a timestamp that does not go
 * back; and, after unregistering, the device's removal.
 */
#include "scen.h"
#include "nl_genl.h"

#define KEY	"t-nle"
#define CG	"/nle"

/* The next event on the listener, or FAIL after 5 s. */
static void next_event(int fd, struct nl_event *e)
{
	if (!nl_event_recv(fd, e, 5000))
		FAIL("no event within 5 s (is the ledger's event hook "
		     "wired to nxq_nl_event?)");
}

/* Skip events of other types (a budget set may also report min). */
static void expect(int fd, uint32_t type, struct nl_event *e)
{
	int i;

	for (i = 0; i < 8; i++) {
		next_event(fd, e);
		if (e->type == type)
			return;
	}
	FAIL("no event of type %u among the next 8", type);
}

static int c2p[2];

static int charger(void *arg)
{
	uint64_t h = 0, c = 0;
	int fd;

	(void)arg;
	CHECK_OK(sc_cg_enter(CG));
	fd = sc_open();
	CHECK(fd >= 0);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &h));
	CHECK_ERR(sc_charge(fd, h, 600 * SC_KIB, &c), EDQUOT);
	CHECK_OK(sc_send(c2p[1], 1));
	return 0;
}

/* The kernel's generic netlink socket: the module only (sc_module_only[]).
 * The device's registration and removal are events the test must see
 * (the listener joins first): only the cgroup is the fixture's. */
FIXTURE(nl_events) {};

FIXTURE_VARIANT(nl_events) {};

FIXTURE_VARIANT_ADD(nl_events, module) {};

FIXTURE_SETUP(nl_events)
{
	CHECK_OK(sc_cg_create(CG));
}

FIXTURE_TEARDOWN(nl_events)
{
	CHECK_OK(sc_cg_remove(CG));
}

TEST_F(nl_events, device_budget_denied_events)
{
	struct nl_msg m;
	uint64_t cg;
	struct nl_event e;
	int fd, lis;
	pid_t pid;

	fd = NL_OPEN();
	lis = NL_OPEN();
	CHECK(nl_events_grp != 0);
	if (setsockopt(lis, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
		       &nl_events_grp, sizeof(nl_events_grp)) < 0)
		FAIL("join the events group: %s", sc_errname(errno));

	CHECK_OK(sc_dev_register_open(KEY, "1M"));
	expect(lis, NXQUOTA_EVENT_TYPE_DEVICE_ADDED, &e);
	CHECK_STREQ(e.device, KEY);
	CHECK_EQ(e.bytes, SC_MIB);

	cg = CG_ID(CG);
	nl_init(&m, nl_family_id, 0, NXQUOTA_CMD_BUDGET_SET);
	nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
	nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH, CG);
	nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX, 512 * SC_KIB);
	CHECK_OK(nl_talk(fd, &m, NULL, NULL, NULL));
	expect(lis, NXQUOTA_EVENT_TYPE_BUDGET_CHANGED, &e);
	while (e.cgroup != cg)	/* the root's node may be created first */
		expect(lis, NXQUOTA_EVENT_TYPE_BUDGET_CHANGED, &e);
	CHECK_STREQ(e.device, KEY);
	CHECK_EQ(e.bytes, 512 * SC_KIB);
	CHECK_EQ(e.value, 0);

	CHECK_OK(sc_set_budget(KEY, CG " min=128K"));
	expect(lis, NXQUOTA_EVENT_TYPE_BUDGET_CHANGED, &e);
	CHECK_EQ(e.cgroup, cg);
	CHECK_EQ(e.bytes, 512 * SC_KIB);
	CHECK_EQ(e.value, 128 * SC_KIB);

	CHECK(pipe(c2p) == 0);
	pid = sc_spawn(charger, NULL);
	RECV(c2p[0]);
	expect(lis, NXQUOTA_EVENT_TYPE_DENIED, &e);
	CHECK_STREQ(e.device, KEY);
	CHECK_EQ(e.cgroup, cg);
	CHECK_EQ(e.bytes, 600 * SC_KIB);
	CHECK_EQ(e.reason, EDQUOT);
	CHECK_EQ(e.value, cg);		/* the node that refused: its max */
	CHECK_EQ(e.pid, pid);
	CHECK_CHILD_OK(pid);

	CHECK_OK(sc_dev_unregister(KEY));
	expect(lis, NXQUOTA_EVENT_TYPE_DEVICE_REMOVED, &e);
	CHECK_STREQ(e.device, KEY);
	close(lis);
	close(fd);
}

TEST_HARNESS_MAIN
