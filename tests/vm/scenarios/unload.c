// SPDX-License-Identifier: GPL-2.0
/*
 * unload: the module cannot be removed while any process has /dev/nxquota
 * open (with a charged holder, or with nothing registered), and the refusal
 * disturbs nothing: the holder goes on charging.  Once the last file is
 * closed it unloads, with a device and budgets still registered and a
 * sysfs file held open (reads from it then fail with ENODEV), taking
 * /dev/nxquota and /sys/kernel/nxquota with it.  Loading it again gives a
 * fresh, empty, working module.
 */
#include <sys/syscall.h>

#include "scen.h"

#define KEY	"t-unload"
#define CG	"/nxq-unload"

static const char *ko;

static int loaded(void)
{
	char buf[16384];
	int n = sc_read("/proc/modules", buf, sizeof(buf));

	if (n < 0)
		FAIL("read /proc/modules: %s", sc_errname(-n));
	return !strncmp(buf, "nxquota ", 8) || strstr(buf, "\nnxquota ");
}

static long rmmod(void)
{
	return syscall(SYS_delete_module, "nxquota", O_NONBLOCK) < 0 ? -errno : 0;
}

static long insmod(void)
{
	int f = open(ko, O_RDONLY | O_CLOEXEC);
	long rc;

	if (f < 0)
		return -errno;
	rc = syscall(SYS_finit_module, f, "", 0) < 0 ? -errno : 0;
	close(f);
	return rc;
}

/* rmmod must be refused (in use) and leave everything in place. */
static void refused(const char *why)
{
	long rc = rmmod();

	if (rc != -EAGAIN && rc != -EBUSY)
		FAIL("rmmod %s: expected EAGAIN (in use), got %s", why,
		     sc_rcname(rc));
	CHECK(loaded());
	CHECK(sc_exists(SC_DEVNODE));
	CHECK(sc_dev_exists(KEY));
}

static int p2c[2], c2p[2];

static int holder(void *arg)
{
	uint64_t h = 0, c = 0;
	int fd;

	close(p2c[1]);
	close(c2p[0]);
	(void)arg;
	CHECK_OK(sc_cg_enter(CG));
	fd = sc_open();
	CHECK_OK(fd);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &h));
	CHECK_OK(sc_charge(fd, h, 100 * SC_KIB, &c));
	CHECK_OK(sc_send(c2p[1], c));
	RECV(p2c[0]);
	/* After the refused rmmod: still a working holder. */
	CHECK_OK(sc_charge(fd, h, 100 * SC_KIB, &c));
	CHECK_OK(sc_send(c2p[1], c));
	pause();
	return 0;
}

/* Loads and unloads the module: the module only (sc_module_only[]). */
FIXTURE(unload) {
	uint64_t cgid;
};

FIXTURE_VARIANT(unload) {};

FIXTURE_VARIANT_ADD(unload, module) {};

FIXTURE_SETUP(unload)
{
	ko = getenv("NXQ_KO") ? getenv("NXQ_KO") : "/lib/nxquota.ko";
	if (!sc_exists(ko))
		SKIP("no module file at %s to load again", ko);
	CHECK(loaded());

	CHECK_OK(sc_dev_register_open(KEY, "1M"));
	CHECK_OK(sc_cg_create(CG));
	self->cgid = CG_ID(CG);
	CHECK_OK(sc_set_budget(KEY, CG " max=512K"));
	CHECK(pipe(p2c) == 0 && pipe(c2p) == 0);
}

FIXTURE_TEARDOWN(unload)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CG));
}

TEST_F(unload, pinned_then_unloaded_and_fresh)
{
	uint64_t cgid = self->cgid;
	struct nxq_version v;
	uint64_t c;
	char buf[64];
	int fd, stale;
	pid_t pid;
	ssize_t n;

	/* A process with a charged holder pins the module. */
	pid = sc_spawn(holder, NULL);
	close(p2c[0]);	/* a dead child is then EOF, not a timeout */
	close(c2p[1]);
	CHECK_EQ(RECV(c2p[0]), 100 * SC_KIB);
	refused("with a charged holder open");
	CHECK_OK(sc_send(p2c[1], 1));
	c = RECV(c2p[0]);
	CHECK_EQ(c, 200 * SC_KIB);
	CHECK_EQ(NODE_U64(KEY, cgid, "current"), 200 * SC_KIB);
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK_EQ(sc_wait(pid), 128 + SIGKILL);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);

	/* So does a bare open file. */
	fd = sc_open();
	CHECK_OK(fd);
	refused("with /dev/nxquota open, no holder");
	CHECK_OK(sc_close(fd));

	/* Unused: it goes, device, budget, open sysfs file and all. */
	stale = open(sc_dev_path(KEY, "used"), O_RDONLY | O_CLOEXEC);
	CHECK(stale >= 0);
	CHECK_OK(rmmod());
	CHECK(!loaded());
	CHECK(!sc_exists(SC_DEVNODE));
	CHECK(!sc_exists(SC_SYSFS));
	n = pread(stale, buf, sizeof(buf), 0);
	if (n >= 0 || errno != ENODEV)
		FAIL("read of a sysfs file held open over rmmod: %s, "
		     "expected ENODEV", n >= 0 ? "success" : sc_errname(errno));
	close(stale);
	CHECK_ERR(rmmod(), ENOENT);

	/* And comes back fresh. */
	CHECK_OK(insmod());
	CHECK(loaded());
	CHECK(sc_exists(SC_DEVNODE));
	CHECK(!sc_dev_exists(KEY));
	CHECK_EQ(sc_get_u64_at(__FILE__, __LINE__, SC_SYSFS "/abi_version"),
		 NXQ_ABI_VERSION);
	CHECK_ERR(insmod(), EEXIST);
	fd = sc_open();
	CHECK_OK(fd);
	CHECK_OK(sc_version(fd, &v));
	CHECK_EQ(v.abi_version, NXQ_ABI_VERSION);
	CHECK_OK(sc_dev_register_open(KEY, "1M"));
	CHECK_OK(sc_cg_enter(CG));
	{
		uint64_t h = 0;

		CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &h));
		CHECK_OK(sc_charge(fd, h, 300 * SC_KIB, &c));
		CHECK_EQ(NODE_U64(KEY, cgid, "max"), NXQ_UNLIMITED);
		CHECK_EQ(NODE_U64(KEY, cgid, "current"), 300 * SC_KIB);
	}
	CHECK_OK(sc_cg_enter("/"));
	CHECK_OK(sc_close(fd));
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
}

TEST_HARNESS_MAIN
