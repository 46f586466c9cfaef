// SPDX-License-Identifier: GPL-2.0
/*
 * max_budget: a process in a cgroup with a max charges up to it exactly and
 * is refused past it with EDQUOT; the device's capacity refuses with
 * ENOSPC.  A refusal changes no counter (holder charge, node current,
 * device used) except the denial counters, which count it once, in the
 * right place.
 */
#include "scen.h"

#define KEY	"t-max"
#define CG	"/nxq-max"

struct snap {
	uint64_t charge, current, used;
};

static struct snap snap(int fd, uint64_t h, uint64_t cgid)
{
	struct snap s = {
		.charge = HOLDER_CHARGE(fd, h),
		.current = NODE_U64(KEY, cgid, "current"),
		.used = DEV_U64(KEY, "used"),
	};
	return s;
}

#define CHECK_SAME(a, b) do {						\
	CHECK_EQ((a).charge, (b).charge);				\
	CHECK_EQ((a).current, (b).current);				\
	CHECK_EQ((a).used, (b).used);					\
} while (0)

/* A max and a capacity are the ledger's rules: both authorities. */
FIXTURE(max_budget) {
	uint64_t cgid;
};

FIXTURE_VARIANT(max_budget) {};

FIXTURE_VARIANT_ADD(max_budget, module) {};

FIXTURE_VARIANT_ADD(max_budget, daemon) {};

FIXTURE_SETUP(max_budget)
{
	CHECK_OK(sc_dev_register_open(KEY, "1G"));
	CHECK_EQ(DEV_U64(KEY, "capacity"), SC_GIB);
	CHECK_OK(sc_cg_create(CG));
	self->cgid = CG_ID(CG);
	CHECK_OK(sc_set_budget(KEY, CG " max=1M"));
	CHECK(sc_node_exists(KEY, self->cgid));
	CHECK_EQ(NODE_U64(KEY, self->cgid, "max"), SC_MIB);
	CHECK_EQ(NODE_U64(KEY, self->cgid, "current"), 0);
}

FIXTURE_TEARDOWN(max_budget)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK(!sc_dev_exists(KEY));
	CHECK_OK(sc_cg_remove(CG));
}

