// SPDX-License-Identifier: GPL-2.0
/*
 * atk_exit_child: a holder belongs to the process that registered it.
 *
 * Tenant P (uid 65534, /atk-ec) opens /dev/nxquota; its child C registers
 * a holder on the inherited file, charges 30M and exits.  The holder goes
 * with C: the device's used and holders and the node's current return to
 * 0 (while P still has the file open), and P gets ENOENT for the id on
 * STATUS, CHARGE, UNCHARGE, SET_RECLAIMABLE, TICKET_READ and UNREGISTER.
 * P's own holder on the same file still works, and close() ends it.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-aec"
#define CG	"/atk-ec"
#define M	SC_MIB

static int c2p[2], p2m[2], m2p[2];

static int child(void *arg)
{
	int fd = (int)(uintptr_t)arg, efd = sc_eventfd();
	uint64_t id, c = 0;

	CHECK_OK(sc_register(fd, KEY, efd, 0, &id));
	CHECK_OK(sc_charge(fd, id, 30 * M, &c));
	CHECK_EQ(c, 30 * M);
	CHECK_OK(sc_send(c2p[1], id));
	return 0;
}

static int parent(void *arg)
{
	struct nxq_status st;
	struct nxq_ticket t;
	uint64_t id, mine, c = 0;
	int fd, efd;
	pid_t pid;

	(void)arg;
	tn_tenant(CG);
	fd = sc_open();
	if (fd < 0)
		FAIL("tenant: open: %s", sc_errname(-fd));
	pid = sc_spawn(child, (void *)(uintptr_t)fd);
	id = RECV(c2p[0]);
	CHECK_CHILD_OK(pid);
	CHECK_OK(sc_send(p2m[1], id));
	RECV(m2p[0]);		/* root looked at the ledger */
	CHECK_ERR(sc_status(fd, id, &st), ENOENT);
	CHECK_ERR(sc_charge(fd, id, M, NULL), ENOENT);
	CHECK_ERR(sc_uncharge(fd, id, M, NULL), ENOENT);
	CHECK_ERR(sc_set_reclaimable(fd, id, 0), ENOENT);
	CHECK_ERR(sc_ticket_read(fd, id, &t), ENOENT);
	CHECK_ERR(sc_unregister(fd, id), ENOENT);
	efd = sc_eventfd();
	CHECK_OK(sc_register(fd, KEY, efd, 0, &mine));
	CHECK_OK(sc_charge(fd, mine, 10 * M, &c));
	CHECK_EQ(c, 10 * M);
	CHECK_OK(sc_send(p2m[1], mine));
	RECV(m2p[0]);
	CHECK_OK(sc_close(fd));
	CHECK_OK(sc_send(p2m[1], 0));
	RECV(m2p[0]);
	return 0;
}

/* A holder's life is the ledger's rule: both authorities. */
FIXTURE(exit_child) {};

FIXTURE_VARIANT(exit_child) {};

FIXTURE_VARIANT_ADD(exit_child, module) {};

FIXTURE_VARIANT_ADD(exit_child, daemon) {};

FIXTURE_SETUP(exit_child)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(CG));
	CHECK_OK(sc_set_budget(KEY, CG " max=100M"));
}

FIXTURE_TEARDOWN(exit_child)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CG));
}

TEST_F(exit_child, holder_goes_with_its_process)
{
	uint64_t cg, last = 0;
	pid_t pid;

	cg = CG_ID(CG);
	CHECK(pipe(c2p) == 0 && pipe(p2m) == 0 && pipe(m2p) == 0);

	pid = sc_spawn(parent, NULL);
	RECV(p2m[0]);
	/* C exited; P keeps the file open. */
	if (sc_wait_u64(sc_dev_path(KEY, "used"), 0, 5000, &last) < 0)
		FAIL("the registering child exited, the file is still open in "
		     "its parent: device used stays %llu (expected 0: the "
		     "holder goes with its process)", (unsigned long long)last);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_EQ(NODE_U64(KEY, cg, "current"), 0);
	CHECK_EQ(NODE_U64(KEY, cg, "holders"), 0);
	CHECK_OK(sc_send(m2p[1], 1));
	RECV(p2m[0]);
	CHECK_EQ(DEV_U64(KEY, "used"), 10 * M);
	CHECK_EQ(DEV_U64(KEY, "holders"), 1);
	CHECK_OK(sc_send(m2p[1], 1));
	RECV(p2m[0]);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_OK(sc_send(m2p[1], 1));
	CHECK_CHILD_OK(pid);
}

TEST_HARNESS_MAIN
