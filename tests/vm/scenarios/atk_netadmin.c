// SPDX-License-Identifier: GPL-2.0
/*
 * atk_netadmin: CAP_NET_ADMIN alone (no CAP_SYS_ADMIN) administers
 * nothing over netlink -- the same rule as sysfs.
 *
 * A process of uid 65534 that kept only CAP_NET_ADMIN: DEVICE_ADD,
 * DEVICE_SET, DEVICE_DEL, BUDGET_SET and BUDGET_CLEAR all get EPERM, and
 * joining the events group is refused; the device, its capacity and the
 * budget of /atk-na are unchanged, no device "t-ana-evil" appears.  Its
 * sysfs writes are refused too.  Root (all capabilities) can do each.
 */
#include "scen.h"
#include "tenant.h"
#include "nl_genl.h"

#define KEY	"t-ana"
#define EVIL	"t-ana-evil"
#define CG	"/atk-na"
#define M	SC_MIB

static int try_cmd(int fd, uint8_t cmd)
{
	struct nl_msg m;

	nl_init(&m, nl_family_id, 0, cmd);
	switch (cmd) {
	case NXQUOTA_CMD_DEVICE_ADD:
		nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, EVIL);
		nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY, M);
		break;
	case NXQUOTA_CMD_DEVICE_SET:
		nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, KEY);
		nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY, SC_GIB);
		break;
	case NXQUOTA_CMD_DEVICE_DEL:
		nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, KEY);
		break;
	default:
		nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
		nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH, CG);
		if (cmd == NXQUOTA_CMD_BUDGET_SET)
			nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX, SC_GIB);
	}
	return nl_talk(fd, &m, NULL, NULL, NULL);
}

static const uint8_t cmds[] = {
	NXQUOTA_CMD_DEVICE_ADD, NXQUOTA_CMD_DEVICE_SET,
	NXQUOTA_CMD_BUDGET_SET, NXQUOTA_CMD_BUDGET_CLEAR,
	NXQUOTA_CMD_DEVICE_DEL,
};
static const char *const names[] = {
	"DEVICE_ADD", "DEVICE_SET", "BUDGET_SET", "BUDGET_CLEAR", "DEVICE_DEL",
};

static int netadmin(void *arg)
{
	size_t i;
	int fd, rc;

	(void)arg;
	CHECK_OK(sc_cg_enter(CG));
	tn_drop_keep_caps(1ULL << CAP_NET_ADMIN);
	fd = NL_OPEN();
	for (i = 0; i < sizeof(cmds); i++) {
		rc = try_cmd(fd, cmds[i]);
		if (rc != -EPERM)
			FAIL("uid 65534 with CAP_NET_ADMIN only: %s: %s "
			     "(expected EPERM; sysfs needs CAP_SYS_ADMIN)",
			     names[i], sc_rcname(rc));
	}
	CHECK(nl_events_grp != 0);
	if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
		       &nl_events_grp, sizeof(nl_events_grp)) == 0)
		FAIL("CAP_NET_ADMIN alone joined the events group");
	CHECK_EQ(errno, EPERM);
	CHECK_ERR(sc_write(sc_dev_path(KEY, "capacity"), "1G"), EACCES);
	CHECK_ERR2(sc_set_budget(KEY, CG " max=1G"), EACCES, EPERM);
	close(fd);
	return 0;
}

/* The kernel's netlink capability checks: the module only (sc_module_only[]). */
FIXTURE(netadmin) {};

FIXTURE_VARIANT(netadmin) {};

FIXTURE_VARIANT_ADD(netadmin, module) {};

FIXTURE_SETUP(netadmin)
{
	CHECK_OK(sc_dev_register(KEY, "100M"));
	CHECK_OK(sc_cg_create(CG));
	CHECK_OK(sc_set_budget(KEY, CG " max=10M"));
}

/* root's commands in the test unregistered KEY and registered EVIL */
FIXTURE_TEARDOWN(netadmin)
{
	CHECK_OK(sc_dev_unregister(EVIL));
	nl_untrack_key(EVIL);
	CHECK_OK(sc_cg_remove(CG));
}

TEST_F(netadmin, net_admin_alone_refused)
{
	size_t i;
	int fd;

	TN_RUN(netadmin, NULL);
	CHECK(sc_dev_exists(KEY));
	CHECK(!sc_dev_exists(EVIL));
	CHECK_EQ(DEV_U64(KEY, "capacity"), 100 * M);
	CHECK_EQ(NODE_U64(KEY, CG_ID(CG), "max"), 10 * M);
	sc_log("CAP_NET_ADMIN alone: EPERM on 5 commands and the events "
	       "group; nothing changed");

	/* root can */
	fd = NL_OPEN();
	nl_track_key(EVIL);
	for (i = 0; i < sizeof(cmds); i++) {
		int rc = try_cmd(fd, cmds[i]);

		if (rc < 0)
			FAIL("root: %s: %s", names[i], sc_errname(-rc));
	}
	nl_untrack_key(KEY);
	CHECK(!sc_dev_exists(KEY));
	CHECK(sc_dev_exists(EVIL));
	close(fd);
}

TEST_HARNESS_MAIN
