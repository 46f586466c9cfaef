// SPDX-License-Identifier: GPL-2.0
/*
 * atk_priority: a tenant cannot jump the queue by registering with a high
 * priority; only the admin's priority_max lets it.
 *
 * Tenant (uid 65534) in /atk-pr and in /atk-pr/c:
 *  1. nothing set: priority 1000 and 1 -> EPERM, 1001 -> EINVAL or EPERM,
 *     0 -> registered; the refusals add no holder;
 *  2. root sets priority_max=500 on /atk-pr: 500 registers in /atk-pr and
 *     in /atk-pr/c (inherited), 501 and 1000 -> EPERM in both;
 *  3. root sets priority_max=0 again: 500 -> EPERM.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-apr"
#define CP	"/atk-pr"
#define CC	"/atk-pr/c"

static int step_pipe[2], done_pipe[2];

/*
 * The device's holder count, as the tenant sees it: sysfs lets anyone read
 * it, nxquotad's control socket is root's only, so against the daemon the
 * tenant does not look (-1) and main checks the count after each step.
 */
static int64_t tenant_holders(void)
{
	return sc_daemon() ? -1 : (int64_t)DEV_U64(KEY, "holders");
}

static void try_prio(int fd, unsigned int prio, int err, const char *where)
{
	int64_t before = tenant_holders();
	uint64_t id = 0;
	long rc = sc_register(fd, KEY, -1, prio, &id);

	if (err) {
		if (rc != -err && !(prio > NXQ_PRIORITY_MAX && rc == -EINVAL))
			FAIL("tenant in %s registering with priority %u: "
			     "expected %s, got %s", where, prio,
			     sc_errname(err), sc_rcname(rc));
		if (before >= 0)
			CHECK_EQ(DEV_U64(KEY, "holders"), (uint64_t)before);
		return;
	}
	if (rc)
		FAIL("tenant in %s registering with priority %u: %s", where,
		     prio, sc_rcname(rc));
	if (before >= 0)
		CHECK_EQ(DEV_U64(KEY, "holders"), (uint64_t)before + 1);
	CHECK_OK(sc_unregister(fd, id));
}

static int tenant(void *arg)
{
	const char *cg = arg;
	int fd;

	tn_tenant(cg);
	fd = sc_open();
	if (fd < 0)
		FAIL("tenant: open %s: %s", SC_DEVNODE, sc_errname(-fd));
	/* 1. nothing set */
	try_prio(fd, 1000, EPERM, cg);
	try_prio(fd, 1, EPERM, cg);
	try_prio(fd, 1001, EPERM, cg);
	try_prio(fd, 0, 0, cg);
	CHECK_OK(sc_send(done_pipe[1], 1));
	RECV(step_pipe[0]);
	/* 2. priority_max=500 on the parent */
	try_prio(fd, 500, 0, cg);
	try_prio(fd, 501, EPERM, cg);
	try_prio(fd, 1000, EPERM, cg);
	CHECK_OK(sc_send(done_pipe[1], 2));
	RECV(step_pipe[0]);
	/* 3. back to 0 */
	try_prio(fd, 500, EPERM, cg);
	try_prio(fd, 0, 0, cg);
	CHECK_OK(sc_send(done_pipe[1], 3));
	return 0;
}

/* priority_max is the ledger's rule: the module and nxquotad alike. */
FIXTURE(priority) {};

FIXTURE_VARIANT(priority) {};

FIXTURE_VARIANT_ADD(priority, module) {};

FIXTURE_VARIANT_ADD(priority, daemon) {};

FIXTURE_SETUP(priority)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(CP));
	CHECK_OK(sc_cg_create(CC));
}

FIXTURE_TEARDOWN(priority)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CC));
	CHECK_OK(sc_cg_remove(CP));
}

TEST_F(priority, priority_max_binds)
{
	const char *cgs[] = { CP, CC };
	pid_t pid;
	int i;

	for (i = 0; i < 2; i++) {
		CHECK(pipe(step_pipe) == 0 && pipe(done_pipe) == 0);
		pid = sc_spawn(tenant, (void *)cgs[i]);
		close(done_pipe[1]);	/* EOF when the tenant dies */
		close(step_pipe[0]);
		CHECK_EQ(RECV(done_pipe[0]), 1);
		/* the refusals left no holder, the one success unregistered */
		CHECK_EQ(DEV_U64(KEY, "holders"), 0);
		CHECK_OK(sc_set_budget(KEY, CP " priority_max=500"));
		CHECK_OK(sc_send(step_pipe[1], 1));
		CHECK_EQ(RECV(done_pipe[0]), 2);
		CHECK_EQ(DEV_U64(KEY, "holders"), 0);
		CHECK_OK(sc_set_budget(KEY, CP " priority_max=0"));
		CHECK_OK(sc_send(step_pipe[1], 1));
		CHECK_EQ(RECV(done_pipe[0]), 3);
		CHECK_EQ(DEV_U64(KEY, "holders"), 0);
		CHECK_CHILD_OK(pid);
		close(done_pipe[0]);
		close(step_pipe[1]);
		sc_log("%s: 1000 and 1 refused (EPERM) by default; 500 allowed "
		       "once priority_max=500 on %s, 501 refused", cgs[i], CP);
	}
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN
