// SPDX-License-Identifier: GPL-2.0
/*
 * atk_access: charging a device means being able to use it.
 *
 *  1. The module creates /dev/nxquota with no access for others; with
 *     the udev rule's root:nxquota 0660, a tenant outside the group gets
 *     EACCES at open(), one in the group opens it.
 *  2. A "GPU" device registered with the dev_t 1:3 of a node the tenant
 *     cannot open (/tmp/atk-gpu, root 0600): devt reads "1:3"; the tenant
 *     (uid 65534, /atk-ac) gets EACCES at open() of the node, and at
 *     registration: without NXQ_HOLDER_DEVFD, with an fd of another char
 *     device (1:5), with a regular file; EBADF for an fd not open or -1;
 *     EINVAL for a non-zero devfd without the flag.  No holder is made.
 *     A host device (no dev_t, devt "none") registers without a devfd.
 *  3. Root gives the node to group 44 (0660): a tenant in that group opens
 *     it, registers with the fd and charges.
 *  4. default_max: a new device reads 0; a cgroup without a budget there
 *     gets EDQUOT for 1 byte; default_max 5M lets it charge 5M and no
 *     more; "max" up to the capacity.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-aac"
#define KEYH	"t-aac-h"
#define KEYD	"t-aac-d"
#define CG	"/atk-ac"
#define CG2	"/atk-ac2"
#define GPU	"/tmp/atk-gpu"
#define OTHER	"/tmp/atk-other"
#define REG	"/tmp/atk-reg"
#define VIDEO	44
#define M	SC_MIB

static int outsider(void *arg)
{
	(void)arg;
	CHECK_OK(sc_cg_enter(CG));
	tn_drop(0, 0);
	CHECK_ERR(sc_open(), EACCES);
	return 0;
}

static int no_gpu(void *arg)
{
	uint64_t id = 0, c = 0;
	int fd, ofd, rfd, efd;

	(void)arg;
	tn_tenant(CG);
	fd = sc_open();
	if (fd < 0)
		FAIL("tenant in the nxquota group: open: %s",
		     sc_errname(-fd));
	efd = sc_eventfd();
	if (open(GPU, O_RDONLY) >= 0 || errno != EACCES)
		FAIL("tenant opened %s (root 0600)", GPU);
	CHECK_ERR(sc_register(fd, KEY, efd, 0, &id), EACCES);
	TN_NEED_DEVFD();
	ofd = open(OTHER, O_RDONLY | O_CLOEXEC);
	rfd = open(REG, O_RDONLY | O_CLOEXEC);
	CHECK(ofd >= 0 && rfd >= 0);
	CHECK_ERR(tn_register_devfd(fd, KEY, efd, 0, ofd, &id), EACCES);
	CHECK_ERR(tn_register_devfd(fd, KEY, efd, 0, rfd, &id), EACCES);
	CHECK_ERR(tn_register_devfd(fd, KEY, efd, 0, 999, &id), EBADF);
	CHECK_ERR(tn_register_devfd(fd, KEY, efd, 0, -1, &id), EBADF);
	CHECK_ERR(tn_register_raw(fd, KEY, efd, 0, 0, ofd, &id), EINVAL);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	/* a host device has no node: no devfd needed */
	CHECK_OK(sc_register(fd, KEYH, efd, 0, &id));
	CHECK_OK(sc_charge(fd, id, M, &c));
	CHECK_EQ(DEV_U64(KEYH, "used"), M);
	return 0;
}

static int with_gpu(void *arg)
{
	uint64_t id = 0, c = 0;
	int fd, gfd, efd;

	(void)arg;
	CHECK_OK(sc_cg_enter(CG));
	tn_drop(1, VIDEO);
	fd = sc_open();
	CHECK_OK(fd);
	efd = sc_eventfd();
	gfd = open(GPU, O_RDWR | O_CLOEXEC);
	if (gfd < 0)
		FAIL("tenant in group %d: open %s: %s", VIDEO, GPU,
		     sc_errname(errno));
	CHECK_OK(tn_register_devfd(fd, KEY, efd, 0, gfd, &id));
	CHECK_OK(sc_charge(fd, id, 10 * M, &c));
	CHECK_EQ(DEV_U64(KEY, "used"), 10 * M);
	CHECK_EQ(DEV_U64(KEY, "holders"), 1);
	return 0;
}

