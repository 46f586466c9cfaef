// SPDX-License-Identifier: GPL-2.0
/*
 * dmem_coexist: nxquota beside the dmem cgroup controller and a driver
 * that charges it (Documentation/dmem.rst).  A fake driver
 * (tests/vm/dmem-driver/, /lib/nxq_dmem_fake.ko in the VM) registers a
 * dmem region and charges the writer's cgroup per write, as amdgpu, xe
 * and nouveau do when they place a buffer.  In one cgroup, with an nxquota
 * max of 16M and a dmem.max of 8M:
 *  - the two ledgers never see each other's charges;
 *  - each limit refuses on its own path (EDQUOT from nxquota, EAGAIN from
 *    dmem_cgroup_try_charge() in the driver), the lower one first;
 *  - with dmem.max raised, nxquota's max binds its charges while the
 *    driver may still charge dmem past it (what nxquota calls
 *    unattributed);
 *  - dmem.capacity is not a limit: the controller charges past it;
 *  - closing either side's file gives back only that side's charge.
 * Skipped on a kernel without the dmem controller or without the fake
 * driver (tests/vm/run.sh builds it only for kernels with
 * CONFIG_CGROUP_DMEM; make check-dmem boots one).
 */
#include "scen.h"

#define KEY	"t-dmem"
#define CG	"/nxq-dmem"
#define REGION	"nxq-fake/vram0"
#define FAKE_KO	"/lib/nxq_dmem_fake.ko"
#define FAKE	"/dev/nxq-dmem-fake"

/* REGION's value in a nested-keyed dmem file: bytes, or UINT64_MAX for "max". */
static uint64_t dmem_get_at(const char *file, int line, const char *path)
{
	char buf[4096], *p, *v;
	int rc = sc_read_raw(path, buf, sizeof(buf));

	if (rc < 0)
		sc_fail_at(file, line, "read %s: %s", path, sc_errname(-rc));
	for (p = strtok(buf, "\n"); p; p = strtok(NULL, "\n")) {
		v = strchr(p, ' ');
		if (!v || strncmp(p, REGION, v - p) || (size_t)(v - p) != strlen(REGION))
			continue;
		if (!strcmp(v + 1, "max"))
			return UINT64_MAX;
		return strtoull(v + 1, NULL, 10);
	}
	sc_fail_at(file, line, "%s has no line for %s", path, REGION);
	return 0;
}
#define DMEM(cg, f) dmem_get_at(__FILE__, __LINE__, sc_cg_path(cg, f))

/* The fake driver places a buffer of n bytes: 0 or -errno. */
static int drv_alloc(int fd, uint64_t n)
{
	char s[32];
	int len = snprintf(s, sizeof(s), "%" PRIu64, n);

	return write(fd, s, len) == len ? 0 : -errno;
}

/* The two ledgers side by side: the module and nxquotad alike. */
FIXTURE(dmem_coexist) {
	uint64_t cgid;
};

FIXTURE_VARIANT(dmem_coexist) {};

FIXTURE_VARIANT_ADD(dmem_coexist, module) {};

FIXTURE_VARIANT_ADD(dmem_coexist, daemon) {};

FIXTURE_SETUP(dmem_coexist)
{
	char ctl[256];

	if (sc_read_raw(sc_cg_path("/", "cgroup.controllers"), ctl, sizeof(ctl)) < 0 ||
	    !strstr(ctl, "dmem"))
		SKIP("the kernel has no dmem cgroup controller (CONFIG_CGROUP_DMEM)");
	if (access(FAKE_KO, R_OK))
		SKIP("no %s (built only for kernels with CONFIG_CGROUP_DMEM)", FAKE_KO);
	if (system("insmod " FAKE_KO " size=67108864"))
		FAIL("insmod %s failed", FAKE_KO);
	CHECK_EQ(DMEM("/", "dmem.capacity"), 64 * SC_MIB);

	CHECK_OK(sc_dev_register_open(KEY, "64M"));
	CHECK_OK(sc_cg_create(CG));
	self->cgid = CG_ID(CG);
	CHECK_OK(sc_set_budget(KEY, CG " max=16M"));
	CHECK_OK(sc_writef(sc_cg_path(CG, "dmem.max"), "%s %llu", REGION, 8 * SC_MIB));
}

FIXTURE_TEARDOWN(dmem_coexist)
{
	CHECK_OK(sc_clear_budget(KEY, CG));
	CHECK_OK(sc_cg_remove(CG));
	CHECK_OK(sc_dev_unregister(KEY));
	if (system("rmmod nxq_dmem_fake"))
		FAIL("rmmod nxq_dmem_fake failed");
}

