// SPDX-License-Identifier: GPL-2.0
/*
 * race_budget: budgets set while their cgroup is created and removed --
 * what a container runtime does at container start.
 *
 * For NXQ_RACE_SECS seconds (default 5), at once:
 *  - M creates and removes /race-b-x and /race-b-x/y in a loop;
 *  - S sets and clears budgets on both paths through sysfs
 *    (devices/KEY/set_budget, clear_budget);
 *  - N does the same through netlink (BUDGET_SET, BUDGET_CLEAR);
 *  - H, a holder in the stable /race-b-h, charges and uncharges 1M.
 * Every set/clear returns 0 or ENOENT (the cgroup is not there); the
 * kernel log stays clean (the runner scans it).  Afterwards the ledger is
 * exact: used equals H's charge, then 0; a budget set on a new /race-b-x
 * binds a holder there (max 10M: 10M granted, 1 byte more EDQUOT).
 */
#include "scen.h"
#include "tenant.h"
#include "nl_genl.h"

#define KEY	"t-rb"
#define CX	"/race-b-x"
#define CY	"/race-b-x/y"
#define CH	"/race-b-h"
#define M	SC_MIB

struct stats {
	volatile int stop;
	uint64_t mk, rm, set_ok, set_enoent, nl_ok, nl_enoent, h_ops;
	int bad_rc;
	char bad_what[64];
};
static struct stats *st;

static void bad(const char *what, int rc)
{
	if (!st->bad_rc) {
		st->bad_rc = rc ? rc : -1;
		snprintf(st->bad_what, sizeof(st->bad_what), "%s", what);
	}
}

static int mkrm(void *arg)
{
	(void)arg;
	while (!st->stop) {
		if (mkdir(sc_cg_path(CX, NULL), 0755) == 0)
			st->mk++;
		if (mkdir(sc_cg_path(CY, NULL), 0755) == 0)
			st->mk++;
		if (rmdir(sc_cg_path(CY, NULL)) == 0)
			st->rm++;
		if (rmdir(sc_cg_path(CX, NULL)) == 0)
			st->rm++;
	}
	return 0;
}

static int setter(void *arg)
{
	static const char *const lines[] = {
		CX " max=10M min=1M", CY " max=5M", CX " min=0",
	};
	int i = 0, rc;

	(void)arg;
	while (!st->stop) {
		if (i % 4 == 3)
			rc = sc_clear_budget(KEY, i & 4 ? CX : CY);
		else
			rc = sc_set_budget(KEY, "%s", lines[i % 4]);
		if (!rc)
			st->set_ok++;
		else if (rc == -ENOENT)
			st->set_enoent++;
		else
			bad(i % 4 == 3 ? "sysfs clear_budget" :
			    "sysfs set_budget", rc);
		i++;
	}
	return 0;
}

static int nl_setter(void *arg)
{
	struct nl_msg m;
	int fd = NL_OPEN(), i = 0, rc;

	(void)arg;
	while (!st->stop) {
		const char *p = i & 1 ? CY : CX;

		if (i % 3 == 2) {
			nl_init(&m, nl_family_id, 0, NXQUOTA_CMD_BUDGET_CLEAR);
			nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
			nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH, p);
		} else {
			nl_init(&m, nl_family_id, 0, NXQUOTA_CMD_BUDGET_SET);
			nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
			nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH, p);
			nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX, 8 * M);
			nl_put_u64(&m, NXQUOTA_A_BUDGET_MIN, M);
		}
		rc = nl_talk(fd, &m, NULL, NULL, NULL);
		if (rc >= 0)
			st->nl_ok++;
		else if (rc == -ENOENT)
			st->nl_enoent++;
		else
			bad(i % 3 == 2 ? "netlink BUDGET_CLEAR" :
			    "netlink BUDGET_SET", rc);
		i++;
	}
	close(fd);
	return 0;
}

static int holder(void *arg)
{
	uint64_t id, c = 0;
	int fd, efd;

	(void)arg;
	tn_tenant(CH);
	fd = sc_open();
	CHECK_OK(fd);
	efd = sc_eventfd();
	CHECK_OK(sc_register(fd, KEY, efd, 0, &id));
	CHECK_OK(sc_charge(fd, id, 3 * M, &c));
	while (!st->stop) {
		CHECK_OK(sc_charge(fd, id, M, &c));
		CHECK_OK(sc_uncharge(fd, id, M, &c));
		st->h_ops++;
	}
	CHECK_EQ(c, 3 * M);
	CHECK_EQ(DEV_U64(KEY, "used"), 3 * M);
	CHECK_OK(sc_close(fd));
	return 0;
}

static int in_x(void *arg)
{
	uint64_t id, c = 0;
	int fd, efd;

	(void)arg;
	tn_tenant(CX);
	fd = sc_open();
	CHECK_OK(fd);
	efd = sc_eventfd();
	CHECK_OK(sc_register(fd, KEY, efd, 0, &id));
	CHECK_OK(sc_charge(fd, id, 10 * M, &c));
	CHECK_ERR(sc_charge(fd, id, 1, &c), EDQUOT);
	CHECK_EQ(DEV_U64(KEY, "used"), 10 * M);
	return 0;
}

/* Races sysfs against the kernel's netlink: the module only (sc_module_only[]).
 * No time limit of its own: NXQ_TEST_TIMEOUT goes with NXQ_RACE_SECS. */
FIXTURE(race_budget) {};

FIXTURE_VARIANT(race_budget) {};

FIXTURE_VARIANT_ADD(race_budget, module) {};

FIXTURE_SETUP(race_budget)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "1G"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(CH));
	CHECK_OK(sc_set_budget(KEY, CH " max=100M"));
}

FIXTURE_TEARDOWN(race_budget)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CX));
	CHECK_OK(sc_cg_remove(CH));
}

TEST_F(race_budget, budgets_against_cgroups)
{
	uint64_t secs = tn_knob("NXQ_RACE_SECS", 5);
	pid_t p[4];
	int i;

	st = sc_shared(sizeof(*st));

	p[0] = sc_spawn(mkrm, NULL);
	p[1] = sc_spawn(setter, NULL);
	p[2] = sc_spawn(nl_setter, NULL);
	p[3] = sc_spawn(holder, NULL);
	sleep(secs);
	st->stop = 1;
	for (i = 0; i < 4; i++)
		CHECK_CHILD_OK(p[i]);
	sc_log("%llu s: %llu mkdir, %llu rmdir; sysfs %llu set, %llu ENOENT; "
	       "netlink %llu set, %llu ENOENT; holder %llu pairs",
	       (unsigned long long)secs, (unsigned long long)st->mk,
	       (unsigned long long)st->rm, (unsigned long long)st->set_ok,
	       (unsigned long long)st->set_enoent,
	       (unsigned long long)st->nl_ok,
	       (unsigned long long)st->nl_enoent,
	       (unsigned long long)st->h_ops);
	if (st->bad_rc)
		FAIL("%s during the race: %s (expected 0 or ENOENT)",
		     st->bad_what, sc_errname(-st->bad_rc));
	CHECK(st->mk > 10 && st->set_ok + st->nl_ok > 10);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);

	/* what is left works */
	rmdir(sc_cg_path(CY, NULL));
	rmdir(sc_cg_path(CX, NULL));
	CHECK_OK(sc_cg_create(CX));
	CHECK_OK(sc_set_budget(KEY, CX " max=10M"));
	CHECK_EQ(NODE_U64(KEY, CG_ID(CX), "max"), 10 * M);
	TN_RUN(in_x, NULL);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_OK(sc_clear_budget(KEY, CX));
}

TEST_HARNESS_MAIN
