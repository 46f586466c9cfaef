// SPDX-License-Identifier: GPL-2.0
/*
 * hierarchy: a parent's max binds all its descendants, a child's own max
 * binds it below the parent's, and the device's capacity binds everyone,
 * budgeted or not.  Refusals are counted at the node whose max was hit
 * (max_hits) and on every node from the holder up (denials).  current sums
 * up the tree; effective_min splits a parent's guarantee among children
 * whose mins overcommit it; borrowed is current above effective_min.
 * Budgets are per device.
 *
 *   /nxq-hier            P  max=1M
 *   /nxq-hier/a          A
 *   /nxq-hier/a/deep     D
 *   /nxq-hier/b          B  max=768K
 *   /nxq-other           O  (no budget)
 */
#include "scen.h"

#define KEY	"t-hier"
#define KEY2	"t-hier2"
#define P	"/nxq-hier"
#define A	"/nxq-hier/a"
#define D	"/nxq-hier/a/deep"
#define B	"/nxq-hier/b"
#define O	"/nxq-other"
#define K	SC_KIB

static int fd;

/* A node's path file holds exactly the cgroup's path and a newline. */
static void check_path(uint64_t id, const char *want)
{
	char buf[256], shown[512];
	size_t i, j = 0;
	ssize_t n;

	n = sc_read_raw(sc_node_path(KEY, id, "path"), buf, sizeof(buf));
	CHECK(n >= 0);
	if ((size_t)n == strlen(want) + 1 && !memcmp(buf, want, n - 1) &&
	    buf[n - 1] == '\n')
		return;
	for (i = 0; i < (size_t)n && j < sizeof(shown) - 5; i++)
		j += snprintf(shown + j, sizeof(shown) - j,
			      buf[i] >= 32 && buf[i] < 127 ? "%c" : "\\x%02x",
			      (unsigned char)buf[i]);
	shown[j] = 0;
	FAIL("node %" PRIu64 " path holds %zd bytes \"%s\", expected \"%s\\n\"",
	     id, n, shown, want);
}

/* Where each holder was registered: a process charges where it is. */
static struct {
	uint64_t h;
	const char *cg;
} where[8];
static int nwhere;

static uint64_t holder_in(const char *cg, const char *key)
{
	uint64_t h = 0;

	CHECK_OK(sc_cg_enter(cg));
	CHECK_OK(sc_register(fd, key, SC_EFD, 0, &h));
	CHECK_OK(sc_cg_enter("/"));
	CHECK(nwhere < 8);
	where[nwhere].h = h;
	where[nwhere++].cg = cg;
	return h;
}

/* Charge holder h from its own cgroup (else its new charges follow us). */
static long charge_in(uint64_t h, uint64_t bytes, uint64_t *c)
{
	const char *cg = NULL;
	long rc;
	int i;

	for (i = 0; i < nwhere; i++)
		if (where[i].h == h)
			cg = where[i].cg;
	CHECK(cg != NULL);
	CHECK_OK(sc_cg_enter(cg));
	rc = sc_charge(fd, h, bytes, c);
	CHECK_OK(sc_cg_enter("/"));
	return rc;
}

/* The hierarchy's rules are the ledger's: both authorities. */
FIXTURE(hierarchy) {};

FIXTURE_VARIANT(hierarchy) {};

FIXTURE_VARIANT_ADD(hierarchy, module) {};

FIXTURE_VARIANT_ADD(hierarchy, daemon) {};

FIXTURE_SETUP(hierarchy)
{
	CHECK_OK(sc_dev_register_open(KEY, "2M"));
	CHECK_OK(sc_dev_register_open(KEY2, "1G"));
	CHECK_OK(sc_cg_create(P));
	CHECK_OK(sc_cg_create(A));
	CHECK_OK(sc_cg_create(D));
	CHECK_OK(sc_cg_create(B));
	CHECK_OK(sc_cg_create(O));
}

FIXTURE_TEARDOWN(hierarchy)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_dev_unregister(KEY2));
	CHECK(!sc_dev_exists(KEY));
	CHECK_OK(sc_cg_remove(D));
	CHECK_OK(sc_cg_remove(A));
	CHECK_OK(sc_cg_remove(B));
	CHECK_OK(sc_cg_remove(P));
	CHECK_OK(sc_cg_remove(O));
}

