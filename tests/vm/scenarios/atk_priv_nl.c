// SPDX-License-Identifier: GPL-2.0
/*
 * atk_priv_nl: a tenant's netlink dumps show only its own subtree, with
 * paths relative to its cgroup namespace.
 *
 * Device t-apn; nodes /atk-pn-a, /atk-pn-a/sub (the tenant's, a holder in
 * sub charging 1M) and /atk-pn-b (a neighbour, a holder charging 5M).
 *  1. The tenant (uid 65534) in /atk-pn-a, in the initial cgroup
 *     namespace: the budget dump has exactly /atk-pn-a and
 *     /atk-pn-a/sub (paths as such), the holder dump exactly the holder
 *     in sub; nothing of /atk-pn-b or of the root node.
 *  2. The same tenant in a cgroup namespace rooted at /atk-pn-a
 *     (unshare(CLONE_NEWCGROUP)): the same two nodes with paths "/" and
 *     "/sub".
 *  3. Root sees all four nodes and both holders, with full paths.
 */
#include "scen.h"
#include "tenant.h"
#include "nl_genl.h"

#define KEY	"t-apn"
#define CA	"/atk-pn-a"
#define CS	"/atk-pn-a/sub"
#define CB	"/atk-pn-b"
#define M	SC_MIB

struct view {
	int nodes, holders;
	uint64_t ids[16], hcg[16];
	char paths[16][128];
};

static int node_cb(struct nlattr **tb, void *arg)
{
	struct view *v = arg;

	CHECK(tb[NXQUOTA_A_BUDGET_CGROUP_ID]);
	if (v->nodes < 16) {
		v->ids[v->nodes] = nl_u64(tb[NXQUOTA_A_BUDGET_CGROUP_ID]);
		snprintf(v->paths[v->nodes], 128, "%s",
			 tb[NXQUOTA_A_BUDGET_CGROUP_PATH] ?
			 nl_str(tb[NXQUOTA_A_BUDGET_CGROUP_PATH]) : "(none)");
	}
	v->nodes++;
	return 0;
}

static int holder_cb(struct nlattr **tb, void *arg)
{
	struct view *v = arg;

	CHECK(tb[NXQUOTA_A_HOLDER_CGROUP_ID]);
	if (v->holders < 16)
		v->hcg[v->holders] = nl_u64(tb[NXQUOTA_A_HOLDER_CGROUP_ID]);
	v->holders++;
	return 0;
}

static void look(struct view *v)
{
	struct nl_msg m;
	int fd = NL_OPEN();

	memset(v, 0, sizeof(*v));
	nl_init(&m, nl_family_id, NLM_F_DUMP, NXQUOTA_CMD_BUDGET_GET);
	nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
	CHECK_OK(nl_talk(fd, &m, node_cb, v, NULL));
	nl_init(&m, nl_family_id, NLM_F_DUMP, NXQUOTA_CMD_HOLDER_GET);
	CHECK_OK(nl_talk(fd, &m, holder_cb, v, NULL));
	close(fd);
}

static uint64_t ida, ids, idb;

static const char *path_of(struct view *v, uint64_t id)
{
	int i;

	for (i = 0; i < v->nodes && i < 16; i++)
		if (v->ids[i] == id)
			return v->paths[i];
	return NULL;
}

static void expect_own(struct view *v, const char *pa, const char *ps,
		       const char *where)
{
	const char *p;
	int i;

	for (i = 0; i < v->nodes && i < 16; i++)
		if (v->ids[i] != ida && v->ids[i] != ids)
			FAIL("%s: the tenant's dump shows node %llu (%s), "
			     "outside its subtree", where,
			     (unsigned long long)v->ids[i], v->paths[i]);
	for (i = 0; i < v->holders && i < 16; i++)
		if (v->hcg[i] != ids)
			FAIL("%s: the tenant's dump shows a holder of cgroup "
			     "%llu", where, (unsigned long long)v->hcg[i]);
	CHECK_EQ(v->nodes, 2);
	CHECK_EQ(v->holders, 1);
	p = path_of(v, ida);
	CHECK(p);
	if (strcmp(p, pa))
		FAIL("%s: the tenant's own node shows path \"%s\", expected "
		     "\"%s\"", where, p, pa);
	p = path_of(v, ids);
	CHECK(p);
	if (strcmp(p, ps))
		FAIL("%s: its child node shows path \"%s\", expected \"%s\"",
		     where, p, ps);
}

static int tenant(void *arg)
{
	struct view v;
	int ns = (int)(uintptr_t)arg;

	CHECK_OK(sc_cg_enter(CA));
	if (ns && unshare(CLONE_NEWCGROUP) < 0)
		FAIL("unshare(CLONE_NEWCGROUP): %s", sc_errname(errno));
	tn_drop(1, 0);
	look(&v);
	if (ns)
		expect_own(&v, "/", "/sub", "in a cgroup namespace");
	else
		expect_own(&v, CA, CS, "in the initial cgroup namespace");
	sc_log("tenant%s: 2 nodes (%s, %s), 1 holder",
	       ns ? " in a cgroup namespace" : "", path_of(&v, ida),
	       path_of(&v, ids));
	return 0;
}

/* The kernel's netlink scope: the module only (sc_module_only[]). */
FIXTURE(priv_nl) {};

FIXTURE_VARIANT(priv_nl) {};

FIXTURE_VARIANT_ADD(priv_nl, module) {};

FIXTURE_SETUP(priv_nl)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(CA));
	CHECK_OK(sc_cg_create(CS));
	CHECK_OK(sc_cg_create(CB));
	ida = CG_ID(CA);
	ids = CG_ID(CS);
	idb = CG_ID(CB);
	CHECK_OK(sc_set_budget(KEY, CA " max=50M"));
	CHECK_OK(sc_set_budget(KEY, CS " max=20M"));
	CHECK_OK(sc_set_budget(KEY, CB " max=50M min=10M"));
}

FIXTURE_TEARDOWN(priv_nl)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CS));
	CHECK_OK(sc_cg_remove(CA));
	CHECK_OK(sc_cg_remove(CB));
}

TEST_F(priv_nl, dumps_show_the_own_subtree)
{
	struct sc_peer s, b;
	struct view v;

	(void)nl_put_u64;	/* nl_genl.h's, unused here */
	tn_peer_start(&s, "S", CS, KEY, 0, 1, 1);
	tn_peer_start(&b, "B", CB, KEY, 0, 1, 1);
	PEER_OK(&s, SC_PEER_CHARGE, M, 0);
	PEER_OK(&b, SC_PEER_CHARGE, 5 * M, 0);

	TN_RUN(tenant, (void *)0);
	TN_RUN(tenant, (void *)1);

	look(&v);
	CHECK_EQ(v.nodes, 4);
	CHECK_EQ(v.holders, 2);
	CHECK(path_of(&v, idb) && !strcmp(path_of(&v, idb), CB));
	CHECK(path_of(&v, ids) && !strcmp(path_of(&v, ids), CS));

	PEER_STOP(&s);
	PEER_STOP(&b);
}

TEST_HARNESS_MAIN
