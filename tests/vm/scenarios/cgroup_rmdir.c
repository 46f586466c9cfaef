// SPDX-License-Identifier: GPL-2.0
/*
 * cgroup_rmdir: a holder's process leaves its cgroup and the cgroup is
 * removed while the holder is charged.  The holder keeps its charge, its
 * removed cgroup's node stays (readable, still counted up the tree) with
 * what was charged there, the holder's next charges go to the cgroup its
 * process is in now (B, whose max binds them), set_budget can no longer
 * name the path, a new
 * cgroup made at the same path is a different node, and when the holder's
 * file is closed the nodes of the removed cgroups disappear and the device
 * is back to 0.
 *
 *   /nxq-rm        P
 *   /nxq-rm/a      A   max=512K  (the holder registers here, then leaves)
 *   /nxq-rm/b      B   max=350K  (the process moves here; a second
 *                                 holder registers here)
 */
#include "scen.h"

#define KEY	"t-rmdir"
#define P	"/nxq-rm"
#define A	"/nxq-rm/a"
#define B	"/nxq-rm/b"
#define K	SC_KIB

static int p2c[2], c2p[2];

enum { CMD_CHARGE_A = 1, CMD_CHARGE_A_TOO_MUCH, CMD_REGISTER_B, CMD_EXIT };

/* The holder process: registers in A, moves to B, obeys the parent. */
static int child(void *arg)
{
	uint64_t ha = 0, hb = 0, c = 0, cmd;
	int fd;

	close(p2c[1]);
	close(c2p[0]);
	(void)arg;
	CHECK_OK(sc_cg_enter(A));
	fd = sc_open();
	CHECK_OK(fd);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &ha));
	CHECK_OK(sc_charge(fd, ha, 100 * K, &c));
	CHECK_OK(sc_cg_enter(B));
	CHECK_OK(sc_send(c2p[1], c));
	for (;;) {
		cmd = RECV(p2c[0]);
		switch (cmd) {
		case CMD_CHARGE_A:
			CHECK_OK(sc_charge(fd, ha, 300 * K, &c));
			break;
		case CMD_CHARGE_A_TOO_MUCH:
			CHECK_ERR(sc_charge(fd, ha, 200 * K, &c), EDQUOT);
			c = HOLDER_CHARGE(fd, ha);
			break;
		case CMD_REGISTER_B:
			CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &hb));
			CHECK_OK(sc_charge(fd, hb, 50 * K, &c));
			CHECK_OK(sc_cg_enter("/"));
			break;
		case CMD_EXIT:
			return 0;
		default:
			FAIL("unknown command %" PRIu64, cmd);
		}
		CHECK_OK(sc_send(c2p[1], c));
	}
}

static uint64_t ask(uint64_t cmd)
{
	CHECK_OK(sc_send(p2c[1], cmd));
	return RECV(c2p[0]);
}

/* Nodes and removed cgroups are the ledger's rules: both authorities. */
FIXTURE(cgroup_rmdir) {};

FIXTURE_VARIANT(cgroup_rmdir) {};

FIXTURE_VARIANT_ADD(cgroup_rmdir, module) {};

FIXTURE_VARIANT_ADD(cgroup_rmdir, daemon) {};

FIXTURE_SETUP(cgroup_rmdir)
{
	CHECK_OK(sc_dev_register_open(KEY, "1M"));
	CHECK_OK(sc_cg_create(P));
	CHECK_OK(sc_cg_create(A));
	CHECK_OK(sc_cg_create(B));
}

FIXTURE_TEARDOWN(cgroup_rmdir)
{
	CHECK_OK(sc_dev_unregister(KEY));
}

TEST_F(cgroup_rmdir, nodes_outlive_their_cgroups)
{
	uint64_t p, a, b, p2, h = 0, c = 0;
	char buf[256];
	pid_t pid;
	int fd, n;

	p = CG_ID(P), a = CG_ID(A), b = CG_ID(B);
	CHECK_OK(sc_set_budget(KEY, A " max=512K"));
	CHECK(pipe(p2c) == 0 && pipe(c2p) == 0);

	pid = sc_spawn(child, NULL);
	close(p2c[0]);	/* a dead child is then EOF, not a timeout */
	close(c2p[1]);
	CHECK_EQ(RECV(c2p[0]), 100 * K);

	/* A is empty now (its only process moved to B): remove it. */
	CHECK_OK(sc_cg_remove(A));
	CHECK(sc_node_exists(KEY, a));
	n = sc_read(sc_node_path(KEY, a, "path"), buf, sizeof(buf));
	if (n < 0)
		FAIL("path of a removed cgroup's node: %s", sc_errname(-n));
	CHECK_EQ(NODE_U64(KEY, a, "current"), 100 * K);
	CHECK_EQ(NODE_U64(KEY, a, "holders"), 1);
	CHECK_EQ(NODE_U64(KEY, a, "max"), 512 * K);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 100 * K);
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "current"), 100 * K);
	CHECK_EQ(DEV_U64(KEY, "used"), 100 * K);
	CHECK_ERR(sc_set_budget(KEY, A " max=1M"), ENOENT);

	/*
	 * The holder still charges, now where its process is (B, whose max
	 * binds); its 100K stay on A's node until released.
	 */
	CHECK_OK(sc_set_budget(KEY, B " max=350K"));
	CHECK_EQ(ask(CMD_CHARGE_A), 400 * K);
	CHECK_EQ(ask(CMD_CHARGE_A_TOO_MUCH), 400 * K);
	CHECK_EQ(NODE_U64(KEY, b, "max_hits"), 1);
	CHECK_EQ(NODE_U64(KEY, a, "max_hits"), 0);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 100 * K);
	CHECK_EQ(NODE_U64(KEY, b, "current"), 300 * K);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 400 * K);

	/* A holder registered now is bound to B, where the process is. */
	CHECK_EQ(ask(CMD_REGISTER_B), 50 * K);
	CHECK_EQ(NODE_U64(KEY, b, "current"), 350 * K);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 100 * K);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 450 * K);

	/* The whole subtree goes, both holders still charged. */
	CHECK_OK(sc_cg_remove(B));
	CHECK_OK(sc_cg_remove(P));
	CHECK_EQ(NODE_U64(KEY, b, "current"), 350 * K);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 450 * K);
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "current"), 450 * K);
	CHECK_EQ(DEV_U64(KEY, "used"), 450 * K);

	/* A new cgroup at the old path is a new node with its own budget. */
	CHECK_OK(sc_cg_create(P));
	p2 = CG_ID(P);
	CHECK(p2 != p);
	CHECK_OK(sc_set_budget(KEY, P " max=100K"));
	CHECK_EQ(NODE_U64(KEY, p2, "max"), 100 * K);
	CHECK_EQ(NODE_U64(KEY, p2, "current"), 0);
	CHECK_EQ(NODE_U64(KEY, p, "max"), NXQ_UNLIMITED);
	CHECK_OK(sc_cg_enter(P));
	fd = sc_open();
	CHECK_OK(fd);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &h));
	CHECK_OK(sc_charge(fd, h, 100 * K, &c));
	CHECK_ERR(sc_charge(fd, h, 1, &c), EDQUOT);
	CHECK_EQ(NODE_U64(KEY, p2, "current"), 100 * K);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 450 * K);
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "current"), 550 * K);
	CHECK_OK(sc_cg_enter("/"));
	CHECK_OK(sc_close(fd));

	/* The holders' file closes: the removed cgroups' nodes go. */
	CHECK_OK(sc_send(p2c[1], CMD_EXIT));
	CHECK_CHILD_OK(pid);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "current"), 0);
	if (sc_node_exists(KEY, a) || sc_node_exists(KEY, b) ||
	    sc_node_exists(KEY, p))
		FAIL("nodes of removed cgroups left with no holder: a %d b %d "
		     "p %d", sc_node_exists(KEY, a), sc_node_exists(KEY, b),
		     sc_node_exists(KEY, p));
	CHECK_EQ(NODE_U64(KEY, p2, "max"), 100 * K);

	/* A budget alone on a cgroup that goes: readable while it lasts. */
	CHECK_OK(sc_cg_remove(P));
	if (sc_node_exists(KEY, p2)) {
		CHECK_OK(sc_read(sc_node_path(KEY, p2, "path"), buf,
				 sizeof(buf)));
		CHECK_EQ(NODE_U64(KEY, p2, "current"), 0);
	}
	CHECK_ERR(sc_set_budget(KEY, P " max=1M"), ENOENT);
}

TEST_HARNESS_MAIN
