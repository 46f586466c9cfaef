// SPDX-License-Identifier: GPL-2.0
/*
 * nl_perm: a process without capabilities (uid 65534, in cgroup /nlp-a)
 * is refused every netlink change (EPERM) and the events group, and its
 * dumps show every device but only its own subtree: the node /nlp-a and
 * its own holder, never /nlp-b's node, holder or pid, nor the root's
 * node.  Root sees all of it.  Nothing changed in sysfs.
 */
#include "scen.h"
#include "nl_genl.h"

#define KEY	"t-nlp"
#define CG_A	"/nlp-a"
#define CG_B	"/nlp-b"

struct view {
	int nodes, holders, devices;
	uint64_t node_ids[8];
	uint32_t pids[8];
	uint64_t holder_cg[8];
};

static int node_cb(struct nlattr **tb, void *arg)
{
	struct view *v = arg;

	CHECK(tb[NXQUOTA_A_BUDGET_CGROUP_ID]);
	if (v->nodes < 8)
		v->node_ids[v->nodes] = nl_u64(tb[NXQUOTA_A_BUDGET_CGROUP_ID]);
	v->nodes++;
	return 0;
}

static int holder_cb(struct nlattr **tb, void *arg)
{
	struct view *v = arg;

	CHECK(tb[NXQUOTA_A_HOLDER_PID] && tb[NXQUOTA_A_HOLDER_CGROUP_ID]);
	if (v->holders < 8) {
		v->pids[v->holders] = nl_u32(tb[NXQUOTA_A_HOLDER_PID]);
		v->holder_cg[v->holders] =
			nl_u64(tb[NXQUOTA_A_HOLDER_CGROUP_ID]);
	}
	v->holders++;
	return 0;
}

static int device_cb(struct nlattr **tb, void *arg)
{
	struct view *v = arg;

	if (tb[NXQUOTA_A_DEVICE_KEY] &&
	    !strcmp(nl_str(tb[NXQUOTA_A_DEVICE_KEY]), KEY))
		v->devices++;
	return 0;
}

static void look(int fd, struct view *v)
{
	struct nl_msg m;

	memset(v, 0, sizeof(*v));
	nl_init(&m, nl_family_id, NLM_F_DUMP, NXQUOTA_CMD_BUDGET_GET);
	nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
	CHECK_OK(nl_talk(fd, &m, node_cb, v, NULL));
	nl_init(&m, nl_family_id, NLM_F_DUMP, NXQUOTA_CMD_HOLDER_GET);
	CHECK_OK(nl_talk(fd, &m, holder_cb, v, NULL));
	nl_init(&m, nl_family_id, NLM_F_DUMP, NXQUOTA_CMD_DEVICE_GET);
	CHECK_OK(nl_talk(fd, &m, device_cb, v, NULL));
}

static int try_cmd(int fd, uint8_t cmd)
{
	struct nl_msg m;

	nl_init(&m, nl_family_id, 0, cmd);
	switch (cmd) {
	case NXQUOTA_CMD_DEVICE_ADD:
	case NXQUOTA_CMD_DEVICE_SET:
		nl_put_str(&m, NXQUOTA_A_DEVICE_KEY,
			   cmd == NXQUOTA_CMD_DEVICE_ADD ? "t-evil" : KEY);
		nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY, 1);
		break;
	case NXQUOTA_CMD_DEVICE_DEL:
		nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, KEY);
		break;
	default:
		nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
		nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH, CG_A);
		if (cmd == NXQUOTA_CMD_BUDGET_SET)
			nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX, NXQ_UNLIMITED);
	}
	return nl_talk(fd, &m, NULL, NULL, NULL);
}

static int p2c[2], c2p[2];

static int holder_b(void *arg)
{
	uint64_t h = 0, c = 0;
	int fd;

	(void)arg;
	CHECK_OK(sc_cg_enter(CG_B));
	fd = sc_open();
	CHECK(fd >= 0);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &h));
	CHECK_OK(sc_charge(fd, h, 100 * SC_KIB, &c));
	CHECK_OK(sc_send(c2p[1], 1));
	RECV(p2c[0]);
	return 0;
}