static int defaults(void *arg)
{
	int step = (int)(uintptr_t)arg, fd, efd;
	uint64_t id = 0, c = 0;

	tn_tenant(CG2);
	fd = sc_open();
	CHECK_OK(fd);
	efd = sc_eventfd();
	CHECK_OK(sc_register(fd, KEYD, efd, 0, &id));
	switch (step) {
	case 0:
		CHECK_ERR(sc_charge(fd, id, 1, &c), EDQUOT);
		break;
	case 1:
		CHECK_OK(sc_charge(fd, id, 5 * M, &c));
		CHECK_ERR(sc_charge(fd, id, 1, &c), EDQUOT);
		break;
	default:
		CHECK_OK(sc_charge(fd, id, 100 * M, &c));
		CHECK_ERR(sc_charge(fd, id, 1, &c), ENOSPC);
	}
	CHECK_EQ(DEV_U64(KEYD, "denials"), step == 0 ? 1 : step == 1 ? 2 : 3);
	return 0;
}

/* Who may charge a device: the module and nxquotad alike. */
FIXTURE(access) {};

FIXTURE_VARIANT(access) {};

FIXTURE_VARIANT_ADD(access, module) {};

FIXTURE_VARIANT_ADD(access, daemon) {};

FIXTURE_SETUP(access)
{
	struct stat st;

	/* 1. the device node, before tn_devnode_admin() gives it a mode */
	if (stat(SC_DEVNODE, &st) < 0)
		FAIL("stat %s: %s", SC_DEVNODE, sc_errname(errno));
	if (st.st_mode & 0007)
		FAIL("%s is mode %04o: others may open it (the module must "
		     "create it without access for others)", SC_DEVNODE,
		     st.st_mode & 07777);
	tn_devnode_admin();
	CHECK_OK(sc_cg_create(CG));
	CHECK_OK(sc_cg_create(CG2));
	/* 2.'s nodes and devices, 4.'s device */
	unlink(GPU);
	unlink(OTHER);
	CHECK(mknod(GPU, S_IFCHR | 0600, makedev(1, 3)) == 0);
	CHECK(mknod(OTHER, S_IFCHR | 0666, makedev(1, 5)) == 0);
	CHECK(chmod(OTHER, 0666) == 0);
	{
		int rf = open(REG, O_WRONLY | O_CREAT | O_TRUNC, 0666);

		CHECK(rf >= 0);
		close(rf);
	}
	CHECK(chmod(REG, 0666) == 0);
	CHECK_OK(tn_dev_register(KEY, "100M", "1:3"));
	CHECK_OK(sc_dev_register(KEYH, "100M"));
	CHECK_OK(sc_dev_register(KEYD, "100M"));
}

FIXTURE_TEARDOWN(access)
{
	unlink(GPU);
	unlink(OTHER);
	unlink(REG);
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_dev_unregister(KEYH));
	CHECK_OK(sc_dev_unregister(KEYD));
	CHECK_OK(sc_cg_remove(CG));
	CHECK_OK(sc_cg_remove(CG2));
}

TEST_F(access, charging_needs_the_device)
{
	char buf[64];

	/* 1. the device node: a tenant outside the group */
	TN_RUN(outsider, NULL);

	/* 2. a device with a node the tenant cannot open */
	if (sc_read(sc_dev_path(KEY, "devt"), buf, sizeof(buf)) < 0)
		FAIL("read %s: %s", sc_dev_path(KEY, "devt"),
		     sc_errname(errno));
	CHECK_STREQ(buf, "1:3");
	CHECK(sc_read(sc_dev_path(KEYH, "devt"), buf, sizeof(buf)) >= 0);
	CHECK_STREQ(buf, "none");
	CHECK_OK(sc_set_budget(KEY, CG " max=50M"));
	CHECK_OK(sc_set_budget(KEYH, CG " max=50M"));
	TN_RUN(no_gpu, NULL);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_EQ(DEV_U64(KEYH, "used"), 0);

	/* 3. the node given to a group the tenant is in */
	CHECK(chown(GPU, 0, VIDEO) == 0 && chmod(GPU, 0660) == 0);
	TN_RUN(with_gpu, NULL);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);

	/* 4. default_max */
	CHECK(sc_read(sc_dev_path(KEYD, "default_max"), buf, sizeof(buf)) >= 0);
	CHECK_STREQ(buf, "0");
	TN_RUN(defaults, (void *)0);
	CHECK_OK(sc_write(sc_dev_path(KEYD, "default_max"), "5M"));
	TN_RUN(defaults, (void *)1);
	CHECK_OK(sc_write(sc_dev_path(KEYD, "default_max"), "max"));
	TN_RUN(defaults, (void *)2);
	CHECK_EQ(DEV_U64(KEYD, "used"), 0);
}

TEST_HARNESS_MAIN
