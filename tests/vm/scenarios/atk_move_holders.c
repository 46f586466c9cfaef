// SPDX-License-Identifier: GPL-2.0
/*
 * atk_move_holders: holders that follow their process into another cgroup
 * are held to that cgroup's holders_max (issue 30, item 6).
 *
 * Root delegates /atk-mh to the tenant T (uid 65534 owns the directory
 * and the cgroup.procs files of /atk-mh, /atk-mh/a and /atk-mh/b, as a
 * container manager or systemd's Delegate= leaves them) and sets
 * holders_max=2 on /atk-mh/b.  T, in /atk-mh/a, registers 8 holders and
 * charges 1M on each, then moves itself to /atk-mh/b, which the owner of
 * the subtree may do, and charges 1M on each again:
 *  - the first 2 are granted and their holders move: b has 2 holders;
 *  - the other 6 get EMFILE (the move is refused as a registration in b
 *    would be) and stay on a, counted and charged there;
 *  - a ninth registration, now in b, gets EMFILE.
 * Root sees holders a 6, b 2; current a 8M, b 2M.  T moves back to a:
 * all 8 charge there again (a 16M, b 2M); closed, nothing is left.
 *
 * Seen failing before the fix (nxq_holder_rehome() checked no limit):
 * all 8 charges granted in b, which ended with 8 holders.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-amh"
#define D	"/atk-mh"
#define A	D "/a"
#define B	D "/b"
#define N	8
#define M	SC_MIB

static int t2m[2], m2t[2];

/* T: register N holders in a, move to b, charge each; then back to a. */
static int tenant(void *arg)
{
	uint64_t id[N], extra, granted = 0, emfile = 0, other = 0;
	long rc;
	int fd, efd, i;

	(void)arg;
	tn_tenant(A);
	fd = sc_open();
	if (fd < 0)
		FAIL("T: open: %s", sc_errname(-fd));
	efd = sc_eventfd();
	for (i = 0; i < N; i++) {
		rc = sc_register(fd, KEY, efd, 0, &id[i]);
		if (rc)
			FAIL("T: holder %d in %s: %s", i, A,
			     sc_errname((int)-rc));
		rc = sc_charge(fd, id[i], M, NULL);
		if (rc)
			FAIL("T: 1M on holder %d in %s: %s", i, A,
			     sc_errname((int)-rc));
	}
	/* The subtree is T's: it moves itself. */
	rc = sc_cg_enter(B);
	if (rc)
		FAIL("T: move itself to %s: %s", B, sc_errname((int)-rc));
	for (i = 0; i < N; i++) {
		rc = sc_charge(fd, id[i], M, NULL);
		if (!rc && i < 2)
			granted++;
		else if (rc == -EMFILE && i >= 2)
			emfile++;
		else
			other = (uint64_t)i << 32 | (uint32_t)-rc;
	}
	rc = sc_register(fd, KEY, efd, 0, &extra);
	CHECK_OK(sc_send(t2m[1], granted));
	CHECK_OK(sc_send(t2m[1], emfile));
	CHECK_OK(sc_send(t2m[1], other));
	CHECK_OK(sc_send(t2m[1], -rc));
	if (!RECV(m2t[0]))
		return 0;	/* the root side failed: stop */

	rc = sc_cg_enter(A);
	if (rc)
		FAIL("T: move itself back to %s: %s", A, sc_errname((int)-rc));
	granted = 0;
	for (i = 0; i < N; i++)
		granted += !sc_charge(fd, id[i], M, NULL);
	CHECK_OK(sc_send(t2m[1], granted));
	RECV(m2t[0]);
	CHECK_OK(sc_close(fd));
	CHECK_OK(sc_send(t2m[1], 0));
	RECV(m2t[0]);
	return 0;
}

/* The tenant owns the subtree's directory and its cgroup.procs files. */
static void delegate(const char *cg)
{
	if (chown(sc_cg_path(cg, "cgroup.procs"), TN_UID, TN_UID) < 0)
		FAIL("chown %s: %s", sc_cg_path(cg, "cgroup.procs"),
		     sc_errname(errno));
}

FIXTURE(move) {
	uint64_t a, b;
	pid_t t;
};