static int nobody_a(void *arg)
{
	uint64_t a = (uintptr_t)arg, h = 0, c = 0;
	static const uint8_t cmds[] = {
		NXQUOTA_CMD_DEVICE_ADD, NXQUOTA_CMD_DEVICE_DEL,
		NXQUOTA_CMD_DEVICE_SET, NXQUOTA_CMD_BUDGET_SET,
		NXQUOTA_CMD_BUDGET_CLEAR,
	};
	struct view v;
	size_t i;
	int fd, nl;

	CHECK_OK(sc_cg_enter(CG_A));
	sc_drop_to_nobody();
	fd = sc_open();
	CHECK(fd >= 0);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &h));
	CHECK_OK(sc_charge(fd, h, 50 * SC_KIB, &c));

	nl = NL_OPEN();
	for (i = 0; i < sizeof(cmds); i++)
		CHECK_ERR(try_cmd(nl, cmds[i]), EPERM);
	CHECK(nl_events_grp != 0);
	if (setsockopt(nl, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
		       &nl_events_grp, sizeof(nl_events_grp)) == 0)
		FAIL("nobody joined the events group");
	CHECK_EQ(errno, EPERM);

	look(nl, &v);
	CHECK_EQ(v.devices, 1);
	CHECK_EQ(v.nodes, 1);
	CHECK_EQ(v.node_ids[0], a);
	CHECK_EQ(v.holders, 1);
	CHECK_EQ(v.pids[0], getpid());
	CHECK_EQ(v.holder_cg[0], a);
	CHECK_OK(sc_send(c2p[1], 1));
	RECV(p2c[0]);
	return 0;
}

/* Permissions on the kernel's generic netlink socket: the module only (sc_module_only[]). */
FIXTURE(perm) {
	uint64_t a;
	uint64_t b;
};

FIXTURE_VARIANT(perm) {};

FIXTURE_VARIANT_ADD(perm, module) {};

FIXTURE_SETUP(perm)
{
	CHECK_OK(sc_dev_register_open(KEY, "4M"));
	CHECK_OK(sc_cg_create(CG_A));
	CHECK_OK(sc_cg_create(CG_B));
	self->a = CG_ID(CG_A);
	self->b = CG_ID(CG_B);
	CHECK_OK(sc_set_budget(KEY, CG_A " max=1M"));
	CHECK_OK(sc_set_budget(KEY, CG_B " max=2M min=1M"));
	CHECK(pipe(p2c) == 0 && pipe(c2p) == 0);
}

FIXTURE_TEARDOWN(perm)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CG_A));
	CHECK_OK(sc_cg_remove(CG_B));
}

TEST_F(perm, nobody_refused_and_scoped)
{
	uint64_t a = self->a, b = self->b;
	char before[64], after[64];
	pid_t pb, pa;

	struct view v;
	int fd, i, found;

	pb = sc_spawn(holder_b, NULL);
	RECV(c2p[0]);
	CHECK(sc_read(sc_node_path(KEY, a, "max"), before, sizeof(before)) > 0);
	pa = sc_spawn(nobody_a, (void *)(uintptr_t)a);
	RECV(c2p[0]);
	CHECK(sc_read(sc_node_path(KEY, a, "max"), after, sizeof(after)) > 0);
	CHECK_STREQ(before, after);
	CHECK(sc_dev_exists(KEY) && !sc_dev_exists("t-evil"));
	CHECK_EQ(DEV_U64(KEY, "capacity"), 4 * SC_MIB);

	/* Root sees everything: three nodes, both holders, both pids. */
	fd = NL_OPEN();
	look(fd, &v);
	CHECK_EQ(v.nodes, 3);
	CHECK_EQ(v.holders, 2);
	for (i = found = 0; i < 2; i++)
		found |= (v.pids[i] == (uint32_t)pa && v.holder_cg[i] == a) |
			 (v.pids[i] == (uint32_t)pb && v.holder_cg[i] == b) << 1;
	CHECK_EQ(found, 3);
	sc_log("nobody: EPERM on 5 commands and the events group; saw 1 node, 1 holder; root saw 3 and 2");

	CHECK_OK(sc_send(p2c[1], 1));
	CHECK_OK(sc_send(p2c[1], 1));
	CHECK_CHILD_OK(pa);
	CHECK_CHILD_OK(pb);
	close(fd);
}

TEST_HARNESS_MAIN