TEST_F(max_budget, charges_to_max_and_capacity)
{
	struct nxq_status st;
	struct snap before, after;
	uint64_t h = 0, h2 = 0, charged = 0;
	int fd, i;

	/* The holder is bound to the cgroup the process is in when it registers. */
	CHECK_OK(sc_cg_enter(CG));
	fd = sc_open();
	CHECK_OK(fd);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &h));
	CHECK_EQ(DEV_U64(KEY, "holders"), 1);
	CHECK_EQ(NODE_U64(KEY, self->cgid, "holders"), 1);
	CHECK_OK(sc_status(fd, h, &st));
	CHECK_EQ(st.cgroup_id, self->cgid);
	CHECK_EQ(st.node_max, SC_MIB);
	CHECK_EQ(st.node_current, 0);
	CHECK_EQ(st.device_capacity, SC_GIB);
	CHECK_EQ(st.device_used, 0);
	CHECK_EQ(st.headroom, SC_MIB);

	/* Up to the max exactly, in four steps. */
	for (i = 1; i <= 4; i++) {
		CHECK_OK(sc_charge(fd, h, 256 * SC_KIB, &charged));
		CHECK_EQ(charged, i * 256 * SC_KIB);
	}
	CHECK_OK(sc_status(fd, h, &st));
	CHECK_EQ(st.holder_charge, SC_MIB);
	CHECK_EQ(st.node_current, SC_MIB);
	CHECK_EQ(st.device_used, SC_MIB);
	CHECK_EQ(st.headroom, 0);
	CHECK_EQ(NODE_U64(KEY, self->cgid, "max_hits"), 0);
	CHECK_EQ(DEV_U64(KEY, "denials"), 0);

	/* One byte past it: EDQUOT, counted once, nothing else moves. */
	before = snap(fd, h, self->cgid);
	CHECK_ERR(sc_charge(fd, h, 1, &charged), EDQUOT);
	after = snap(fd, h, self->cgid);
	CHECK_SAME(before, after);
	CHECK_EQ(NODE_U64(KEY, self->cgid, "max_hits"), 1);
	CHECK_EQ(NODE_U64(KEY, self->cgid, "denials"), 1);
	CHECK_EQ(DEV_U64(KEY, "denials"), 1);
	CHECK_EQ(DEV_U64(KEY, "capacity_hits"), 0);

	/* A large refused charge is all-or-nothing too. */
	CHECK_ERR(sc_charge(fd, h, 512 * SC_MIB, &charged), EDQUOT);
	after = snap(fd, h, self->cgid);
	CHECK_SAME(before, after);
	CHECK_EQ(NODE_U64(KEY, self->cgid, "max_hits"), 2);

	/* The max is the cgroup's, shared by its holders. */
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &h2));
	CHECK_ERR(sc_charge(fd, h2, 1, &charged), EDQUOT);
	CHECK_EQ(HOLDER_CHARGE(fd, h2), 0);
	CHECK_OK(sc_uncharge(fd, h, 4096, &charged));
	CHECK_EQ(charged, SC_MIB - 4096);
	CHECK_OK(sc_charge(fd, h2, 4096, &charged));
	CHECK_EQ(charged, 4096);
	CHECK_ERR(sc_charge(fd, h, 1, &charged), EDQUOT);
	CHECK_EQ(NODE_U64(KEY, self->cgid, "current"), SC_MIB);
	CHECK_EQ(NODE_U64(KEY, self->cgid, "holders"), 2);
	CHECK_OK(sc_unregister(fd, h2));
	CHECK_EQ(NODE_U64(KEY, self->cgid, "current"), SC_MIB - 4096);
	CHECK_EQ(DEV_U64(KEY, "used"), SC_MIB - 4096);
	CHECK_EQ(NODE_U64(KEY, self->cgid, "holders"), 1);

	/* Raising the max lets it grow; lowering it below current takes nothing back. */
	CHECK_OK(sc_write(sc_node_path(KEY, self->cgid, "max"), "2M"));
	CHECK_EQ(NODE_U64(KEY, self->cgid, "max"), 2 * SC_MIB);
	CHECK_OK(sc_charge(fd, h, SC_MIB + 4096, &charged));
	CHECK_EQ(charged, 2 * SC_MIB);
	CHECK_OK(sc_write(sc_node_path(KEY, self->cgid, "max"), "512K"));
	CHECK_EQ(NODE_U64(KEY, self->cgid, "current"), 2 * SC_MIB);
	CHECK_EQ(HOLDER_CHARGE(fd, h), 2 * SC_MIB);
	CHECK_ERR(sc_charge(fd, h, 1, &charged), EDQUOT);
	CHECK_OK(sc_status(fd, h, &st));
	CHECK_EQ(st.headroom, 0);
	/* Uncharging is always allowed, even above max. */
	CHECK_OK(sc_uncharge(fd, h, SC_MIB, &charged));
	CHECK_EQ(charged, SC_MIB);
	CHECK_ERR(sc_charge(fd, h, 1, &charged), EDQUOT);

	/* Capacity: no max, a device just big enough -> ENOSPC past it. */
	CHECK_OK(sc_write(sc_node_path(KEY, self->cgid, "max"), "max"));
	CHECK_EQ(NODE_U64(KEY, self->cgid, "max"), NXQ_UNLIMITED);
	CHECK_OK(sc_status(fd, h, &st));
	CHECK_EQ(st.node_max, NXQ_UNLIMITED);
	CHECK_EQ(st.headroom, SC_GIB - SC_MIB);
	/* A max above the capacity keeps the node, and the capacity rules. */
	CHECK_OK(sc_write(sc_node_path(KEY, self->cgid, "max"), "1T"));
	CHECK_OK(sc_write(sc_dev_path(KEY, "capacity"), "3M"));
	CHECK_EQ(DEV_U64(KEY, "capacity"), 3 * SC_MIB);
	CHECK_OK(sc_status(fd, h, &st));
	CHECK_EQ(st.node_max, 1024 * SC_GIB);
	CHECK_EQ(st.headroom, 2 * SC_MIB);
	CHECK_OK(sc_charge(fd, h, 2 * SC_MIB, &charged));
	CHECK_EQ(charged, 3 * SC_MIB);
	before = snap(fd, h, self->cgid);
	CHECK_ERR(sc_charge(fd, h, 1, &charged), ENOSPC);
	after = snap(fd, h, self->cgid);
	CHECK_SAME(before, after);
	CHECK_EQ(DEV_U64(KEY, "capacity_hits"), 1);
	/* Six EDQUOT above, then this ENOSPC; it is no max hit. */
	CHECK_EQ(DEV_U64(KEY, "denials"), 7);
	CHECK_EQ(NODE_U64(KEY, self->cgid, "max_hits"), 6);
	CHECK_EQ(NODE_U64(KEY, self->cgid, "denials"), 7);

	/* Capacity set below used: charges fail until enough is uncharged. */
	CHECK_OK(sc_write(sc_dev_path(KEY, "capacity"), "1M"));
	CHECK_EQ(DEV_U64(KEY, "used"), 3 * SC_MIB);
	CHECK_ERR(sc_charge(fd, h, 1, &charged), ENOSPC);
	CHECK_OK(sc_uncharge(fd, h, 2 * SC_MIB, &charged));
	CHECK_EQ(charged, SC_MIB);
	CHECK_ERR(sc_charge(fd, h, 1, &charged), ENOSPC);
	CHECK_OK(sc_uncharge(fd, h, 1, &charged));
	CHECK_OK(sc_charge(fd, h, 1, &charged));
	CHECK_EQ(charged, SC_MIB);
	CHECK_EQ(DEV_U64(KEY, "capacity_hits"), 3);

	/* close() uncharges everything. */
	CHECK_OK(sc_close(fd));
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_EQ(NODE_U64(KEY, self->cgid, "current"), 0);
	CHECK_EQ(NODE_U64(KEY, self->cgid, "holders"), 0);

	/* Cleared and unused, the node goes away; the device can go. */
	CHECK_OK(sc_cg_enter("/"));
	CHECK_OK(sc_clear_budget(KEY, CG));
	CHECK(!sc_node_exists(KEY, self->cgid));
}

TEST_HARNESS_MAIN
