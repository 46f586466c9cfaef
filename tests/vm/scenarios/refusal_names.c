// SPDX-License-Identifier: GPL-2.0
/*
 * refusal_names: a refused charge names what refused it in the same
 * reply (struct nxq_charge version 1, issue 30 item 2): the node's id,
 * its level, its limit, min and usage, why, and its path as the caller's
 * cgroup namespace shows it -- never a path above that namespace's root.
 *
 * Device of 100M.  /rn-p (max 30M) > /rn-p/ns (max 20M) > /rn-p/ns/a
 * (max 10M) and /rn-p/ns/b (none); /rn-p/ns2/c (none); /rn-dev (max 1G).
 * A child enters ns (or ns2), unshares its cgroup namespace there, moves
 * to a leaf, registers and charges:
 *  - in a: 11M is EDQUOT at a, level 0, "/a", limit 10M;
 *  - in b: 21M is EDQUOT at ns, level 1, "/" (its namespace's root);
 *  - in ns2/c: 31M is EDQUOT at /rn-p, level 2, no path (above the
 *    root): the buffer is left as it was, path_len 0, the id given;
 * and root, in the initial namespace, in a: "/rn-p/ns/a".  In /rn-dev,
 * 101M is ENOSPC at the device: NXQ_LEVEL_DEVICE, capacity, no id or
 * path.  A caller of version 0 gets the errno and its struct untouched;
 * a granted charge's refusal fields are 0; a path buffer without a size
 * is EINVAL.
 *
 * Seen failing before the fix: the module copied nothing back on a
 * refusal (refused_reason 0 where NXQ_REFUSED_MAX was expected).
 */
#define _GNU_SOURCE
#include <sched.h>

#include "scen.h"

#define KEY	"t-rn"
#define CP	"/rn-p"
#define CNS	CP "/ns"
#define CA	CNS "/a"
#define CB	CNS "/b"
#define CNS2	CP "/ns2"
#define CC	CNS2 "/c"
#define CDEV	"/rn-dev"
#define M	SC_MIB
#define UNTOUCHED "untouched"

/* One VER1 charge of @bytes by a new holder of this process; its struct. */
static long charge_v1(uint64_t bytes, struct nxq_charge *c, char *path,
		      size_t size)
{
	uint64_t h;
	long rc;
	int fd = sc_open();

	ASSERT_OK(fd);
	ASSERT_OK(sc_register(fd, KEY, SC_EFD, 0, &h));
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->flags = NXQ_CHARGE_NOWAIT;
	c->holder_id = h;
	c->bytes = bytes;
	c->path = (uintptr_t)path;
	c->path_size = size;
	rc = sc_ioctl(fd, NXQ_IOC_CHARGE, c);
	ASSERT_OK(sc_close(fd));
	return rc;
}

struct want {
	const char *root, *leaf;	/* the namespace's root, where to charge */
	uint64_t bytes;
	uint32_t level;
	uint64_t id, limit;
	const char *path;		/* NULL: not named */
};

/* In a child: a cgroup namespace rooted at w->root, then the charge. */
static int in_namespace(void *arg)
{
	const struct want *w = arg;
	struct nxq_charge c;
	char path[256] = UNTOUCHED;

	ASSERT_OK(sc_cg_enter(w->root));
	ASSERT_OK(unshare(CLONE_NEWCGROUP) ? -errno : 0);
	ASSERT_OK(sc_cg_enter(w->leaf));
	ASSERT_ERR(charge_v1(w->bytes, &c, path, sizeof(path)), EDQUOT);
	ASSERT_EQ(c.refused_reason, NXQ_REFUSED_MAX);
	ASSERT_EQ(c.refused_level, w->level);
	ASSERT_EQ(c.refused_id, w->id);
	ASSERT_EQ(c.refused_limit, w->limit);
	ASSERT_EQ(c.refused_min, 0);
	ASSERT_EQ(c.refused_usage, 0);
	ASSERT_EQ(c.charged, 0);
	if (w->path) {
		ASSERT_STREQ(path, w->path);
		ASSERT_EQ(c.path_len, strlen(w->path));
	} else {
		ASSERT_STREQ(path, UNTOUCHED);
		ASSERT_EQ(c.path_len, 0);
	}
	return TH_PASS;
}

FIXTURE(names) {
	int unused;
};

FIXTURE_VARIANT(names) {};

FIXTURE_VARIANT_ADD(names, module) {};

FIXTURE_VARIANT_ADD(names, daemon) {};

FIXTURE_SETUP(names)
{
	ASSERT_OK(sc_dev_register_open(KEY, "100M"));
	ASSERT_OK(sc_cg_create(CP));
	ASSERT_OK(sc_cg_create(CNS));
	ASSERT_OK(sc_cg_create(CA));
	ASSERT_OK(sc_cg_create(CB));
	ASSERT_OK(sc_cg_create(CNS2));
	ASSERT_OK(sc_cg_create(CC));
	ASSERT_OK(sc_cg_create(CDEV));
	ASSERT_OK(sc_set_budget(KEY, CP " max=30M"));
	ASSERT_OK(sc_set_budget(KEY, CNS " max=20M"));
	ASSERT_OK(sc_set_budget(KEY, CA " max=10M"));
	ASSERT_OK(sc_set_budget(KEY, CDEV " max=1G"));
}

