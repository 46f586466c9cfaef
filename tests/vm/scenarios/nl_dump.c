// SPDX-License-Identifier: GPL-2.0
/*
 * nl_dump: dumps that take several parts resume where they stopped and
 * flag a change made between parts.  With 300 budget nodes on one device
 * (and one node on another) and 150 holders, the budget and holder dumps
 * need several parts: each node and holder comes exactly once, the
 * device filter keeps the other device out, an undisturbed dump is not
 * flagged, and a dump during which a budget is changed is flagged
 * NLM_F_DUMP_INTR.
 */
#include "scen.h"
#include "nl_genl.h"

#define KEY	"t-nld"
#define KEY2	"t-nld2"
#define NCG	300
#define NHOLD	150

static uint64_t ids[NCG + 2];
static int seen[NCG + 2], nseen;
static int fd2;

static int budget_cb(struct nlattr **tb, void *arg)
{
	uint64_t id;
	int i;

	(void)arg;
	CHECK_STREQ(nl_str(tb[NXQUOTA_A_BUDGET_DEVICE]), KEY);
	id = nl_u64(tb[NXQUOTA_A_BUDGET_CGROUP_ID]);
	for (i = 0; i < NCG + 1; i++)
		if (ids[i] == id)
			break;
	if (i == NCG + 1)
		FAIL("node %" PRIu64 " is none of ours", id);
	if (seen[i]++)
		FAIL("node %" PRIu64 " dumped twice", id);
	nseen++;
	return 0;
}

static int holder_cb(struct nlattr **tb, void *arg)
{
	uint64_t *charges = arg, c;

	CHECK_STREQ(nl_str(tb[NXQUOTA_A_HOLDER_DEVICE]), KEY);
	c = nl_u64(tb[NXQUOTA_A_HOLDER_CHARGE]);	/* 1..NHOLD, unique */
	if (c < 1 || c > NHOLD || charges[c]++)
		FAIL("holder with charge %" PRIu64 " unexpected or twice", c);
	nseen++;
	return 0;
}

static void poke(void)
{
	struct nl_msg m;

	nl_init(&m, nl_family_id, 0, NXQUOTA_CMD_BUDGET_SET);
	nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
	nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH, "/nld-0");
	nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX, 2 * SC_MIB);
	CHECK_OK(nl_talk(fd2, &m, NULL, NULL, NULL));
}

static int dump_budgets(int fd, int disturb)
{
	struct nl_msg m;
	int intr;

	memset(seen, 0, sizeof(seen));
	nseen = 0;
	nl_init(&m, nl_family_id, NLM_F_DUMP, NXQUOTA_CMD_BUDGET_GET);
	nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
	if (disturb)
		nl_between_parts = poke;
	CHECK_OK(nl_talk(fd, &m, budget_cb, NULL, &intr));
	nl_between_parts = NULL;
	return intr;
}

/* Dumps over the kernel's generic netlink socket: the module only (sc_module_only[]). */
FIXTURE(dump) {};

FIXTURE_VARIANT(dump) {};

FIXTURE_VARIANT_ADD(dump, module) {};

FIXTURE_SETUP(dump)
{
	char cg[64];
	int i;

	CHECK_OK(sc_dev_register_open(KEY, "1G"));
	CHECK_OK(sc_dev_register_open(KEY2, "1G"));
	ids[NCG] = CG_ID("/");
	for (i = 0; i < NCG; i++) {
		snprintf(cg, sizeof(cg), "/nld-%d", i);
		CHECK_OK(sc_cg_create(cg));
		ids[i] = CG_ID(cg);
		CHECK_OK(sc_set_budget(KEY, "%s max=1M", cg));
	}
	CHECK_OK(sc_set_budget(KEY2, "/nld-0 max=1M"));
}

FIXTURE_TEARDOWN(dump)
{
	char cg[64];
	int i;

	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_dev_unregister(KEY2));
	for (i = NCG - 1; i >= 0; i--) {
		snprintf(cg, sizeof(cg), "/nld-%d", i);
		CHECK_OK(sc_cg_remove(cg));
	}
}

TEST_F(dump, each_once_across_parts)
{
	static uint64_t charges[NHOLD + 1];
	struct nl_msg m;
	uint64_t h = 0, c = 0;
	int fd, dfd, i;

	fd = NL_OPEN();
	fd2 = NL_OPEN();

	CHECK_EQ(dump_budgets(fd, 0), 0);
	CHECK_EQ(nseen, NCG + 1);
	CHECK_EQ(dump_budgets(fd, 1), 1);
	CHECK_EQ(nseen, NCG + 1);	/* a flagged dump still resumes right */
	CHECK_EQ(NODE_U64(KEY, ids[0], "max"), 2 * SC_MIB);
	sc_log("budget dump: %d nodes once each; flagged only when disturbed",
	       NCG + 1);

	/* 150 holders with charges 1..150 bytes, on one file. */
	dfd = sc_open();
	CHECK(dfd >= 0);
	for (i = 1; i <= NHOLD; i++) {
		CHECK_OK(sc_register(dfd, KEY, SC_EFD, 0, &h));
		CHECK_OK(sc_charge(dfd, h, i, &c));
	}
	nseen = 0;
	nl_init(&m, nl_family_id, NLM_F_DUMP, NXQUOTA_CMD_HOLDER_GET);
	nl_put_str(&m, NXQUOTA_A_HOLDER_DEVICE, KEY);
	CHECK_OK(nl_talk(fd, &m, holder_cb, charges, NULL));
	CHECK_EQ(nseen, NHOLD);
	nseen = 0;
	nl_init(&m, nl_family_id, NLM_F_DUMP, NXQUOTA_CMD_HOLDER_GET);
	nl_put_str(&m, NXQUOTA_A_HOLDER_DEVICE, KEY2);
	CHECK_EQ(nl_talk(fd, &m, NULL, NULL, NULL), 0);
	sc_log("holder dump: %d holders once each", NHOLD);

	CHECK_OK(sc_close(dfd));
	close(fd);
	close(fd2);
}

TEST_HARNESS_MAIN