TEST_F(dmem_coexist, two_ledgers_side_by_side)
{
	uint64_t cgid = self->cgid;
	uint64_t h = 0, charged = 0;
	int fd, drv;

	CHECK_EQ(DMEM(CG, "dmem.max"), 8 * SC_MIB);
	CHECK_EQ(DMEM(CG, "dmem.current"), 0);

	CHECK_OK(sc_cg_enter(CG));
	fd = sc_open();
	CHECK_OK(fd);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &h));
	drv = open(FAKE, O_WRONLY | O_CLOEXEC);
	CHECK_OK(drv < 0 ? -errno : 0);

	/* The runtime charges nxquota, then the driver charges dmem: 4M each. */
	CHECK_OK(sc_charge(fd, h, 4 * SC_MIB, &charged));
	CHECK_OK(drv_alloc(drv, 4 * SC_MIB));
	CHECK_EQ(NODE_U64(KEY, cgid, "current"), 4 * SC_MIB);
	CHECK_EQ(DMEM(CG, "dmem.current"), 4 * SC_MIB);

	/* dmem.max (8M) is the lower: nxquota grants 5M more, the driver refuses it. */
	CHECK_OK(sc_charge(fd, h, 5 * SC_MIB, &charged));
	CHECK_EQ(charged, 9 * SC_MIB);
	CHECK_ERR(drv_alloc(drv, 5 * SC_MIB), EAGAIN);
	CHECK_EQ(DMEM(CG, "dmem.current"), 4 * SC_MIB);
	/* nxquota does not see the driver's refusal: no denial, no ticket. */
	CHECK_EQ(NODE_U64(KEY, cgid, "denials"), 0);
	CHECK_EQ(NODE_U64(KEY, cgid, "current"), 9 * SC_MIB);
	/* The runtime gives its charge back after the driver failed. */
	CHECK_OK(sc_uncharge(fd, h, 5 * SC_MIB, &charged));
	CHECK_EQ(charged, 4 * SC_MIB);

	/* nxquota's max (16M) refuses before the driver is called. */
	CHECK_ERR(sc_charge(fd, h, 13 * SC_MIB, &charged), EDQUOT);
	CHECK_EQ(NODE_U64(KEY, cgid, "denials"), 1);
	CHECK_EQ(DMEM(CG, "dmem.current"), 4 * SC_MIB);

	/* dmem.max lifted: nxquota's max binds; the driver can charge past it. */
	CHECK_OK(sc_writef(sc_cg_path(CG, "dmem.max"), "%s max", REGION));
	CHECK_EQ(DMEM(CG, "dmem.max"), UINT64_MAX);
	CHECK_OK(sc_charge(fd, h, 12 * SC_MIB, &charged));
	CHECK_EQ(charged, 16 * SC_MIB);
	CHECK_OK(drv_alloc(drv, 12 * SC_MIB));
	CHECK_ERR(sc_charge(fd, h, 1, &charged), EDQUOT);
	CHECK_OK(drv_alloc(drv, 4 * SC_MIB));
	CHECK_EQ(DMEM(CG, "dmem.current"), 20 * SC_MIB);
	CHECK_EQ(NODE_U64(KEY, cgid, "current"), 16 * SC_MIB);
	/*
	 * dmem.capacity is the region's size as the driver registered it,
	 * not a limit: the controller charges past it (the driver's own
	 * allocator is what runs out of room).
	 */
	CHECK_OK(drv_alloc(drv, 45 * SC_MIB));
	CHECK_EQ(DMEM(CG, "dmem.current"), 65 * SC_MIB);
	CHECK_EQ(DMEM("/", "dmem.current"), 65 * SC_MIB);

	/* Each close gives back its own ledger's charge only. */
	close(drv);
	CHECK_EQ(DMEM(CG, "dmem.current"), 0);
	CHECK_EQ(DMEM("/", "dmem.current"), 0);
	CHECK_EQ(NODE_U64(KEY, cgid, "current"), 16 * SC_MIB);
	CHECK_OK(sc_close(fd));
	/* nxquotad sees the close when it reads the hang-up: wait for it. */
	WAIT_U64(sc_node_path(KEY, cgid, "current"), 0);

	CHECK_OK(sc_cg_enter("/"));
}

TEST_HARNESS_MAIN