TEST_F(hierarchy, limits_through_the_tree)
{
	uint64_t ha, hb, hd, ho, hd2, c;
	uint64_t p, a, d, b, o;
	struct nxq_status st;

	p = CG_ID(P), a = CG_ID(A), d = CG_ID(D), b = CG_ID(B), o = CG_ID(O);
	CHECK_OK(sc_set_budget(KEY, P " max=1M"));
	CHECK_OK(sc_set_budget(KEY, B " max=768K"));

	fd = sc_open();
	CHECK_OK(fd);
	ha = holder_in(A, KEY);
	hb = holder_in(B, KEY);
	hd = holder_in(D, KEY);
	ho = holder_in(O, KEY);

	/* Registering created every node up to the root, with its path. */
	check_path(d, D);
	check_path(a, A);
	check_path(b, B);
	check_path(CG_ROOT_ID, "/");
	CHECK_EQ(NODE_U64(KEY, a, "holders"), 1);
	CHECK_EQ(NODE_U64(KEY, p, "holders"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 4);
	CHECK_EQ(NODE_U64(KEY, a, "max"), NXQ_UNLIMITED);

	/* The parent's max binds a child without a budget of its own. */
	CHECK_OK(charge_in(ha, 600 * K, &c));
	CHECK_ERR(charge_in(hb, 500 * K, &c), EDQUOT);
	CHECK_EQ(NODE_U64(KEY, p, "max_hits"), 1);
	CHECK_EQ(NODE_U64(KEY, b, "max_hits"), 0);
	CHECK_EQ(NODE_U64(KEY, b, "denials"), 1);
	CHECK_EQ(NODE_U64(KEY, p, "denials"), 1);
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "denials"), 1);
	CHECK_EQ(NODE_U64(KEY, a, "denials"), 0);
	CHECK_EQ(HOLDER_CHARGE(fd, hb), 0);
	CHECK_OK(charge_in(hb, 424 * K, &c));
	CHECK_EQ(NODE_U64(KEY, p, "current"), SC_MIB);

	/* ... and a grandchild. */
	CHECK_ERR(charge_in(hd, 1, &c), EDQUOT);
	CHECK_EQ(NODE_U64(KEY, d, "denials"), 1);
	CHECK_EQ(NODE_U64(KEY, a, "denials"), 1);
	CHECK_EQ(NODE_U64(KEY, p, "max_hits"), 2);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 600 * K);
	CHECK_EQ(NODE_U64(KEY, d, "current"), 0);
	CHECK_OK(sc_status(fd, hd, &st));
	CHECK_EQ(st.headroom, 0);
	CHECK_EQ(st.node_max, NXQ_UNLIMITED);

	/* The child's own max fits, the parent's does not: the parent's hit. */
	CHECK_OK(sc_uncharge(fd, hb, 424 * K, &c));
	CHECK_ERR(charge_in(hb, 768 * K, &c), EDQUOT);
	CHECK_EQ(NODE_U64(KEY, p, "max_hits"), 3);
	CHECK_EQ(NODE_U64(KEY, b, "max_hits"), 0);
	/* The parent has room, the child's max is what binds. */
	CHECK_OK(sc_uncharge(fd, ha, 600 * K, &c));
	CHECK_OK(sc_status(fd, hb, &st));
	CHECK_EQ(st.headroom, 768 * K);
	CHECK_OK(charge_in(hb, 768 * K, &c));
	CHECK_ERR(charge_in(hb, 1, &c), EDQUOT);
	CHECK_EQ(NODE_U64(KEY, b, "max_hits"), 1);
	CHECK_EQ(NODE_U64(KEY, p, "max_hits"), 3);
	CHECK_OK(sc_status(fd, ha, &st));
	CHECK_EQ(st.headroom, 256 * K);

	/* The capacity binds a group with no budget ... */
	CHECK_OK(charge_in(ho, 1280 * K, &c));
	CHECK_EQ(DEV_U64(KEY, "used"), 2 * SC_MIB);
	CHECK_ERR(charge_in(ho, 1, &c), ENOSPC);
	/* ... and one with room left under its max. */
	CHECK_ERR(charge_in(ha, 1, &c), ENOSPC);
	CHECK_EQ(HOLDER_CHARGE(fd, ha), 0);
	CHECK_EQ(DEV_U64(KEY, "capacity_hits"), 2);
	CHECK_EQ(NODE_U64(KEY, o, "max_hits"), 0);
	CHECK_EQ(NODE_U64(KEY, o, "denials"), 1);
	CHECK_EQ(DEV_U64(KEY, "denials"), 6);
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "denials"), 6);
	CHECK_OK(sc_status(fd, ha, &st));
	CHECK_EQ(st.headroom, 0);
	CHECK_EQ(st.device_used, 2 * SC_MIB);

	/* current sums up the tree. */
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "current"), 2 * SC_MIB);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 768 * K);
	CHECK_EQ(NODE_U64(KEY, b, "current"), 768 * K);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 0);
	CHECK_EQ(NODE_U64(KEY, o, "current"), 1280 * K);

	/*
	 * Guarantees: P min=1M under the root (whose effective min is the
	 * capacity, 2M); A and B ask 1M each under P's 1M: refused, unless
	 * said to overcommit: then 512K each, and P shows it.
	 */
	CHECK_OK(sc_set_budget(KEY, P " min=1M"));
	CHECK_OK(sc_set_budget(KEY, A " min=1M"));
	/* B's max is 768K: a min above it is refused */
	CHECK_EQ(sc_set_budget(KEY, B " min=1M"), -EINVAL);
	CHECK_EQ(sc_set_budget(KEY, B " max=1M min=1M"), -ENOSPC);
	CHECK_EQ(NODE_U64(KEY, b, "min"), 0);
	CHECK_EQ(NODE_U64(KEY, b, "max"), 768 * K);
	CHECK_EQ(NODE_U64(KEY, p, "overcommitted"), 0);
	CHECK_OK(sc_set_budget(KEY, B " max=1M min=1M overcommit"));
	CHECK_EQ(NODE_U64(KEY, p, "overcommitted"), 1);
	CHECK_EQ(NODE_U64(KEY, p, "claimed"), 2 * SC_MIB);
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "effective_min"), 2 * SC_MIB);
	CHECK_EQ(NODE_U64(KEY, p, "min"), SC_MIB);
	CHECK_EQ(NODE_U64(KEY, p, "max"), SC_MIB);	/* min= kept max */
	CHECK_EQ(NODE_U64(KEY, p, "effective_min"), SC_MIB);
	CHECK_EQ(NODE_U64(KEY, a, "effective_min"), 512 * K);
	CHECK_EQ(NODE_U64(KEY, b, "effective_min"), 512 * K);
	CHECK_EQ(NODE_U64(KEY, o, "effective_min"), 0);
	CHECK_EQ(NODE_U64(KEY, b, "borrowed"), 256 * K);
	CHECK_EQ(NODE_U64(KEY, a, "borrowed"), 0);
	CHECK_EQ(NODE_U64(KEY, o, "borrowed"), 1280 * K);
	CHECK_OK(sc_status(fd, hb, &st));
	CHECK_EQ(st.node_min, SC_MIB);
	CHECK_EQ(st.node_effective_min, 512 * K);

	/* Budgets are per device: P's max on KEY does not bind KEY2. */
	hd2 = holder_in(D, KEY2);
	CHECK_OK(charge_in(hd2, 5 * SC_MIB, &c));
	CHECK_EQ(NODE_U64(KEY2, p, "current"), 5 * SC_MIB);
	CHECK_EQ(NODE_U64(KEY2, p, "max"), NXQ_UNLIMITED);
	CHECK_EQ(DEV_U64(KEY, "used"), 2 * SC_MIB);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 768 * K);
	CHECK_OK(sc_set_budget(KEY2, P " max=5M"));
	CHECK_ERR(charge_in(hd2, 1, &c), EDQUOT);
	CHECK_EQ(NODE_U64(KEY2, p, "max_hits"), 1);
	CHECK_EQ(NODE_U64(KEY, p, "max_hits"), 3);

	/* close() empties every node of both devices. */
	CHECK_OK(sc_close(fd));
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY2, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "current"), 0);
	CHECK_EQ(NODE_U64(KEY, p, "current"), 0);
	CHECK_EQ(NODE_U64(KEY, b, "current"), 0);
	CHECK_EQ(NODE_U64(KEY2, p, "current"), 0);
}

TEST_HARNESS_MAIN
