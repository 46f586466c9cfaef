// SPDX-License-Identifier: GPL-2.0
/*
 * nl_budget: sysfs and generic netlink are two views of one ledger.  A
 * device registered, resized and unregistered through netlink shows (and
 * goes) in sysfs; budgets set and cleared through netlink read back
 * identically through sysfs; every number of the device, budget-node and
 * holder dumps equals its sysfs file (or NXQ_IOC_STATUS) while a holder
 * is charged; the holder dump names the holder's pid and cgroup.
 */
#include "scen.h"
#include "nl_genl.h"

#define KEY	"t-nl"
#define CG_A	"/nl-a"
#define CG_B	"/nl-a/b"

static int nl_budget_set(int fd, const char *cg, int has_max, uint64_t max,
			 int has_min, uint64_t min)
{
	struct nl_msg m;

	nl_init(&m, nl_family_id, 0, NXQUOTA_CMD_BUDGET_SET);
	nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
	nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH, cg);
	if (has_max)
		nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX, max);
	if (has_min)
		nl_put_u64(&m, NXQUOTA_A_BUDGET_MIN, min);
	return nl_talk(fd, &m, NULL, NULL, NULL);
}

static int nl_dev(int fd, uint8_t cmd, const char *key, int has_cap,
		  uint64_t cap)
{
	struct nl_msg m;

	nl_init(&m, nl_family_id, 0, cmd);
	nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, key);
	if (has_cap)
		nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY, cap);
	return nl_talk(fd, &m, NULL, NULL, NULL);
}

struct seen {
	int nodes, devices, holders;
	uint64_t cg_b;
	pid_t pid;
};

#define ATTR_EQ(tb, a, want) do {					\
	if (!(tb)[a])							\
		FAIL("attribute %s missing", #a);			\
	CHECK_EQ(nl_u64((tb)[a]), want);				\
} while (0)

#define ATTR32_EQ(tb, a, want) do {					\
	if (!(tb)[a])							\
		FAIL("attribute %s missing", #a);			\
	CHECK_EQ(nl_u32((tb)[a]), want);				\
} while (0)

static int budget_cb(struct nlattr **tb, void *arg)
{
	struct seen *s = arg;
	char path[256];
	uint64_t id;

	CHECK(tb[NXQUOTA_A_BUDGET_DEVICE] && tb[NXQUOTA_A_BUDGET_CGROUP_ID]);
	CHECK_STREQ(nl_str(tb[NXQUOTA_A_BUDGET_DEVICE]), KEY);
	id = nl_u64(tb[NXQUOTA_A_BUDGET_CGROUP_ID]);
	if (!sc_node_exists(KEY, id))
		FAIL("netlink shows node %" PRIu64 ", sysfs does not", id);
	/* A max of its own only; sysfs reads "max" for none. */
	if (tb[NXQUOTA_A_BUDGET_MAX])
		ATTR_EQ(tb, NXQUOTA_A_BUDGET_MAX, NODE_U64(KEY, id, "max"));
	else
		CHECK_EQ(NODE_U64(KEY, id, "max"), UINT64_MAX);
	ATTR_EQ(tb, NXQUOTA_A_BUDGET_EFFECTIVE_MAX,
		NODE_U64(KEY, id, "effective_max"));
	ATTR_EQ(tb, NXQUOTA_A_BUDGET_CLAIMED, NODE_U64(KEY, id, "claimed"));
	ATTR_EQ(tb, NXQUOTA_A_BUDGET_MIN, NODE_U64(KEY, id, "min"));
	ATTR_EQ(tb, NXQUOTA_A_BUDGET_EFFECTIVE_MIN,
		NODE_U64(KEY, id, "effective_min"));
	ATTR_EQ(tb, NXQUOTA_A_BUDGET_CURRENT, NODE_U64(KEY, id, "current"));
	ATTR_EQ(tb, NXQUOTA_A_BUDGET_BORROWED, NODE_U64(KEY, id, "borrowed"));
	ATTR_EQ(tb, NXQUOTA_A_BUDGET_MAX_HITS, NODE_U64(KEY, id, "max_hits"));
	ATTR_EQ(tb, NXQUOTA_A_BUDGET_DENIALS, NODE_U64(KEY, id, "denials"));
	ATTR32_EQ(tb, NXQUOTA_A_BUDGET_HOLDERS, NODE_U64(KEY, id, "holders"));
	CHECK(tb[NXQUOTA_A_BUDGET_CGROUP_PATH]);
	CHECK(sc_read(sc_node_path(KEY, id, "path"), path, sizeof(path)) > 0);
	CHECK_STREQ(nl_str(tb[NXQUOTA_A_BUDGET_CGROUP_PATH]), path);
	/* The root has no parent; every other node names one that exists. */
	if (id == CG_ID("/"))
		CHECK(!tb[NXQUOTA_A_BUDGET_PARENT_ID]);
	else
		CHECK(tb[NXQUOTA_A_BUDGET_PARENT_ID] &&
		      sc_node_exists(KEY, nl_u64(tb[NXQUOTA_A_BUDGET_PARENT_ID])));
	s->nodes++;
	return 0;
}