/* The ledger's rule: the module and nxquotad alike. */
FIXTURE_VARIANT(move) {};

FIXTURE_VARIANT_ADD(move, module) {};

FIXTURE_VARIANT_ADD(move, daemon) {};

FIXTURE_SETUP(move)
{
	tn_devnode_admin();
	ASSERT_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	ASSERT_OK(sc_cg_create(D));
	ASSERT_OK(sc_cg_create(A));
	ASSERT_OK(sc_cg_create(B));
	if (chown(sc_cg_path(D, NULL), TN_UID, TN_UID) < 0)
		FAIL("chown %s: %s", sc_cg_path(D, NULL), sc_errname(errno));
	delegate(D);
	delegate(A);
	delegate(B);
	TN_LIMITS(KEY, B " holders_max=2");
	self->a = CG_ID(A);
	self->b = CG_ID(B);
	ASSERT_EQ(pipe(t2m), 0);
	ASSERT_EQ(pipe(m2t), 0);
	self->t = 0;
}

FIXTURE_TEARDOWN(move)
{
	if (self->t)
		CHECK_CHILD_OK(self->t);
	ASSERT_EQ(DEV_U64(KEY, "used"), 0);
	ASSERT_EQ(DEV_U64(KEY, "holders"), 0);
	ASSERT_OK(sc_dev_unregister(KEY));
	ASSERT_OK(sc_cg_remove(A));
	ASSERT_OK(sc_cg_remove(B));
	ASSERT_OK(sc_cg_remove(D));
}

TEST_F(move, holders_max_binds_a_move)
{
	uint64_t granted, emfile, other, reg, hb;

	self->t = sc_spawn(tenant, NULL);
	granted = RECV(t2m[0]);
	emfile = RECV(t2m[0]);
	other = RECV(t2m[0]);
	reg = RECV(t2m[0]);
	hb = NODE_U64(KEY, self->b, "holders");
	if (granted != 2 || emfile != N - 2) {
		CHECK_OK(sc_send(m2t[1], 0));
		FAIL("T moved into %s (holders_max 2) with %d holders: %llu "
		     "charges granted, %llu EMFILE (want 2 and %d; last other: "
		     "holder %llu, %s); %s has %llu holders", B, N,
		     (unsigned long long)granted, (unsigned long long)emfile,
		     N - 2, (unsigned long long)(other >> 32),
		     (uint32_t)other ? sc_errname((int)(uint32_t)other) :
		     "granted", B,
		     (unsigned long long)hb);
	}
	if (reg != EMFILE) {
		CHECK_OK(sc_send(m2t[1], 0));
		FAIL("a registration in %s with 2 holders there: %s, want "
		     "EMFILE", B, reg ? sc_errname((int)reg) : "granted");
	}
	ASSERT_EQ(hb, 2);
	ASSERT_EQ(NODE_U64(KEY, self->a, "holders"), N - 2);
	ASSERT_EQ(NODE_U64(KEY, self->b, "current"), 2 * M);
	ASSERT_EQ(NODE_U64(KEY, self->a, "current"), N * M);
	ASSERT_EQ(DEV_U64(KEY, "holders"), N);
	sc_log("moved with %d holders into %s (holders_max 2): 2 follow, "
	       "%d refused with EMFILE and stay on %s", N, B, N - 2, A);

	CHECK_OK(sc_send(m2t[1], 1));
	ASSERT_EQ(RECV(t2m[0]), N);	/* back in a: all charge there */
	ASSERT_EQ(NODE_U64(KEY, self->a, "holders"), N);
	ASSERT_EQ(NODE_U64(KEY, self->b, "holders"), 0);
	ASSERT_EQ(NODE_U64(KEY, self->a, "current"), 2 * N * M);
	ASSERT_EQ(NODE_U64(KEY, self->b, "current"), 2 * M);
	CHECK_OK(sc_send(m2t[1], 1));
	ASSERT_EQ(RECV(t2m[0]), 0);	/* closed */
	CHECK_OK(sc_send(m2t[1], 1));
	CHECK_CHILD_OK(self->t);
	self->t = 0;
}

TEST_HARNESS_MAIN