FIXTURE_TEARDOWN(names)
{
	ASSERT_OK(sc_cg_enter("/"));
	ASSERT_EQ(DEV_U64(KEY, "used"), 0);
	ASSERT_EQ(DEV_U64(KEY, "holders"), 0);
	ASSERT_OK(sc_dev_unregister(KEY));
	ASSERT_OK(sc_cg_remove(CC));
	ASSERT_OK(sc_cg_remove(CNS2));
	ASSERT_OK(sc_cg_remove(CA));
	ASSERT_OK(sc_cg_remove(CB));
	ASSERT_OK(sc_cg_remove(CNS));
	ASSERT_OK(sc_cg_remove(CP));
	ASSERT_OK(sc_cg_remove(CDEV));
}

TEST_F(names, inside_a_cgroup_namespace)
{
	struct want leaf = { CNS, CA, 11 * M, 0, CG_ID(CA), 10 * M, "/a" };
	struct want root = { CNS, CB, 21 * M, 1, CG_ID(CNS), 20 * M, "/" };
	struct want above = { CNS2, CC, 31 * M, 2, CG_ID(CP), 30 * M, NULL };

	CHECK_CHILD_OK(th_spawn(in_namespace, &leaf));
	CHECK_CHILD_OK(th_spawn(in_namespace, &root));
	CHECK_CHILD_OK(th_spawn(in_namespace, &above));
}

TEST_F(names, initial_namespace_and_device)
{
	struct nxq_charge c;
	char path[256] = UNTOUCHED;

	ASSERT_OK(sc_cg_enter(CA));
	ASSERT_ERR(charge_v1(11 * M, &c, path, sizeof(path)), EDQUOT);
	ASSERT_EQ(c.refused_level, 0);
	ASSERT_EQ(c.refused_id, CG_ID(CA));
	ASSERT_STREQ(path, CA);

	/* a path that does not fit its buffer is not written, not cut */
	strcpy(path, UNTOUCHED);
	ASSERT_ERR(charge_v1(11 * M, &c, path, 4), EDQUOT);
	ASSERT_EQ(c.refused_reason, NXQ_REFUSED_MAX);
	ASSERT_EQ(c.path_len, 0);
	ASSERT_STREQ(path, UNTOUCHED);

	/* the device's capacity: no node to name */
	ASSERT_OK(sc_cg_enter(CDEV));
	ASSERT_ERR(charge_v1(101 * M, &c, path, sizeof(path)), ENOSPC);
	ASSERT_EQ(c.refused_reason, NXQ_REFUSED_CAPACITY);
	ASSERT_EQ(c.refused_level, NXQ_LEVEL_DEVICE);
	ASSERT_EQ(c.refused_id, 0);
	ASSERT_EQ(c.refused_limit, 100 * M);
	ASSERT_EQ(c.path_len, 0);
	ASSERT_STREQ(path, UNTOUCHED);

	/* granted: nothing refused, whatever came in */
	ASSERT_OK(charge_v1(M, &c, path, sizeof(path)));
	ASSERT_EQ(c.charged, M);
	ASSERT_EQ(c.refused_reason, 0);
	ASSERT_EQ(c.refused_level, 0);
	ASSERT_EQ(c.refused_id, 0);
	ASSERT_EQ(c.refused_limit, 0);
}

TEST_F(names, version_0_and_bad_arguments)
{
	struct nxq_charge c;
	uint64_t h;
	int fd;

	ASSERT_OK(sc_cg_enter(CA));
	fd = sc_open();
	ASSERT_OK(fd);
	ASSERT_OK(sc_register(fd, KEY, SC_EFD, 0, &h));
	/* version 0: the errno, and its struct as it was */
	memset(&c, 0, sizeof(c));
	c.size = NXQ_CHARGE_SIZE_VER0;
	c.holder_id = h;
	c.bytes = 11 * M;
	c.charged = 0x5a5a;
	ASSERT_ERR(sc_ioctl(fd, NXQ_IOC_CHARGE, &c), EDQUOT);
	ASSERT_EQ(c.charged, 0x5a5a);
	/* a buffer without a size, a size without a buffer */
	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	c.holder_id = h;
	c.bytes = M;
	c.path = 0x1000;
	ASSERT_ERR(sc_ioctl(fd, NXQ_IOC_CHARGE, &c), EINVAL);
	c.path = 0;
	c.path_size = 64;
	ASSERT_ERR(sc_ioctl(fd, NXQ_IOC_CHARGE, &c), EINVAL);
	/* an uncharge takes no refusal fields */
	c.path_size = 0;
	ASSERT_OK(sc_ioctl(fd, NXQ_IOC_CHARGE, &c));
	c.refused_id = 1;
	ASSERT_ERR(sc_ioctl(fd, NXQ_IOC_UNCHARGE, &c), EINVAL);
	c.refused_id = 0;
	c.charged = 0;
	ASSERT_OK(sc_ioctl(fd, NXQ_IOC_UNCHARGE, &c));
	ASSERT_OK(sc_close(fd));
}

TEST_HARNESS_MAIN
