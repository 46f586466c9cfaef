// SPDX-License-Identifier: GPL-2.0
/*
 * atk_priv_sysfs: a tenant cannot read its neighbours' budget nodes in
 * sysfs.
 *
 * Device t-aps with nodes for /atk-ps-a (a tenant's) and /atk-ps-b
 * (another tenant's, with a holder charging 5M).  The tenant (uid 65534,
 * /atk-ps-a) gets EACCES opening every file under nodes/<ID>/ -- its
 * neighbour's, the root's and its own alike (they name cgroups and
 * count usage) -- while the device's aggregate files (capacity, used,
 * holders, denials) stay readable.  Root reads them all.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-aps"
#define CA	"/atk-ps-a"
#define CB	"/atk-ps-b"
#define M	SC_MIB

static int tenant(void *arg)
{
	char dir[256], path[512], buf[256];
	struct dirent *e, *f;
	DIR *d, *dn;
	int n = 0, fd;

	(void)arg;
	tn_tenant(CA);
	snprintf(dir, sizeof(dir), SC_DEVICES "/%s/nodes", KEY);
	d = opendir(dir);
	if (!d)
		FAIL("tenant: opendir %s: %s", dir, sc_errname(errno));
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		dn = opendir(path);
		if (!dn)
			continue;	/* not listable: fine */
		while ((f = readdir(dn))) {
			char file[800];

			if (f->d_name[0] == '.')
				continue;
			snprintf(file, sizeof(file), "%s/%s", path, f->d_name);
			fd = open(file, O_RDONLY);
			if (fd >= 0) {
				ssize_t r = read(fd, buf, sizeof(buf) - 1);

				buf[r > 0 ? r : 0] = 0;
				if (r > 0 && buf[r - 1] == '\n')
					buf[r - 1] = 0;
				FAIL("tenant read nodes/%s/%s = \"%s\"",
				     e->d_name, f->d_name, r >= 0 ? buf : "?");
			}
			if (errno != EACCES)
				FAIL("tenant: open nodes/%s/%s: %s (expected "
				     "EACCES)", e->d_name, f->d_name,
				     sc_errname(errno));
			n++;
		}
		closedir(dn);
	}
	closedir(d);
	CHECK(n >= 3 * 5);
	CHECK_EQ(DEV_U64(KEY, "capacity"), 100 * M);
	CHECK_EQ(DEV_U64(KEY, "used"), 5 * M);
	CHECK_EQ(DEV_U64(KEY, "holders"), 1);
	DEV_U64(KEY, "denials");
	sc_log("tenant: EACCES on all %d node files; device files readable", n);
	return 0;
}

/* The modes of the module's sysfs files: the module only (sc_module_only[]). */
FIXTURE(priv_sysfs) {};

FIXTURE_VARIANT(priv_sysfs) {};

FIXTURE_VARIANT_ADD(priv_sysfs, module) {};

FIXTURE_SETUP(priv_sysfs)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(CA));
	CHECK_OK(sc_cg_create(CB));
	CHECK_OK(sc_set_budget(KEY, CA " max=50M"));
	CHECK_OK(sc_set_budget(KEY, CB " max=50M min=10M"));
}

FIXTURE_TEARDOWN(priv_sysfs)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CA));
	CHECK_OK(sc_cg_remove(CB));
}

TEST_F(priv_sysfs, node_files_roots_only)
{
	struct sc_peer b;

	tn_peer_start(&b, "B", CB, KEY, 0, 1, 1);
	PEER_OK(&b, SC_PEER_CHARGE, 5 * M, 0);
	CHECK_EQ(NODE_U64(KEY, CG_ID(CB), "current"), 5 * M);
	TN_RUN(tenant, NULL);
	CHECK_EQ(NODE_U64(KEY, CG_ID(CB), "current"), 5 * M);
	PEER_STOP(&b);
}

TEST_HARNESS_MAIN
