// SPDX-License-Identifier: GPL-2.0
/*
 * siblings: object limits belong to each cgroup; siblings never share a
 * default (issue 19).  /nxq-sib (no limits of its own) holds two
 * tenants, a and b, each uid 65534 in its own cgroup:
 *
 *   1. a registers holders until refused: exactly the default (1024),
 *      EMFILE after; b then registers and charges as if a were not there
 *      (on the rules before, b got EMFILE: the parent's default was
 *      shared by its children).
 *   2. a starts 100 waiting charges: 64 wait, 36 get EAGAIN; b's waiting
 *      charge then waits as usual (before: EAGAIN after 0 ms).
 *   3. root sets holders_max=1030 on /nxq-sib: that bounds a and b
 *      together: with b's 6, a registers its 1024, and b's 7th holder
 *      gets EMFILE.
 *
 * Killing the tenants leaves nothing charged, waiting or registered.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-sib"
#define P	"/nxq-sib"
#define A	"/nxq-sib/a"
#define B	"/nxq-sib/b"
#define M	SC_MIB

struct holders {
	const char *cg;
	int want, got, err;
};

/* A tenant of hs->cg registers up to want holders, then sleeps. */
static int registrar(void *arg)
{
	struct holders *hs = arg;
	int fd, i;
	uint64_t id;
	long rc;

	tn_tenant(hs->cg);
	fd = sc_open();
	if (fd < 0)
		FAIL("open: %s", sc_errname(-fd));
	for (i = 0; i < hs->want; i++) {
		rc = sc_register(fd, KEY, -1, 0, &id);
		if (rc) {
			__atomic_store_n(&hs->err, (int)-rc, __ATOMIC_SEQ_CST);
			break;
		}
		__atomic_add_fetch(&hs->got, 1, __ATOMIC_SEQ_CST);
	}
	__atomic_store_n(&hs->want, -1, __ATOMIC_SEQ_CST);	/* done */
	for (;;)
		pause();
	return 0;
}

static pid_t holders_in(struct holders *hs, const char *cg, int want)
{
	pid_t pid;
	uint64_t end = sc_now_ms() + 30000;

	hs->cg = cg;
	hs->want = want;
	hs->got = 0;
	hs->err = 0;
	pid = sc_spawn(registrar, hs);
	while (__atomic_load_n(&hs->want, __ATOMIC_SEQ_CST) != -1 &&
	       sc_now_ms() < end)
		usleep(10000);
	if (hs->want != -1)
		FAIL("%s: registering %d holders did not end in 30 s", cg,
		     want);
	return pid;
}

/* Object limits per cgroup are the ledger's rules: the module and nxquotad alike. */
FIXTURE(siblings) {};

FIXTURE_VARIANT(siblings) {};

FIXTURE_VARIANT_ADD(siblings, module) {};

FIXTURE_VARIANT_ADD(siblings, daemon) {};

FIXTURE_SETUP(siblings)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "1G"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(P));
	CHECK_OK(sc_cg_create(A));
	CHECK_OK(sc_cg_create(B));
	CHECK_OK(sc_set_budget(KEY, A " max=10M"));
}

FIXTURE_TEARDOWN(siblings)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(A));
	CHECK_OK(sc_cg_remove(B));
	CHECK_OK(sc_cg_remove(P));
}

TEST_F_TIMEOUT(siblings, limits_per_cgroup, 55)
{
	struct holders *ha, *hb;
	struct tn_waiters *ws;
	struct sc_peer b, b2;
	pid_t pa, pb, pw;
	struct sc_rep r;

	ha = sc_shared(sizeof(*ha));
	hb = sc_shared(sizeof(*hb));
	ws = sc_shared(sizeof(*ws));

	/* 1. a takes its whole default; b has its own. */
	pa = holders_in(ha, A, 2000);
	sc_log("a registered %d holders, then %s", ha->got,
	       sc_errname(ha->err));
	CHECK_EQ(ha->got, 1024);
	CHECK_EQ(ha->err, EMFILE);
	pb = holders_in(hb, B, 6);
	if (hb->got != 6)
		FAIL("b, a sibling of a tenant with 1024 holders, registered "
		     "%d of 6 holders, then %s", hb->got, sc_errname(hb->err));

	tn_kill(pa);
	WAIT_U64(sc_node_path(KEY, CG_ID(A), "holders"), 0);

	/* 2. a's 64 waiting charges leave b's own 64. */
	ws->key = KEY;
	ws->cg = A;
	ws->n = 100;
	pw = sc_spawn(tn_waiters_attacker, ws);
	{
		uint64_t end = sc_now_ms() + 20000;

		while (sc_now_ms() < end &&
		       (ws->started < 100 || DEV_U64(KEY, "waiters") +
			ws->eagain + ws->other < 100))
			usleep(10000);
		usleep(100 * 1000);
	}
	CHECK_EQ(ws->eagain, 36);
	CHECK_EQ(DEV_U64(KEY, "waiters"), 64);
	/*
	 * b: b2 fills b's max and does not answer its ticket; b's charge
	 * then waits for it 300 ms, as it would with a alone.
	 */
	CHECK_OK(sc_set_budget(KEY, B " max=2M"));
	sc_peer_start(&b2, "b2", B, KEY, 0, 1);
	sc_peer_start(&b, "b", B, KEY, 0, 1);
	PEER_OK(&b2, SC_PEER_CHARGE, 2 * M, 0);
	r = PEER_CALL(&b, SC_PEER_CHARGE, M, 300ULL * 1000000);
	if (r.rc != -ETIMEDOUT)
		FAIL("b's waiting charge beside a's 64 waiters: expected "
		     "ETIMEDOUT after 300 ms, got %s", sc_rcname(r.rc));
	CHECK(r.v[1] >= 250ULL * 1000000);
	PEER_STOP(&b);
	PEER_STOP(&b2);
	tn_kill(pw);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 0);
	WAIT_U64(sc_node_path(KEY, CG_ID(A), "holders"), 0);

	/* 3. a limit of P's own bounds its subtree: b's 6 + a's 1024. */
	TN_LIMITS(KEY, P " holders_max=1030");
	pa = holders_in(ha, A, 2000);
	CHECK_EQ(ha->got, 1024);
	pw = holders_in(hb, B, 1);
	CHECK_EQ(hb->got, 0);
	CHECK_EQ(hb->err, EMFILE);
	tn_kill(pw);

	tn_kill(pa);
	tn_kill(pb);
	WAIT_U64(sc_dev_path(KEY, "used"), 0);
	WAIT_U64(sc_dev_path(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN
