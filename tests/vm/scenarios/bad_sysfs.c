// SPDX-License-Identifier: GPL-2.0
/*
 * bad_sysfs: the root-only sysfs files against malformed input, each answer
 * checked against Documentation/ABI/testing/sysfs-kernel-nxquota (a
 * zero-length write never reaches the module, so "\n" is the empty line): bad
 * register lines and sizes (EINVAL), duplicate keys (EEXIST), unknown keys
 * (ENOENT), unregister with holders (EBUSY), set_budget on no cgroup
 * (ENOENT) or with a malformed line (EINVAL), bad values in capacity, max
 * and min (EINVAL), writes to read-only files (EACCES).  Every refused
 * write leaves what it aimed at as it was; the accepted forms (suffixes,
 * a trailing newline, 63-character keys, 2^64-1) read back exactly.
 *
 * Written with the harness's fixtures (harness.h): the fixture makes the
 * cgroup; a TEST_F per step main() took, each starting from what the
 * steps before it left: registration from nothing, capacity from the
 * 1M device registration leaves, budgets from the 2M one capacity
 * leaves, read_only_files and busy_and_removal from that device with
 * the node budgets leaves (max 4K, min 2K), not_a_cgroup from nothing
 * again.  The teardown removes the device if a test left it, and the
 * cgroup.  About the module's sysfs files (sc_module_only[]): its only
 * variant is the module's.
 */
#include "scen.h"

#define KEY	"t-bs"
#define CG	"/nxq-bs"
#define REG	SC_DEVICES "/register"
#define UNREG	SC_DEVICES "/unregister"

/* A written line must be refused with err. */
#define REFUSE(path, line, err) do {					\
	int _r = sc_write(path, line);					\
	if (_r != -(err))						\
		FAIL("write \"%s\" to %s: expected %s, got %s", line,	\
		     path + strlen(SC_SYSFS) + 1, sc_errname(err),	\
		     sc_rcname(_r));					\
} while (0)

static int count_devices(void)
{
	struct dirent *e;
	DIR *d = opendir(SC_DEVICES);
	int n = 0;

	CHECK(d != NULL);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && e->d_type == DT_DIR)
			n++;
	closedir(d);
	return n;
}

/* The device as the steps before a test left it. */
static void device_of(const char *cap, uint64_t bytes)
{
	CHECK_OK(sc_dev_register_open(KEY, cap));
	CHECK_EQ(DEV_U64(KEY, "capacity"), bytes);
}

/* ... and the node budgets() leaves: max 4K, min 2K. */
static void node_of(uint64_t cgid)
{
	CHECK_OK(sc_set_budget(KEY, CG " max=4K min=2Ki"));
	CHECK(sc_node_exists(KEY, cgid));
	CHECK_EQ(NODE_U64(KEY, cgid, "max"), 4 * SC_KIB);
	CHECK_EQ(NODE_U64(KEY, cgid, "min"), 2 * SC_KIB);
}

/* The module's sysfs files: the module only (sc_module_only[]). */
FIXTURE(bad_sysfs) {
	uint64_t cgid;
};

FIXTURE_VARIANT(bad_sysfs) {};

FIXTURE_VARIANT_ADD(bad_sysfs, module) {};

FIXTURE_SETUP(bad_sysfs)
{
	CHECK_OK(sc_cg_create(CG));
	self->cgid = CG_ID(CG);
}

FIXTURE_TEARDOWN(bad_sysfs)
{
	if (sc_dev_exists(KEY))
		CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CG));
}

TEST_F(bad_sysfs, registration)
{
	static const char *const bad[] = {
		"\n", " ", KEY, KEY " ", KEY " abc", KEY " 1X", KEY " -1",
		KEY " 1Q", KEY " 1Xi", KEY " 1i", KEY " Gi", KEY " 1.5G", KEY " M", KEY " 1M extra",
		KEY " 18446744073709551616", KEY " 16777216T",
		"bad/key 1M", "a$b 1M", "t bs 1M", " 1M",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 1M",
		". 1M", ".. 1M", KEY " 1M 0:0", KEY " 1M 1", KEY " 1M 1:",
		KEY " 1M :1", KEY " 1M 1:2:3", KEY " 1M 4096:0",
		KEY " 1M 1:1048576", KEY " 1M 1:3 x",
	};
	static const struct {
		const char *cap;
		uint64_t bytes;
	} good[] = {
		{ "12345", 12345 }, { "3K", 3 * SC_KIB }, { "7M", 7 * SC_MIB },
		{ "5G", 5 * SC_GIB }, { "2T", 2 * 1024 * SC_GIB },
		{ "4Gi", 4 * SC_GIB }, { "1P", 1ULL << 50 }, { "3Ki", 3072 },
		{ "16777215T", 16777215ULL << 40 },
		{ "18446744073709551615", UINT64_MAX },
	};
	char key64[64], line[128];
	int n = count_devices();
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		REFUSE(REG, bad[i], EINVAL);
	CHECK_EQ(count_devices(), n);

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK_OK(sc_dev_register_open(KEY, good[i].cap));
		if (DEV_U64(KEY, "capacity") != good[i].bytes)
			FAIL("capacity \"%s\" reads %" PRIu64 ", expected %"
			     PRIu64, good[i].cap, DEV_U64(KEY, "capacity"),
			     good[i].bytes);
		CHECK_OK(sc_dev_unregister(KEY));
	}

	/* 63 characters of every allowed kind is a key; echo's newline is fine. */
	memset(key64, 0, sizeof(key64));
	for (i = 0; i < 63; i++)
		key64[i] = "aZ09._:-"[i % 8];
	snprintf(line, sizeof(line), "%s 1M\n", key64);
	CHECK_OK(sc_write(REG, line));
	CHECK(sc_dev_exists(key64));
	CHECK_EQ(DEV_U64(key64, "capacity"), SC_MIB);
	snprintf(line, sizeof(line), "%s\n", key64);
	CHECK_OK(sc_write(UNREG, line));
	CHECK(!sc_dev_exists(key64));

	/* Duplicates are refused and change nothing. */
	CHECK_OK(sc_dev_register_open(KEY, "1M"));
	REFUSE(REG, KEY " 2M", EEXIST);
	CHECK_EQ(DEV_U64(KEY, "capacity"), SC_MIB);
	CHECK_EQ(count_devices(), n + 1);

	REFUSE(UNREG, "t-no-such-device", ENOENT);
	REFUSE(UNREG, KEY "x", ENOENT);
	CHECK(sc_dev_exists(KEY));
}

TEST_F(bad_sysfs, capacity)
{
	static const char *const bad[] = { "\n", "abc", "1Q", "-5", "1M 2M",
					   "18446744073709551616" };
	const char *path;
	size_t i;

	device_of("1M", SC_MIB);
	path = sc_dev_path(KEY, "capacity");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		REFUSE(path, bad[i], EINVAL);
	CHECK_EQ(DEV_U64(KEY, "capacity"), SC_MIB);
	CHECK_OK(sc_write(path, "2M\n"));
	CHECK_EQ(DEV_U64(KEY, "capacity"), 2 * SC_MIB);
}

TEST_F(bad_sysfs, budgets)
{
	static const char *const bad[] = {
		"\n", " ", CG " mx=1M", CG " max=abc", CG " max=", CG " max",
		CG " min=1Q", CG " max=1M junk", CG " max=-1",
		CG " max=18446744073709551616",
	};
	uint64_t cgid = self->cgid;
	const char *sb;
	size_t i;

	device_of("2M", 2 * SC_MIB);
	sb = sc_dev_path(KEY, "set_budget");
	REFUSE(sb, "/nxq-no-such-cgroup max=1M", ENOENT);
	REFUSE(sb, CG "/no-such-child max=1M", ENOENT);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		REFUSE(sb, bad[i], EINVAL);
	/* None of that created the node. */
	CHECK(!sc_node_exists(KEY, cgid));

	CHECK_OK(sc_set_budget(KEY, CG " max=1M min=512K\n"));
	CHECK(sc_node_exists(KEY, cgid));
	CHECK_EQ(NODE_U64(KEY, cgid, "max"), SC_MIB);
	CHECK_EQ(NODE_U64(KEY, cgid, "min"), 512 * SC_KIB);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		REFUSE(sb, bad[i], EINVAL);
	CHECK_EQ(NODE_U64(KEY, cgid, "max"), SC_MIB);
	CHECK_EQ(NODE_U64(KEY, cgid, "min"), 512 * SC_KIB);

	CHECK_OK(sc_set_budget(KEY, CG " max=max"));
	CHECK_EQ(NODE_U64(KEY, cgid, "max"), NXQ_UNLIMITED);
	CHECK_OK(sc_set_budget(KEY, CG " max=18446744073709551615"));
	CHECK_EQ(NODE_U64(KEY, cgid, "max"), NXQ_UNLIMITED);
	/* A min above the max is refused either way round. */
	REFUSE(sb, CG " max=3K", EINVAL);
	CHECK_EQ(NODE_U64(KEY, cgid, "max"), NXQ_UNLIMITED);
	CHECK_OK(sc_set_budget(KEY, CG " max=3K min=2Ki"));
	CHECK_EQ(NODE_U64(KEY, cgid, "max"), 3 * SC_KIB);

	/* The node's own files. */
	REFUSE(sc_node_path(KEY, cgid, "max"), "abc", EINVAL);
	REFUSE(sc_node_path(KEY, cgid, "max"), "\n", EINVAL);
	REFUSE(sc_node_path(KEY, cgid, "max"), "-1", EINVAL);
	REFUSE(sc_node_path(KEY, cgid, "max"), "1M 2M", EINVAL);
	REFUSE(sc_node_path(KEY, cgid, "min"), "abc", EINVAL);
	REFUSE(sc_node_path(KEY, cgid, "min"), "max", EINVAL);
	REFUSE(sc_node_path(KEY, cgid, "max"), "1K", EINVAL);
	REFUSE(sc_node_path(KEY, cgid, "min"), "4K", EINVAL);
	CHECK_EQ(NODE_U64(KEY, cgid, "max"), 3 * SC_KIB);
	CHECK_EQ(NODE_U64(KEY, cgid, "min"), 2 * SC_KIB);
	CHECK_OK(sc_write(sc_node_path(KEY, cgid, "max"), "4K\n"));
	CHECK_EQ(NODE_U64(KEY, cgid, "max"), 4 * SC_KIB);
	CHECK_EQ(NODE_U64(KEY, cgid, "effective_max"), 4 * SC_KIB);
}

/* Files without a write bit refuse writes even from root. */
TEST_F(bad_sysfs, read_only_files)
{
	static const char *const dev[] = { "used", "holders", "denials",
					   "capacity_hits" };
	static const char *const node[] = { "current", "effective_min",
		"effective_max", "claimed", "overcommitted", "borrowed",
		"holders", "max_hits", "denials", "path" };
	uint64_t cgid = self->cgid;
	size_t i;

	device_of("2M", 2 * SC_MIB);
	node_of(cgid);

	CHECK_ERR2(sc_write(SC_SYSFS "/abi_version", "2"), EACCES, EPERM);
	for (i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
		CHECK_ERR2(sc_write(sc_dev_path(KEY, dev[i]), "0"), EACCES,
			   EPERM);
	for (i = 0; i < sizeof(node) / sizeof(node[0]); i++)
		CHECK_ERR2(sc_write(sc_node_path(KEY, cgid, node[i]), "0"),
			   EACCES, EPERM);
	CHECK_EQ(sc_get_u64_at(__FILE__, __LINE__, SC_SYSFS "/abi_version"),
		 NXQ_ABI_VERSION);
}

TEST_F(bad_sysfs, busy_and_removal)
{
	uint64_t cgid = self->cgid, h = 0, c = 0;
	int fd;

	device_of("2M", 2 * SC_MIB);
	node_of(cgid);
	fd = sc_open();
	CHECK_OK(fd);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &h));
	REFUSE(UNREG, KEY, EBUSY);
	CHECK(sc_dev_exists(KEY));
	CHECK_OK(sc_charge(fd, h, 1000, &c));
	CHECK_OK(sc_uncharge(fd, h, 1000, &c));
	CHECK_OK(sc_unregister(fd, h));
	/* No holder left (the file is still open): it can go. */
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK(!sc_dev_exists(KEY));
	CHECK_ERR(sc_register(fd, KEY, SC_EFD, 0, &h), ENODEV);
	CHECK_OK(sc_close(fd));

	/* Registered again, it starts with no budget of before. */
	CHECK_OK(sc_dev_register_open(KEY, "1M"));
	CHECK(!sc_node_exists(KEY, cgid));
	CHECK_OK(sc_set_budget(KEY, CG " max=1M"));
	CHECK_OK(sc_clear_budget(KEY, CG "\n"));
	CHECK(!sc_node_exists(KEY, cgid));
	CHECK_OK(sc_dev_unregister(KEY));
}

/* A path that exists but is a file of a cgroup is no cgroup either. */
TEST_F(bad_sysfs, not_a_cgroup)
{
	CHECK_OK(sc_dev_register_open(KEY, "1M"));
	REFUSE(sc_dev_path(KEY, "set_budget"), "/cgroup.procs max=1M", ENOENT);
	REFUSE(sc_dev_path(KEY, "set_budget"), CG "/cgroup.procs max=1M",
	       ENOENT);
	CHECK_OK(sc_dev_unregister(KEY));
}

TEST_HARNESS_MAIN
