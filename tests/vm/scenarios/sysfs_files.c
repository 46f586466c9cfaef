// SPDX-License-Identifier: GPL-2.0
/*
 * sysfs_files: prints the module's sysfs tree for tests/sysfs-doc.sh,
 * which compares it with Documentation/ABI/testing/sysfs-kernel-nxquota.
 * Registers a device, gives a cgroup a budget (so that a node exists) and
 * prints every entry under /sys/kernel/nxquota, with the device's key as
 * <KEY> and every node's id (this cgroup's and its parents') as <ID>,
 * between SYSFS-FILES-BEGIN and SYSFS-FILES-END (a node's entries once per
 * node):
 *   SYSFS-FILE /sys/kernel/nxquota/devices/<KEY>/capacity
 *   SYSFS-DIR  /sys/kernel/nxquota/devices/<KEY>/nodes/<ID>/
 * Only fails if the tree cannot be set up or read; what is listed is
 * judged on the host.
 */
#include "scen.h"
#include <dirent.h>

#define KEY	"t-sysfs_files"
#define CG	"/nxq-sysfs_files"

/* Replace the device key and node id path components. */
static void show(const char *path, int dir)
{
	char out[512], comp[256], prev[256] = "";
	const char *p = path;
	size_t o = 0;

	out[0] = 0;
	while (*p) {
		size_t n = strcspn(p + 1, "/") + 1;	/* "/comp" */
		const char *c;

		snprintf(comp, sizeof(comp), "%.*s", (int)n - 1, p + 1);
		c = comp;
		if (!strcmp(comp, KEY))
			c = "<KEY>";
		else if (!strcmp(prev, "nodes") && comp[0] &&
			 strspn(comp, "0123456789") == strlen(comp))
			c = "<ID>";	/* this node's, its parents' (root's) */
		o += snprintf(out + o, sizeof(out) - o, "/%s", c);
		snprintf(prev, sizeof(prev), "%s", comp);
		p += n;
	}
	printf("%s %s%s\n", dir ? "SYSFS-DIR " : "SYSFS-FILE", out, dir ? "/" : "");
}

static int walk(const char *dir)
{
	struct dirent **e;
	char path[512];
	struct stat st;
	int n, i;

	n = scandir(dir, &e, NULL, alphasort);
	if (n < 0)
		return sc_errno();
	for (i = 0; i < n; i++) {
		if (e[i]->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e[i]->d_name);
		if (lstat(path, &st) < 0)
			return sc_errno();
		show(path, S_ISDIR(st.st_mode));
		if (S_ISDIR(st.st_mode))
			CHECK_OK(walk(path));
		free(e[i]);
	}
	free(e);
	return 0;
}

/* Lists the module's sysfs files: the module only (sc_module_only[]). */
FIXTURE(sysfs_files) {};

FIXTURE_VARIANT(sysfs_files) {};

FIXTURE_VARIANT_ADD(sysfs_files, module) {};

FIXTURE_SETUP(sysfs_files)
{
	CHECK_OK(sc_dev_register_open(KEY, "1G"));
	CHECK_OK(sc_cg_create(CG));
	CHECK_OK(sc_set_budget(KEY, CG " max=100M min=10M"));
}

FIXTURE_TEARDOWN(sysfs_files)
{
	CHECK_OK(sc_clear_budget(KEY, CG));
	CHECK_OK(sc_cg_remove(CG));
	CHECK_OK(sc_dev_unregister(KEY));
}

TEST_F(sysfs_files, list_every_file)
{
	uint64_t id;

	id = CG_ID(CG);
	CHECK(sc_node_exists(KEY, id));
	printf("SYSFS-FILES-BEGIN\n");
	CHECK_OK(walk(SC_SYSFS));
	printf("SYSFS-FILES-END\n");
	fflush(stdout);
}

TEST_HARNESS_MAIN
