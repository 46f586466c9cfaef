// SPDX-License-Identifier: GPL-2.0
/*
 * atk_fork_id: a forked child can neither use nor keep alive the holders
 * of its parent.
 *
 *  1. Tenant P (uid 65534, /atk-fi) registers H, charges 10M, reports 5M
 *     reclaimable, and forks C (which inherits the file).  C gets ENOENT
 *     for H on STATUS, CHARGE, UNCHARGE, SET_RECLAIMABLE, TICKET_READ,
 *     TICKET_ANSWER and UNREGISTER; afterwards H is exactly as it was
 *     (10M, 5M reclaimable) and so is the ledger.
 *  2. P exits normally while C still has the file open: H's charge goes
 *     (used, holders and the node's current back to 0) with C alive.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-afi"
#define CG	"/atk-fi"
#define M	SC_MIB

static int c2m[2], m2c[2], p2m[2], m2p[2];

struct hd {
	int fd;
	uint64_t id;
};

static int child(void *arg)
{
	int fd = ((struct hd *)arg)->fd;
	uint64_t id = ((struct hd *)arg)->id;
	struct nxq_status st;
	struct nxq_ticket t;

	/* outlive the registrant (RECV times out if all else dies) */
	prctl(PR_SET_PDEATHSIG, 0);
	CHECK_ERR(sc_status(fd, id, &st), ENOENT);
	CHECK_ERR(sc_charge(fd, id, M, NULL), ENOENT);
	CHECK_ERR(sc_charge_wait(fd, id, M, 1000000, NULL), ENOENT);
	CHECK_ERR(sc_uncharge(fd, id, M, NULL), ENOENT);
	CHECK_ERR(sc_set_reclaimable(fd, id, 0), ENOENT);
	CHECK_ERR(sc_ticket_read(fd, id, &t), ENOENT);
	CHECK_ERR(sc_ticket_answer(fd, id, 1, M, NULL), ENOENT);
	CHECK_ERR(sc_unregister(fd, id), ENOENT);
	CHECK_OK(sc_send(c2m[1], 1));
	RECV(m2c[0]);		/* keep the file open until told */
	return 0;
}

static int parent(void *arg)
{
	struct nxq_status st;
	struct hd a = { 0, 0 };
	int fd, efd;
	pid_t pid;

	(void)arg;
	tn_tenant(CG);
	fd = sc_open();
	if (fd < 0)
		FAIL("tenant: open: %s", sc_errname(-fd));
	efd = sc_eventfd();
	CHECK_OK(sc_register(fd, KEY, efd, 0, &a.id));
	CHECK_OK(sc_charge(fd, a.id, 10 * M, NULL));
	CHECK_OK(sc_set_reclaimable(fd, a.id, 5 * M));
	a.fd = fd;
	pid = sc_spawn(child, &a);
	CHECK_OK(sc_send(p2m[1], pid));
	RECV(m2p[0]);		/* C tried everything, root checked */
	CHECK_OK(sc_status(fd, a.id, &st));
	CHECK_EQ(st.holder_charge, 10 * M);
	CHECK_EQ(st.holder_reclaimable, 5 * M);
	/* 2. exit with C still holding the file */
	return 0;
}

/* A holder is its registering process's: the module and nxquotad alike. */
FIXTURE(fork_id) {
	uint64_t cg;
};

FIXTURE_VARIANT(fork_id) {};

FIXTURE_VARIANT_ADD(fork_id, module) {};

FIXTURE_VARIANT_ADD(fork_id, daemon) {};

FIXTURE_SETUP(fork_id)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(CG));
	CHECK_OK(sc_set_budget(KEY, CG " max=100M"));
	self->cg = CG_ID(CG);
	CHECK(pipe(c2m) == 0 && pipe(m2c) == 0 && pipe(p2m) == 0 &&
	      pipe(m2p) == 0);
}

FIXTURE_TEARDOWN(fork_id)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CG));
}

TEST_F(fork_id, holder_id_not_inherited)
{
	uint64_t last = 0;
	pid_t p, c;

	p = sc_spawn(parent, NULL);
	c = (pid_t)RECV(p2m[0]);
	RECV(c2m[0]);
	CHECK_EQ(DEV_U64(KEY, "used"), 10 * M);
	CHECK_EQ(DEV_U64(KEY, "holders"), 1);
	CHECK_EQ(NODE_U64(KEY, self->cg, "current"), 10 * M);
	sc_log("1. the child got ENOENT for its parent's holder on 8 "
	       "commands; the holder and the ledger unchanged");
	CHECK_OK(sc_send(m2p[1], 1));
	CHECK_CHILD_OK(p);
	/* P exited; C (pid c, reparented) keeps the file. */
	if (!tn_running(c))
		FAIL("the child is gone (exited)");
	if (sc_wait_u64(sc_dev_path(KEY, "used"), 0, 5000, &last) < 0)
		FAIL("the registering process exited while its forked child "
		     "keeps the file: used stays %llu (expected 0)",
		     (unsigned long long)last);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_EQ(NODE_U64(KEY, self->cg, "current"), 0);
	sc_log("2. the parent exited, its child keeps the file: charge gone");
	CHECK_OK(sc_send(m2c[1], 1));
	/* C is P's child, reparented (to the harness): wait until it ends. */
	while (tn_running(c))
		usleep(10000);
}

TEST_HARNESS_MAIN