static int device_cb(struct nlattr **tb, void *arg)
{
	struct seen *s = arg;
	const char *key;

	CHECK(tb[NXQUOTA_A_DEVICE_KEY]);
	key = nl_str(tb[NXQUOTA_A_DEVICE_KEY]);
	if (!sc_dev_exists(key))
		FAIL("netlink shows device %s, sysfs does not", key);
	ATTR_EQ(tb, NXQUOTA_A_DEVICE_CAPACITY, DEV_U64(key, "capacity"));
	ATTR_EQ(tb, NXQUOTA_A_DEVICE_USED, DEV_U64(key, "used"));
	ATTR_EQ(tb, NXQUOTA_A_DEVICE_DENIALS, DEV_U64(key, "denials"));
	ATTR_EQ(tb, NXQUOTA_A_DEVICE_CAPACITY_HITS,
		DEV_U64(key, "capacity_hits"));
	ATTR32_EQ(tb, NXQUOTA_A_DEVICE_HOLDERS, DEV_U64(key, "holders"));
	s->devices++;
	return 0;
}

static int holder_cb(struct nlattr **tb, void *arg)
{
	struct seen *s = arg;

	CHECK_STREQ(nl_str(tb[NXQUOTA_A_HOLDER_DEVICE]), KEY);
	ATTR_EQ(tb, NXQUOTA_A_HOLDER_CGROUP_ID, s->cg_b);
	ATTR32_EQ(tb, NXQUOTA_A_HOLDER_PID, s->pid);
	ATTR32_EQ(tb, NXQUOTA_A_HOLDER_PRIORITY, 7);
	ATTR_EQ(tb, NXQUOTA_A_HOLDER_CHARGE, 300 * SC_KIB);
	ATTR_EQ(tb, NXQUOTA_A_HOLDER_RECLAIMABLE, 100 * SC_KIB);
	CHECK(tb[NXQUOTA_A_HOLDER_TICKET_OPEN]);
	s->holders++;
	return 0;
}

static int dump(int fd, uint8_t cmd, uint16_t filter, nl_cb cb,
		struct seen *s)
{
	struct nl_msg m;

	nl_init(&m, nl_family_id, NLM_F_DUMP, cmd);
	if (filter)
		nl_put_str(&m, filter, KEY);
	return nl_talk(fd, &m, cb, s, NULL);
}

static int count_dirs(const char *dir)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int p2c[2], c2p[2];

static int holder(void *arg)
{
	uint64_t h = 0, c = 0;
	int fd;

	(void)arg;
	CHECK_OK(sc_cg_enter(CG_B));
	fd = sc_open();
	CHECK(fd >= 0);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 7, &h));
	CHECK_OK(sc_charge(fd, h, 300 * SC_KIB, &c));
	CHECK_ERR(sc_charge(fd, h, 300 * SC_KIB, &c), EDQUOT);
	CHECK_OK(sc_set_reclaimable(fd, h, 100 * SC_KIB));
	CHECK_OK(sc_send(c2p[1], 1));
	RECV(p2c[0]);
	return 0;
}

/* The kernel's generic netlink socket: the module only (sc_module_only[]).
 * Adding and deleting the device over netlink is what the test checks:
 * only the cgroups are the fixture's. */
FIXTURE(nl_budget) {};

FIXTURE_VARIANT(nl_budget) {};

FIXTURE_VARIANT_ADD(nl_budget, module) {};

FIXTURE_SETUP(nl_budget)
{
	CHECK_OK(sc_cg_create(CG_A));
	CHECK_OK(sc_cg_create(CG_B));
}

FIXTURE_TEARDOWN(nl_budget)
{
	CHECK_OK(sc_cg_remove(CG_B));
	CHECK_OK(sc_cg_remove(CG_A));
}

TEST_F(nl_budget, devices_budgets_dumps)
{
	struct seen s = { 0 };
	uint64_t a, b;
	pid_t pid;
	int fd, n;

	fd = NL_OPEN();

	CHECK_OK(nl_dev(fd, NXQUOTA_CMD_DEVICE_ADD, KEY, 1, SC_MIB));
	nl_track_key(KEY);
	CHECK_EQ(DEV_U64(KEY, "capacity"), SC_MIB);
	CHECK_ERR(nl_dev(fd, NXQUOTA_CMD_DEVICE_ADD, KEY, 1, SC_MIB), EEXIST);
	CHECK_OK(nl_dev(fd, NXQUOTA_CMD_DEVICE_SET, KEY, 1, 2 * SC_MIB));
	CHECK_EQ(DEV_U64(KEY, "capacity"), 2 * SC_MIB);

	a = CG_ID(CG_A);
	b = CG_ID(CG_B);
	CHECK_OK(nl_budget_set(fd, CG_A, 1, 768 * SC_KIB, 1, 128 * SC_KIB));
	CHECK_OK(nl_budget_set(fd, CG_B, 1, 512 * SC_KIB, 0, 0));
	/* its holder registers with priority 7 */
	CHECK_OK(sc_set_budget(KEY, CG_B " priority_max=7"));
	CHECK_EQ(NODE_U64(KEY, a, "max"), 768 * SC_KIB);
	CHECK_EQ(NODE_U64(KEY, a, "min"), 128 * SC_KIB);
	CHECK_EQ(NODE_U64(KEY, b, "max"), 512 * SC_KIB);
	CHECK_EQ(NODE_U64(KEY, b, "min"), 0);
	/* Only min: max stays. */
	CHECK_OK(nl_budget_set(fd, CG_B, 0, 0, 1, 64 * SC_KIB));
	CHECK_EQ(NODE_U64(KEY, b, "max"), 512 * SC_KIB);
	CHECK_EQ(NODE_U64(KEY, b, "min"), 64 * SC_KIB);

	CHECK(pipe(p2c) == 0 && pipe(c2p) == 0);
	pid = sc_spawn(holder, NULL);
	RECV(c2p[0]);

	n = dump(fd, NXQUOTA_CMD_BUDGET_GET, NXQUOTA_A_BUDGET_DEVICE,
		 budget_cb, &s);
	CHECK_OK(n);
	CHECK_EQ(s.nodes, count_dirs(sc_dev_path(KEY, "nodes")));
	CHECK_EQ(s.nodes, 3);	/* /, /nl-a, /nl-a/b */
	CHECK_EQ(NODE_U64(KEY, b, "current"), 300 * SC_KIB);
	CHECK_EQ(NODE_U64(KEY, b, "denials"), 1);
	CHECK_OK(dump(fd, NXQUOTA_CMD_DEVICE_GET, 0, device_cb, &s));
	CHECK(s.devices >= 1);
	CHECK_EQ(s.devices, count_dirs(SC_DEVICES) - 2); /* register, unregister */
	s.cg_b = b;
	s.pid = pid;
	CHECK_OK(dump(fd, NXQUOTA_CMD_HOLDER_GET, NXQUOTA_A_HOLDER_DEVICE,
		      holder_cb, &s));
	CHECK_EQ(s.holders, 1);
	sc_log("dumps: %d nodes, %d devices, %d holder(s) match sysfs",
	       s.nodes, s.devices, s.holders);

	/* A dump filtered on a device that does not exist is refused. */
	{
		struct nl_msg m;

		nl_init(&m, nl_family_id, NLM_F_DUMP, NXQUOTA_CMD_BUDGET_GET);
		nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, "t-nl-none");
		CHECK_ERR(nl_talk(fd, &m, NULL, NULL, NULL), ENODEV);
	}

	CHECK_OK(nl_budget_set(fd, CG_A, 1, NXQ_UNLIMITED, 0, 0));
	CHECK_EQ(NODE_U64(KEY, a, "max"), NXQ_UNLIMITED);
	CHECK_OK(sc_send(p2c[1], 1));
	CHECK_CHILD_OK(pid);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);

	/* Clear: b's budget goes, and with no holder its node too. */
	{
		struct nl_msg m;

		nl_init(&m, nl_family_id, 0, NXQUOTA_CMD_BUDGET_CLEAR);
		nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
		nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH, CG_B);
		CHECK_OK(nl_talk(fd, &m, NULL, NULL, NULL));
	}
	CHECK(!sc_node_exists(KEY, b));
	CHECK_EQ(NODE_U64(KEY, a, "min"), 128 * SC_KIB);

	CHECK_OK(nl_dev(fd, NXQUOTA_CMD_DEVICE_DEL, KEY, 0, 0));
	CHECK(!sc_dev_exists(KEY));
	CHECK_ERR(nl_dev(fd, NXQUOTA_CMD_DEVICE_DEL, KEY, 0, 0), ENODEV);
	CHECK_ERR(nl_budget_set(fd, CG_A, 1, SC_MIB, 0, 0), ENODEV);
	nl_untrack_key(KEY);
	close(fd);
}

TEST_HARNESS_MAIN
